"""Many new rows of one model in one INSERT, cheaper than `bulk_create` on PostgreSQL.

Every webhook delivery the worker applies writes about nine rows (customer, invoice, its
transition, decision, draft, approval request and their audit events). Django's
`bulk_create` on PostgreSQL spends most of its time in Python: compiling every value
through the field's preparation chain and quoting one array per column (psycopg's array
dumper is Python code). Here the rows travel as ONE JSON document, serialised by the C
encoder (an array per row, the columns checked a column at a time), and the server reads it
back with one cast per column to the column's type:

    INSERT INTO t (c1, ..., cn)
    SELECT (d.r->>0)::bigint, (d.r->>1), ..., NULLIF(d.r->n, 'null'::jsonb)
    FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS d(r, n) ORDER BY d.n RETURNING id

The rows are inserted in list order and their ids come back in that order, the same
property Django's own `UNNEST` form relies on. Row-level security applies as to any INSERT.

Only plain field types take this path (text, integers, booleans, floats, dates and
times, UUIDs, JSON, integer foreign keys); a model with any other field (a file, a
custom type), a naive datetime, a non-finite float or any other backend goes through
`bulk_create` unchanged, so the result never depends on which path ran.

`values_insert(model, dicts)` takes rows that are only written (audit events, transitions,
decisions, drafts, approval requests) as plain dicts instead of model instances: building
an instance costs more than writing its row (issue 32: about ten a delivery, only to be
serialised again). Same document on PostgreSQL; elsewhere, or for a value the document does
not carry, a multi-row VALUES with each value prepared by its field, as Django prepares it.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from operator import attrgetter
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connections, models, router
from django.db.models.expressions import DatabaseDefault
from django.utils import timezone

Converter = Callable[[Any], Any]


class _Unsupported(Exception):
    """A value this path does not convert exactly: the caller falls back to bulk_create."""


def _text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return str(value)  # what Django's to_python would make of an int or a lazy string


def _datetime(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, dt.datetime) and value.utcoffset() is not None:
        return value.isoformat()
    raise _Unsupported  # naive (Django warns and localises it): leave that to Django


def _date(value: Any) -> Any:
    if value is None:
        return None
    if type(value) is dt.date:
        return value.isoformat()
    raise _Unsupported  # a datetime given to a DateField: Django truncates it


def _time(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, dt.time) and value.tzinfo is None:
        return value.isoformat()
    raise _Unsupported


def _uuid(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        return str(value)
    raise _Unsupported


# Field class (exactly: a subclass may prepare its values differently) -> (the SQL that reads
# element i of a row array `d.r` back into the column's type, how the column's values are
# checked or converted). Decimals are left to Django, whose rounding to the column's places
# (half even) differs from the server's (half away from zero). Text is read as `text`, never
# as `varchar(n)`, whose explicit cast would truncate where the INSERT refuses an overlong value.
_TEXT = ("(d.r->>{i})", "text")
_INT = ("(d.r->>{i})::bigint", "int")  # the INSERT's assignment cast checks the column's range
_COLUMN_KINDS: dict[type[models.Field], tuple[str, str]] = {
    models.CharField: _TEXT, models.TextField: _TEXT, models.EmailField: _TEXT, models.SlugField: _TEXT,
    models.URLField: _TEXT, models.GenericIPAddressField: _TEXT,
    models.IntegerField: _INT, models.BigIntegerField: _INT, models.SmallIntegerField: _INT,
    models.PositiveIntegerField: _INT, models.PositiveBigIntegerField: _INT, models.PositiveSmallIntegerField: _INT,
    models.BooleanField: ("(d.r->>{i})::boolean", "bool"),
    models.FloatField: ("(d.r->>{i})::double precision", "float"),
    models.DateTimeField: ("(d.r->>{i})::timestamptz", "datetime"),
    models.DateField: ("(d.r->>{i})::date", "date"),
    models.TimeField: ("(d.r->>{i})::time", "time"),
    models.UUIDField: ("(d.r->>{i})::uuid", "uuid"),
    # Embedded as JSON; Python None is SQL NULL, as Django stores it.
    models.JSONField: ("NULLIF(d.r->{i}, 'null'::jsonb)", "json"),
}
_KEY_TARGETS = (models.AutoField, models.BigAutoField, models.SmallAutoField, models.IntegerField,
                models.BigIntegerField)
_DATES = (models.DateTimeField, models.DateField)  # pre_save: auto_now / auto_now_add
# Types a column's values may already have, by kind (None always); anything else in a
# column goes through that kind's converter below, or makes the insert fall back.
_NONE = type(None)
_PLAIN: dict[str, frozenset[type]] = {
    "text": frozenset({str, _NONE}), "int": frozenset({int, _NONE}), "bool": frozenset({bool, _NONE}),
    "float": frozenset({float, int, _NONE}),  # non-finite floats: json.dumps(allow_nan=False) refuses
    "json": frozenset(),  # any value plain JSON carries; json.dumps (no encoder) refuses the rest
}
_CONVERT: dict[str, Converter] = {"text": _text, "datetime": _datetime, "date": _date, "time": _time,
                                  "uuid": _uuid}


@dataclass(frozen=True)
class _Column:
    attname: str
    kind: str
    pre_save: models.Field | None  # the field, when pre_save fills the value (auto_now...)


@cache
def _plan(model: type[models.Model]) -> tuple[str, list[_Column]] | None:
    """(INSERT statement, its columns in order) for `model`, or None if a field needs
    Django's own preparation."""
    opts = model._meta
    pk = opts.pk
    if type(pk) not in (models.AutoField, models.BigAutoField, models.SmallAutoField):
        return None
    columns: list[_Column] = []
    names: list[str] = []
    reads: list[str] = []
    quote = connections["default"].ops.quote_name
    for field in opts.concrete_fields:
        if field is pk:
            continue
        if type(field) in (models.ForeignKey, models.OneToOneField):
            if type(field.target_field) not in _KEY_TARGETS:  # type: ignore[attr-defined]
                return None
            spec: tuple[str, str] | None = _INT
        else:
            spec = _COLUMN_KINDS.get(type(field))
        if spec is None or (type(field) is models.JSONField and field.encoder not in (None, DjangoJSONEncoder)):
            return None
        dated = type(field) in _DATES and (field.auto_now or field.auto_now_add)  # type: ignore[attr-defined]
        columns.append(_Column(field.attname, spec[1], field if dated else None))
        names.append(quote(field.column))
        reads.append(spec[0].format(i=len(reads)))
    table = quote(opts.db_table)
    sql = (f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(reads)} "
           f"FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS d(r, n) ORDER BY d.n "
           f"RETURNING {quote(pk.column)}")
    return sql, columns


