"""Storing an import's canonical columns (the polars fast path): multi-row VALUES on SQLite, CSV COPY on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection

from reconciliation.services.import_rows import COLUMNS, MODELS, copy_target, text_limits


def columns_fit(kind: str, columns: dict[str, Any]) -> bool:
    """Every text within its column's length (else the row path refuses with the line)."""
    return all((columns[name].str.len_chars().max() or 0) <= limit
               for name, limit in text_limits(kind).items() if name in columns)


def _db_lists(kind: str, columns: dict[str, Any], *, timestamp_suffix: str) -> list[list[Any]]:
    """Each column after tenant and file as a Python list of what the database is given:
    times as "YYYY-MM-DD HH:MM:SS" (+ suffix), dates as "YYYY-MM-DD", None for null."""
    import polars as pl

    fields = {f.column: f for f in MODELS[kind]._meta.concrete_fields}
    out = []
    for name in COLUMNS[kind][2:]:
        series = columns[name]
        internal = fields[name].get_internal_type()
        if internal == "DateTimeField":
            series = pl.from_epoch(series, time_unit="us").dt.strftime("%Y-%m-%d %H:%M:%S" + timestamp_suffix)
        elif internal == "DateField":
            series = series.cast(pl.Date).dt.strftime("%Y-%m-%d")
        out.append(series.to_list())
    return out


SQLITE_ROWS_PER_INSERT = 200  # rows per multi-row VALUES statement (under SQLite's 32,766 variables)
COPY_ROWS = 50_000  # rows per COPY chunk (a progress step)
SQLITE_SLICE_ROWS = 50_000  # rows turned into Python values at once on SQLite (bounded memory)


def columns_bulk_insert(
    *, kind: str, tenant_id: int, file_id: int, columns: dict[str, Any],
    progress: Callable[[int], None] | None = None,
) -> int:
    """Insert canonical columns inside the caller's transaction; returns the count.

    SQLite: multi-row VALUES statements from one flat list (binding dominates; one row per
    statement costs twice as much). PostgreSQL: COPY of CSV text written by polars, into the
    table itself when row-level security does not apply to this role, else into a
    temporary table and from there with one INSERT ... SELECT (COPY FROM is not allowed on
    a table under row-level security; the INSERT still checks the policy)."""
    model = MODELS[kind]
    table = connection.ops.quote_name(model._meta.db_table)
    names = COLUMNS[kind]
    quoted = ", ".join(connection.ops.quote_name(c) for c in names)
    count = len(columns["line"])
    if count == 0:
        return 0
    if connection.vendor == "postgresql":
        _copy_insert(kind, table, quoted, tenant_id, file_id, columns, count, progress)
        return count
    width = len(names) - 2
    # tenant and file are this import's own integer ids: literals, not bound per row.
    one = f"({int(tenant_id)}, {int(file_id)}, " + ", ".join(["?"] * width) + ")"
    step = SQLITE_ROWS_PER_INSERT
    sql = f"INSERT INTO {table} ({quoted}) VALUES " + ", ".join([one] * step)
    connection.ensure_connection()
    raw = connection.connection.cursor()  # the sqlite3 cursor: no per-call query rewriting
    # A slice of the file at a time: Python values for a million rows would take ~1 GB.
    for start in range(0, count, SQLITE_SLICE_ROWS):
        part = {name: series.slice(start, SQLITE_SLICE_ROWS) for name, series in columns.items()}
        size = min(SQLITE_SLICE_ROWS, count - start)
        flat: list[Any] = [None] * (size * width)
        for i, values in enumerate(_db_lists(kind, part, timestamp_suffix="")):
            flat[i::width] = values
        full = size // step * step
        raw.executemany(sql, (flat[i * width:(i + step) * width] for i in range(0, full, step)))
        if full < size:
            raw.execute(f"INSERT INTO {table} ({quoted}) VALUES " + ", ".join([one] * (size - full)),
                        flat[full * width:])
        if progress is not None:
            progress(size)
    return count


def _copy_insert(
    kind: str, table: str, quoted: str, tenant_id: int, file_id: int, columns: dict[str, Any], count: int,
    progress: Callable[[int], None] | None,
) -> None:
    import polars as pl

    fields = {f.column: f for f in MODELS[kind]._meta.concrete_fields}
    exprs = []
    for name in COLUMNS[kind][2:]:
        series = columns[name]
        internal = fields[name].get_internal_type()
        if internal == "DateTimeField":
            series = pl.from_epoch(series, time_unit="us").dt.strftime("%Y-%m-%d %H:%M:%S+00")
        elif internal == "DateField":
            series = series.cast(pl.Date)
        exprs.append(series.alias(name))
    frame = pl.DataFrame(exprs).select(pl.lit(int(tenant_id)).alias("tenant_id"), pl.lit(int(file_id)).alias(
        "file_id"), pl.all())
    with connection.cursor() as cursor, copy_target(cursor, kind, table, quoted) as target:
        with cursor.copy(f"COPY {target} ({quoted}) FROM STDIN WITH (FORMAT csv)") as copy:
            for start in range(0, count, COPY_ROWS):
                copy.write(frame.slice(start, COPY_ROWS).write_csv(None, include_header=False))
                if progress is not None:
                    progress(min(COPY_ROWS, count - start))
