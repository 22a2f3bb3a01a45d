"""The SQL toolkit of a run: statements on the connection, temporary tables and latest-row selection."""

from __future__ import annotations

from typing import Any

from django.db import connection

TEMP_TABLES = ("rt_orders", "rt_prov", "rt_cap", "rt_payout", "rt_bank", "rt_token", "rt_pmatch", "rt_cv",
               "rt_link", "rt_cum", "rt_bopen", "rt_osum")


def query(sql: str, params: dict[str, Any] | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or {})
        return cursor.fetchall() if cursor.description else []


def execute(sql: str, params: dict[str, Any] | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or {})


def analyze(*tables: str) -> None:
    """PostgreSQL never auto-analyses temporary tables; without statistics its planner picks
    nested scans that are quadratic at a million rows. SQLite plans from the indexes."""
    if connection.vendor == "postgresql":
        for name in tables:
            execute(f"ANALYZE {name}")


def temps_drop() -> None:
    """Drop every temporary table a run creates (before it starts and when it ends)."""
    for name in TEMP_TABLES:
        execute(f"DROP TABLE IF EXISTS {name}")


def sql_in(values: tuple[str, ...]) -> str:
    """An SQL `IN` list of the legs' status constants (module constants, never input)."""
    return "(" + ", ".join("'" + v + "'" for v in values) + ")"


def latest_of(table: str, key: str, day: str) -> str:
    """`FROM ... WHERE ...` over the tenant's rows of `table` up to the as-of day, keeping
    the latest (highest id) of each `key`: a later file's row replaces an earlier one.

    Each database gets the form its planner runs best (1M-order bench, docs/benchmarks.md):
    SQLite an anti-join on the (tenant, key) index (about 2.5 s, where a window sorting every
    row took 7 to 8 s); PostgreSQL the window (2.7 s, against 3.6 s for its anti-join)."""
    if connection.vendor == "sqlite":
        return (f"FROM {table} o WHERE o.tenant_id = %(t)s AND o.{day} <= %(d)s AND NOT EXISTS ("
                f"SELECT 1 FROM {table} n WHERE n.tenant_id = o.tenant_id AND n.{key} = o.{key} "
                f"AND n.id > o.id AND n.{day} <= %(d)s)")
    return (f"FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.{key} ORDER BY x.id DESC) AS rn "
            f"FROM {table} x WHERE x.tenant_id = %(t)s AND x.{day} <= %(d)s) o WHERE o.rn = 1")