def _column_values(column: _Column, values: Sequence[Any]) -> Sequence[Any]:
    """The column's values as the document carries them; raises _Unsupported."""
    plain = _PLAIN.get(column.kind)
    if plain is not None and (not plain or set(map(type, values)) <= plain):
        return values
    convert = _CONVERT.get(column.kind)
    if convert is None:
        raise _Unsupported
    if column.kind == "text":
        return [convert(value) for value in values]
    # Dates and times repeat within a batch (one "now" per call): each is formatted once.
    formatted = {value: convert(value) for value in set(values)}
    return [formatted[value] for value in values]


def rows_insert_json(rows: Sequence[models.Model]) -> bool:
    """Insert `rows` (new, one model, PostgreSQL) through one JSON document and set their
    ids; returns False, having written nothing, when this path does not apply."""
    model = type(rows[0])
    alias = router.db_for_write(model)
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return False
    plan = _plan(model)
    if plan is None:
        return False
    sql, columns = plan
    pk_attname = model._meta.pk.attname
    if any(type(row) is not model or getattr(row, pk_attname) is not None for row in rows):
        return False
    for column in columns:  # auto_now / auto_now_add set the instance's value, as save() does
        if column.pre_save is not None:
            for row in rows:
                column.pre_save.pre_save(row, True)
    read = attrgetter(*(column.attname for column in columns))
    by_row = [read(row) for row in rows] if len(columns) > 1 else [(read(row),) for row in rows]
    ids = _json_insert(connection, model, plan, by_row)
    if ids is None:
        return False
    for row, pk in zip(rows, ids, strict=True):
        setattr(row, pk_attname, pk)
        row._state.adding = False
        row._state.db = alias
    return True


def _json_insert(connection: Any, model: type[models.Model], plan: tuple[str, list[_Column]],
                 by_row: Sequence[Sequence[Any]]) -> list[int] | None:
    """Run the plan's INSERT over `by_row` (one tuple per row, the plan's column order) and
    return the new ids in order; None, having written nothing, for a value this path does
    not convert exactly."""
    sql, columns = plan
    try:
        by_column = [_column_values(column, values)
                     for column, values in zip(columns, zip(*by_row, strict=True), strict=True)]
        # No encoder: a value plain JSON cannot carry (a date inside a JSONField whose encoder
        # would format it) raises TypeError, and Django's own path formats it.
        payload = json.dumps(list(zip(*by_column, strict=True)), allow_nan=False, separators=(",", ":"))
    except (_Unsupported, TypeError, ValueError):
        return None
    with connection.cursor() as cursor:
        cursor.execute(sql, [payload])
        ids = cursor.fetchall()
    if len(ids) != len(by_row):  # cannot happen short of a trigger that drops rows
        raise RuntimeError(f"{model.__name__}: {len(by_row)} rows inserted, {len(ids)} ids returned")
    return [pk for (pk,) in ids]


