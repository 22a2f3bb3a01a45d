"""Reads of the dunning app: the customer facts the pipeline needs, on the hot path."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection

from ledger.models import Customer

_COLUMNS = ("external_id", "name", "email", "plan", "mrr_minor", "currency", "locale", "payment_history")


@dataclass(frozen=True)
class CustomerRow:
    """The slice of `ledger.Customer` a recovery reads (same attribute names)."""

    external_id: str
    name: str
    email: str
    plan: str
    mrr_minor: int | None
    currency: str
    locale: str
    payment_history: list[Any]


def _row(values: tuple[Any, ...]) -> CustomerRow:
    history = values[7]
    if isinstance(history, str | bytes):  # SQLite returns the JSON text, psycopg the value
        history = json.loads(history or "[]")
    external_id, name, email, plan, mrr_minor, currency, locale = values[:7]
    return CustomerRow(external_id=external_id, name=name or "", email=email or "", plan=plan or "",
                       mrr_minor=mrr_minor, currency=currency or "", locale=locale or "",
                       payment_history=history if isinstance(history, list) else [])


def _select(where: str) -> str:
    table = Customer._meta.db_table
    return f"SELECT {', '.join(_COLUMNS)} FROM {table} WHERE tenant_id = %s AND {where}"


def customer_row_get(*, tenant_id: int, external_id: str) -> CustomerRow | None:
    """One customer by the tenant's own id, or None.

    Plain SQL on purpose: this runs once per recovery, and building the equivalent ORM
    query cost more than the rest of the pipeline together (see bench/pipeline.py).
    """
    with connection.cursor() as cursor:
        cursor.execute(_select("external_id = %s"), [tenant_id, external_id])
        found = cursor.fetchone()
    return _row(found) if found else None


def customer_rows_by_id(*, tenant_id: int, external_ids: Iterable[str]) -> dict[str, CustomerRow]:
    """Customers by external id for a batch, in one query."""
    ids = sorted(set(external_ids))
    if not ids:
        return {}
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(_select(f"external_id IN ({marks})"), [tenant_id, *ids])
        return {row.external_id: row for row in map(_row, cursor.fetchall())}


def customer_rows_all(*, tenant_id: int) -> list[CustomerRow]:
    """Every customer of the tenant, ordered by external id (portfolio impact)."""
    with connection.cursor() as cursor:
        cursor.execute(_select("1 = 1") + " ORDER BY external_id", [tenant_id])
        return [_row(r) for r in cursor.fetchall()]
