"""Reading and changing rows named by long lists of keys, in plain SQL, a chunk of keys per statement.

GDPR and retention work on a long-standing customer's tens of thousands of keys. The ORM's
`filter(pk__in=chunk)` prepares every one of a chunk's 2,000 values through the lookup
machinery (milliseconds a query, a fifth of an export's time), and `values()` converts every
column it reads; here a statement is plain SQL text with its keys as parameters, and only the
columns that need it are converted, with the backend's own converters (so a row reads exactly
as `values()` would give it). On PostgreSQL the keys of a chunk go as one array parameter
(`= ANY(%s)`) and updates as one statement per chunk (`UPDATE ... FROM unnest(arrays)`: a
round trip and a plan per row cost more than the row); on SQLite reads use `IN (%s, ...)` and
updates one prepared statement run per row (in process, so that costs nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from django.db import connection, models

from paypilot.keyed import column_field

# Keys per statement: well under SQLite's 32,766 parameters and PostgreSQL's 65,535.
KEY_CHUNK = 2000

Converter = Callable[[Any], Any]


def chunked(items: Iterable[Any], size: int = KEY_CHUNK) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _column(model: type[models.Model], name: str) -> str:
    """A field's column, by field or attribute name ("pk" for the primary key)."""
    if name == "pk":
        return model._meta.pk.column
    return column_field(model, name).column


def _converter(field: models.Field) -> Converter | None:
    """The backend's and the field's converters for one column, as `values()` applies them."""
    expression = field.get_col(field.model._meta.db_table)
    steps = [*connection.ops.get_db_converters(expression), *expression.get_db_converters(connection)]
    if not steps:
        return None

    def convert(value: Any) -> Any:
        for step in steps:
            value = step(value, expression, connection)
        return value

    return convert


def keys_where(
    model: type[models.Model], column: str, keys: Iterable[Any], *, where: str = "", params: Sequence[Any] = (),
    select: Sequence[str] | None = None, ordered: bool = False,
) -> Iterator[tuple[Any, ...]]:
    """Raw tuples of `select` (default: the primary key) for the rows whose field `column`
    holds one of `keys`, a chunk of keys per statement; `where` adds a condition with `params`;
    `ordered` sorts each chunk's rows by `column`."""
    names = list(select) if select is not None else [model._meta.pk.attname]
    columns = ", ".join(_q(_column(model, n)) for n in names)
    key_column = _q(_column(model, column))
    head = f"SELECT {columns} FROM {_q(model._meta.db_table)} WHERE {key_column} "
    tail = (f" AND ({where})" if where else "") + (f" ORDER BY {key_column}" if ordered else "")
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        for chunk in chunked(keys):
            if postgres:  # one array parameter: a short statement psycopg parses once
                cursor.execute(f"{head}= ANY(%s){tail}", [chunk, *params])
            else:
                cursor.execute(f"{head}IN ({', '.join(['%s'] * len(chunk))}){tail}", [*chunk, *params])
            yield from cursor.fetchall()


def tenant_where(model: type[models.Model]) -> str:
    return f"{_q(_column(model, 'tenant'))} = %s"


def rows_by_pk(
    model: type[models.Model], keys: Iterable[Any], names: Sequence[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Rows as `values("pk", *names)` would give them (every concrete column by attribute name
    when `names` is None), ordered by key, a chunk of keys per statement."""
    pk = model._meta.pk
    fields: list[models.Field] = (
        list(model._meta.concrete_fields) if names is None else [pk, *(column_field(model, n) for n in names)]
    )
    attnames = ["pk" if f is pk and names is not None else f.attname for f in fields]
    converters = [(i, c) for i, f in enumerate(fields) if (c := _converter(f)) is not None]
    select = [f.attname for f in fields]
    for chunk in chunked(sorted(keys)):
        for row in keys_where(model, pk.attname, chunk, select=select, ordered=True):
            values = list(row)
            for i, convert in converters:
                values[i] = convert(values[i])
            yield dict(zip(attnames, values, strict=True))


def _cast(field: models.Field) -> str:
    if isinstance(field, (models.CharField, models.TextField)):
        return "text"
    return str(field.db_type(connection))


def update_by_pk(
    model: type[models.Model], fields: Sequence[models.Field], rows: Sequence[tuple[Any, Sequence[Any]]]
) -> None:
    """Set `fields` to new Python values on rows (pk, values), the same columns for each row."""
    quote, table, pk = _q, _q(model._meta.db_table), model._meta.pk
    # Text goes as it is; JSON and bytes need the backend's adaptation.
    adapt = [not isinstance(f, (models.CharField, models.TextField)) for f in fields]
    prepared = [
        [*(f.get_db_prep_save(v, connection) if a else v for f, a, v in zip(fields, adapt, values, strict=True)), key]
        for key, values in rows
    ]
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            assignments = ", ".join(f"{quote(f.column)} = %s" for f in fields)
            cursor.executemany(f"UPDATE {table} SET {assignments} WHERE {quote(pk.column)} = %s", prepared)
            return
        # One array a column, unnested into rows: a short statement psycopg parses once (its
        # Python placeholder scan of a 2,000-placeholder VALUES list cost more than the
        # update). Arrays of text, not varchar(n): the assignment then refuses an over-long
        # value instead of a cast cutting it short.
        names = [f"c{i}" for i in range(len(fields))]
        assignments = ", ".join(f"{quote(f.column)} = v.{n}" for f, n in zip(fields, names, strict=True))
        arrays = ", ".join(f"%s::{_cast(f)}[]" for f in [*fields, pk])
        sql = (
            f"UPDATE {table} AS t SET {assignments} FROM unnest({arrays}) AS v({', '.join(names)}, k) "
            f"WHERE t.{quote(pk.column)} = v.k"
        )
        for chunk in chunked(prepared, KEY_CHUNK):
            cursor.execute(sql, [list(column) for column in zip(*chunk, strict=True)])
