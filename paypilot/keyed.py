"""Rows of many keys, locked, with a plan that does not depend on the table's statistics.

`rows_locked_by_keys(model, key_fields, keys, filters)` returns the rows whose key columns
equal one of `keys` (and whose other columns equal `filters`), locked FOR UPDATE in the order
of the sorted keys (one lock order for every caller) and returned in primary-key order.

Why not `filter(key__in=[...])`: on PostgreSQL `key = ANY(array) AND status = 'pending'`
is planned from the table's statistics. A table autovacuum has not analysed yet (a new
install's first backlog, a tenant's first surge: autovacuum looks once a minute) has none,
every equality then counts as 0.5% of the rows, and the planner picked the index on the
low-cardinality column: every pending approval request, or every invoice of the tenant,
read and filtered once per webhook batch. That cost 3-5 ms a batch at 10,000 rows and grew
with the table (docs/benchmarks.md, "Plans that do not need statistics"). Here each key
is one probe of an index whose every column is bound, through a LATERAL subquery that the
planner cannot flatten (it holds the FOR UPDATE): an index matched on all its columns wins
with or without statistics. So `key_fields` plus `filters` must be the leading columns of
an index of the model (a unique constraint or a composite index); the tests check the
plan for each caller.

On other databases (SQLite, which has no row locks and plans these with its own rules)
the ORM asks the same question: one `IN` per key column, then the exact key tuples kept
(an OR per key would nest one level per key, past SQLite's expression depth at 1,000).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from django.db import connection, models

M = TypeVar("M", bound=models.Model)


def rows_locked_by_keys(
    model: type[M], *, key_fields: Sequence[str], keys: Iterable[Sequence[Any]],
    filters: Mapping[str, Any] | None = None,
) -> list[M]:
    """The rows of `model` matching any of `keys` on `key_fields` (field names; a foreign
    key by its attname, e.g. "invoice_id") and every `filters` column, locked, by pk."""
    wanted = sorted({tuple(key) for key in keys})  # one lock order for every caller
    if not wanted:
        return []
    if any(len(key) != len(key_fields) for key in wanted):
        raise ValueError(f"each key has {len(key_fields)} value(s): {', '.join(key_fields)}")
    filters = dict(filters or {})
    if connection.vendor != "postgresql":
        columns_in = {f"{name}__in": sorted({key[i] for key in wanted}) for i, name in enumerate(key_fields)}
        candidates = model._default_manager.select_for_update().filter(**columns_in, **filters).order_by("pk")
        exact = set(wanted)
        return [row for row in candidates if tuple(getattr(row, name) for name in key_fields) in exact]
    meta = model._meta
    quote = connection.ops.quote_name
    fields = {name: column_field(model, name) for name in (*key_fields, *filters)}
    arrays = ", ".join(f"%s::{_array_type(fields[name])}" for name in key_fields)
    names = ", ".join(f"k{i}" for i in range(len(key_fields)))
    bound = [f"t.{quote(fields[name].column)} = k.k{i}" for i, name in enumerate(key_fields)]
    bound += [f"t.{quote(fields[name].column)} = %s" for name in filters]
    sql = (f"SELECT r.* FROM unnest({arrays}) AS k({names}) CROSS JOIN LATERAL ("
           f"SELECT t.* FROM {quote(meta.db_table)} t WHERE {' AND '.join(bound)} FOR UPDATE) r "
           f"ORDER BY r.{quote(meta.pk.column)}")
    columns = [list(column) for column in zip(*wanted, strict=True)]
    params: list[Any] = [*columns, *(fields[name].get_db_prep_value(value, connection)
                                     for name, value in filters.items())]
    return list(model._default_manager.raw(sql, params))


def column_field(model: type[models.Model], name: str) -> models.Field:
    """The concrete field behind `name` (a column of the model's own table)."""
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field) or not field.concrete or field.column is None:
        raise ValueError(f"{model.__name__}.{name} is not a column")
    return field


def _array_type(field: models.Field) -> str:
    """The array type a key column's values are sent as (a foreign key's is its target's)."""
    return f"{field.db_type(connection)}[]"
