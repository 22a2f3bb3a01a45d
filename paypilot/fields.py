"""Model fields shared by the apps.

`IdentifierCharField` / `IdentifierTextField`: text that is an opaque identifier (an order
id, a provider's transaction or payout id, a bank reference), compared and ordered byte by
byte. On PostgreSQL the column gets COLLATE "C". A linguistic collation (the database's
default, e.g. en_US.UTF-8 or C.UTF-8) has no meaning for "ch_3Nf..." and costs on every
comparison: a B-tree insert compares through strcoll and without abbreviated keys (on the
reconciliation bench's two million-row imports the server's CPU fell from 11.7 to 10.4 s
in one pair of runs; docs/benchmarks.md, "Reconciliation, 3 December 2026"). Byte order
is also SQLite's order (BINARY), so a sort on these columns, and any output that follows
it, is the same on both databases whatever locale the PostgreSQL server was initialised
with. Equality and comparisons with
columns of the default collation still work: PostgreSQL lets the explicit column collation
win over the database default.
"""

from __future__ import annotations

from typing import Any

from django.db import models

BYTE_ORDER_COLLATION = "C"  # PostgreSQL's built-in byte-order collation


class _ByteOrdered:
    def db_parameters(self, connection: Any) -> dict[str, Any]:
        params: dict[str, Any] = super().db_parameters(connection)  # type: ignore[misc]
        if connection.vendor == "postgresql":
            params["collation"] = BYTE_ORDER_COLLATION
        return params


class IdentifierCharField(_ByteOrdered, models.CharField):
    """A CharField holding an opaque identifier (byte order; COLLATE "C" on PostgreSQL)."""


class IdentifierTextField(_ByteOrdered, models.TextField):
    """A TextField of identifiers and free text searched for them (byte order)."""
