"""A run's break rows, written BREAK_ROWS at a time by one multi-row statement each.

`bulk_create` prepared every value of every break through the ORM's compiler (1.4 s of CPU
for the 9,586 breaks of the million-order bench, a sixth of the run): here each column is
prepared by its own field once per value only where the database needs it (the JSON refs,
the carried resolution time), the rest are plain ints and strings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection

from reconciliation.engine import BreakItem
from reconciliation.models import Break

BREAK_ROWS = 2000  # rows per INSERT: bounded memory, few statements
_FIELDS = [f for f in Break._meta.concrete_fields if not f.primary_key]


def breaks_insert(*, tenant_id: int, run_id: int, breaks: list[BreakItem],
                  carried: Callable[[BreakItem], dict[str, Any]]) -> None:
    """Insert the run's breaks in list order (`position`), each with the assignment and
    resolution `carried` returns for it (or the field defaults)."""
    table = connection.ops.quote_name(Break._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in _FIELDS)
    one = "(" + ", ".join(["%s"] * len(_FIELDS)) + ")"
    defaults = {f.attname: f.get_default() for f in _FIELDS}
    with connection.cursor() as cursor:
        for start in range(0, len(breaks), BREAK_ROWS):
            part = breaks[start:start + BREAK_ROWS]
            params: list[Any] = []
            for position, b in enumerate(part, start):
                values = {**defaults, "tenant_id": tenant_id, "run_id": run_id, "position": position,
                          "kind": b.kind, "amount_minor": b.amount_minor, "currency": b.currency, "refs": b.refs,
                          "explanation": b.explanation, "contract_version_id": b.contract_version_id,
                          **carried(b)}
                params.extend(_prepared(f, values[f.attname]) for f in _FIELDS)
            cursor.execute(f"INSERT INTO {table} ({columns}) VALUES " + ", ".join([one] * len(part)), params)


def _prepared(field: Any, value: Any) -> Any:
    if value is None or isinstance(value, int | str) and field.get_internal_type() != "JSONField":
        return value
    return field.get_db_prep_save(value, connection)