# --- rows given as plain dicts ----------------------------------------------------------------

@cache
def _dict_fields(model: type[models.Model]) -> tuple[tuple[models.Field, ...], frozenset[str]]:
    """The model's concrete columns but the primary key, in the order `_plan` uses, and
    their attnames."""
    fields = tuple(field for field in model._meta.concrete_fields if field is not model._meta.pk)
    return fields, frozenset(field.attname for field in fields)


def values_insert(model: type[models.Model], rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """Insert new rows of `model`, each given as a plain dict {attname: value}, and return
    their ids in order, without building a model instance per row (for rows that are only
    written: audit events, transitions, decisions, drafts, approval requests).

    A key left out takes the field's default; an `auto_now` / `auto_now_add` column takes
    one `timezone.now()` for the whole call, whatever the dict says, as `save()` would set
    it. PostgreSQL: one statement through the JSON document above when every value is
    plain; otherwise (and on SQLite) a multi-row `INSERT ... VALUES ... RETURNING` per batch
    of bound parameters, each value prepared by its field's `get_db_prep_save`, the
    preparation Django's own insert applies. Runs in the caller's transaction. Raises
    ValueError for a key that is not a column of the model (a typo would otherwise store
    the default silently)."""
    if not rows:
        return []
    fields, attnames = _dict_fields(model)
    unknown = set().union(*rows) - attnames
    if unknown:
        raise ValueError(f"{model.__name__}: no such column(s): {', '.join(sorted(unknown))}")
    now: dt.datetime | None = None
    by_column: list[list[Any]] = []
    for field in fields:
        if type(field) in _DATES and (field.auto_now or field.auto_now_add):  # type: ignore[attr-defined]
            now = now or timezone.now()
            by_column.append([now] * len(rows))
            continue
        attname = field.attname
        if all(attname in row for row in rows):
            by_column.append([row[attname] for row in rows])
        else:
            by_column.append([row[attname] if attname in row else _default(field) for row in rows])
    by_row = list(zip(*by_column, strict=True))
    alias = router.db_for_write(model)
    connection = connections[alias]
    if connection.vendor == "postgresql":
        plan = _plan(model)
        if plan is not None:
            ids = _json_insert(connection, model, plan, by_row)
            if ids is not None:
                return ids
    return _values_insert_prepared(connection, model, fields, by_row)


def _default(field: models.Field) -> Any:
    value = field.get_default()
    if isinstance(value, DatabaseDefault):
        raise ValueError(f"{field.model.__name__}.{field.attname}: give a value (only a database default)")
    return value


def _values_insert_prepared(connection: Any, model: type[models.Model], fields: Sequence[models.Field],
                            by_row: Sequence[Sequence[Any]]) -> list[int]:
    quote = connection.ops.quote_name
    opts = model._meta
    names = ", ".join(quote(field.column) for field in fields)
    one_row = f"({', '.join(['%s'] * len(fields))})"
    limit = connection.features.max_query_params or 65_535  # psycopg's limit per statement
    per_batch = max(1, limit // max(1, len(fields)))
    ids: list[int] = []
    with connection.cursor() as cursor:
        for start in range(0, len(by_row), per_batch):
            batch = by_row[start:start + per_batch]
            params = [field.get_db_prep_save(value, connection)
                      for row in batch for field, value in zip(fields, row, strict=True)]
            cursor.execute(f"INSERT INTO {quote(opts.db_table)} ({names}) VALUES "
                           f"{', '.join([one_row] * len(batch))} RETURNING {quote(opts.pk.column)}", params)
            # Ids of one INSERT ascend in row order (AUTOINCREMENT, a sequence), but SQLite
            # does not promise RETURNING's own order: sorted, they pair with the rows.
            got = sorted(pk for (pk,) in cursor.fetchall())
            if len(got) != len(batch):
                raise RuntimeError(f"{model.__name__}: {len(batch)} rows inserted, {len(got)} ids returned")
            ids.extend(got)
    return ids
