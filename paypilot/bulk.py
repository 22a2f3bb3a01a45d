"""Many new rows of one model in one INSERT, cheaper than `bulk_create` on PostgreSQL.

Every webhook delivery the worker applies writes about nine rows (customer, invoice, its
transition, decision, draft, approval request and their audit events). Django's
`bulk_create` on PostgreSQL spends most of its time in Python: compiling every value
through the field's preparation chain and quoting one array per column (psycopg's array
dumper is Python code). Here the rows travel as ONE JSON document, serialised by the C
encoder, and the server turns it back into rows with `json_populate_recordset` against the
table's own row type, so each value is cast exactly as the column declares it:

    INSERT INTO t (c1, ..., cn)
    SELECT c1, ..., cn FROM json_populate_recordset(NULL::t, %s) WITH ORDINALITY AS r
    ORDER BY ordinality RETURNING id

The rows are inserted in list order and their ids come back in that order, the same
property Django's own `UNNEST` form relies on. Row-level security applies as to any INSERT.

Only plain field types take this path (text, integers, booleans, floats, dates and
times, UUIDs, JSON, integer foreign keys); a model with any other field (a file, a
custom type), a naive datetime, a non-finite float or any other backend goes through
`bulk_create` unchanged, so the result never depends on which path ran.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connections, models, router

Converter = Callable[[Any], Any]


class _Unsupported(Exception):
    """A value this path does not convert exactly: the caller falls back to bulk_create."""


def _as_is(value: Any) -> Any:
    return value


def _text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return str(value)  # what Django's to_python would make of an int or a lazy string


def _integer(value: Any) -> Any:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise _Unsupported


def _boolean(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    raise _Unsupported


def _float(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value
    raise _Unsupported


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


# Field class (exactly: a subclass may prepare its values differently) -> converter to the
# JSON value PostgreSQL casts back into the column type. Decimals are left to Django, whose
# rounding to the column's places (half even) differs from the server's (half away from 0).
_CONVERTERS: dict[type[models.Field], Converter] = {
    models.CharField: _text, models.TextField: _text, models.EmailField: _text, models.SlugField: _text,
    models.URLField: _text, models.GenericIPAddressField: _text,
    models.IntegerField: _integer, models.BigIntegerField: _integer, models.SmallIntegerField: _integer,
    models.PositiveIntegerField: _integer, models.PositiveBigIntegerField: _integer,
    models.PositiveSmallIntegerField: _integer,
    models.BooleanField: _boolean, models.FloatField: _float,
    models.DateTimeField: _datetime, models.DateField: _date, models.TimeField: _time, models.UUIDField: _uuid,
    models.JSONField: _as_is,  # embedded as JSON; the column's jsonb cast reads it back
}
_KEY_TARGETS = (models.AutoField, models.BigAutoField, models.SmallAutoField, models.IntegerField,
                models.BigIntegerField)
_DATES = (models.DateTimeField, models.DateField)  # pre_save: auto_now / auto_now_add


@cache
def _plan(model: type[models.Model]) -> tuple[str, list[tuple[str, str, Converter, models.Field | None]]] | None:
    """(INSERT statement, [(column, attname, converter, field if it needs pre_save)]) for
    `model`, or None if a field needs Django's own preparation."""
    opts = model._meta
    pk = opts.pk
    if type(pk) not in (models.AutoField, models.BigAutoField, models.SmallAutoField):
        return None
    columns: list[tuple[str, str, Converter, models.Field | None]] = []
    for field in opts.concrete_fields:
        if field is pk:
            continue
        if type(field) in (models.ForeignKey, models.OneToOneField):
            if type(field.target_field) not in _KEY_TARGETS:  # type: ignore[attr-defined]
                return None
            converter: Converter | None = _integer
        else:
            converter = _CONVERTERS.get(type(field))
        if converter is None or (type(field) is models.JSONField and field.encoder not in (None, DjangoJSONEncoder)):
            return None
        dated = type(field) in _DATES and (field.auto_now or field.auto_now_add)  # type: ignore[attr-defined]
        pre_save = field if dated else None
        columns.append((field.column, field.attname, converter, pre_save))
    quote = connections["default"].ops.quote_name
    names = ", ".join(quote(column) for column, *_ in columns)
    table = quote(opts.db_table)
    # json_populate_recordset matches the document's keys to the row type's column names.
    sql = (f"INSERT INTO {table} ({names}) SELECT {names} FROM json_populate_recordset(NULL::{table}, %s) "
           f"WITH ORDINALITY AS r ORDER BY r.ordinality RETURNING {quote(pk.column)}")
    return sql, columns


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
    try:
        document = []
        for row in rows:
            if type(row) is not model or row.pk is not None:
                return False
            values = {}
            for column, attname, converter, pre_save in columns:
                value = pre_save.pre_save(row, True) if pre_save is not None else getattr(row, attname)
                values[column] = converter(value)
            document.append(values)
        # No encoder: a value plain JSON cannot carry (a date inside a JSONField whose encoder
        # would format it) raises TypeError, and Django's own path formats it.
        payload = json.dumps(document, allow_nan=False, separators=(",", ":"))
    except (_Unsupported, TypeError, ValueError):
        return False
    with connection.cursor() as cursor:
        cursor.execute(sql, [payload])
        ids = cursor.fetchall()
    if len(ids) != len(rows):  # cannot happen short of a trigger that drops rows
        raise RuntimeError(f"{model.__name__}: {len(rows)} rows inserted, {len(ids)} ids returned")
    pk_attname = model._meta.pk.attname
    for row, (pk,) in zip(rows, ids, strict=True):
        setattr(row, pk_attname, pk)
        row._state.adding = False
        row._state.db = alias
    return True
