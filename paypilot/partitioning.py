"""Declarative partitioning of the big tables on PostgreSQL, switched on by a setting.

Past one PostgreSQL's comfortable size, the tables that grow with traffic are split:

- webhook events by tenant bucket only (HASH on tenant_id). PostgreSQL requires every
  partition key column in every unique constraint; a month level would widen the
  idempotency key (tenant, provider, event_key) to include the receipt time, and the same
  event delivered again next month would be stored twice. The bucket keeps it exact.
- django-q's task results by month (RANGE on `started`); they have no tenant. The ORM
  broker's queue table is not partitioned: its rows are deleted when a task is done, so it
  never grows (and with Redis as broker it is empty).
- the three bulk reconciliation row tables by month of the row's own date, then by tenant
  bucket.

A month partition exists for every month holding rows at conversion time and for the
coming months (`manage.py partitions_ensure --months N`); a DEFAULT partition takes any
other month, so an insert never fails for want of a partition. When a month partition is
created later, rows of that month waiting in the DEFAULT partition are moved into it.

The conversion rebuilds each table in one transaction: a partitioned copy with the same
columns, check constraints and defaults; the rows copied; the old table dropped; then its
primary key and unique constraints widened by the partition columns, its other indexes,
foreign keys and triggers restored under their own names, and the id sequence carried over.
The original key definitions are kept in the table's comment, so `unpartition` restores
exactly what was there (the migration's reverse). Row-level security is re-installed on the
partitioned parents by `paypilot.rls` (post_migrate); the application role is granted the
parents only (`paypilot.pg_roles`), never a partition, so every access goes through the
parent and its policy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction

MARK = "paypilot partitioned "  # prefix of the parent's comment; the rest is JSON
DEFAULT_MONTHS_AHEAD = 3


@dataclass(frozen=True)
class Spec:
    table: str
    month_column: str | None  # RANGE by calendar month (UTC) of this column
    tenant_column: str | None  # then HASH by this column into the tenant buckets

    @property
    def keys(self) -> list[str]:
        return [c for c in (self.tenant_column, self.month_column) if c]


SPECS = (
    Spec("integrations_webhookevent", None, "tenant_id"),
    Spec("django_q_task", "started", None),
    Spec("reconciliation_orderrow", "ordered_at", "tenant_id"),
    Spec("reconciliation_providerrow", "created_at", "tenant_id"),
    Spec("reconciliation_bankrow", "booking_date", "tenant_id"),
)


def enabled(using: str = DEFAULT_DB_ALIAS) -> bool:
    return bool(getattr(settings, "PAYPILOT_PARTITIONING", False)) and connections[using].vendor == "postgresql"


def buckets() -> int:
    return int(getattr(settings, "PAYPILOT_PARTITION_TENANT_BUCKETS", 8))


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _one(cursor: Any, sql: str, params: list[Any] | None = None) -> Any:
    cursor.execute(sql, params or [])
    row = cursor.fetchone()
    return row[0] if row else None


def is_partitioned(cursor: Any, table: str) -> bool:
    return _one(cursor, "SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [table]) == "p"


def _month_start(day: date) -> date:
    return day.replace(day=1)


def _next_month(day: date) -> date:
    return date(day.year + day.month // 12, day.month % 12 + 1, 1)


def _month_bound(cursor: Any, spec: Spec, month: date) -> str:
    """A literal of the month column's own type: a timestamptz bound is midnight UTC."""
    assert spec.month_column
    kind = _one(cursor, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                        "WHERE attrelid = to_regclass(%s) AND attname = %s", [spec.table, spec.month_column])
    if kind == "date":
        return _lit(month.isoformat())
    return _lit(f"{month.isoformat()} 00:00:00+00")


def _bucket_partitions(cursor: Any, parent: str, n: int, *, prefix: str = "") -> None:
    """`n` hash partitions of `parent`, named `<prefix or parent>_b<remainder>`."""
    for remainder in range(n):
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {_q(f'{prefix or parent}_b{remainder}')} PARTITION OF {_q(parent)} "
            f"FOR VALUES WITH (MODULUS {n}, REMAINDER {remainder})"
        )


def month_partition_name(spec: Spec, month: date) -> str:
    return f"{spec.table}_m{month:%Y%m}"


def _create_month(cursor: Any, spec: Spec, month: date, n: int) -> bool:
    """Create the partition for `month` unless it exists; rows of that month waiting in the
    DEFAULT partition move into it. Returns whether it was created."""
    name = month_partition_name(spec, month)
    if _one(cursor, "SELECT to_regclass(%s) IS NOT NULL", [name]):
        return False
    low, high = _month_bound(cursor, spec, month), _month_bound(cursor, spec, _next_month(month))
    default = f"{spec.table}_default"
    in_month = f"{_q(spec.month_column or '')} >= {low} AND {_q(spec.month_column or '')} < {high}"
    waiting = _one(cursor, f"SELECT EXISTS (SELECT 1 FROM {_q(default)} WHERE {in_month})")
    if waiting:  # PostgreSQL refuses a new partition whose rows sit in the DEFAULT one
        cursor.execute(f"ALTER TABLE {_q(spec.table)} DETACH PARTITION {_q(default)}")
    sub = f" PARTITION BY HASH ({_q(spec.tenant_column)})" if spec.tenant_column else ""
    cursor.execute(f"CREATE TABLE {_q(name)} PARTITION OF {_q(spec.table)} "
                   f"FOR VALUES FROM ({low}) TO ({high}){sub}")
    if spec.tenant_column:
        _bucket_partitions(cursor, name, n)
    if waiting:
        cursor.execute(f"INSERT INTO {_q(spec.table)} SELECT * FROM {_q(default)} WHERE {in_month}")
        cursor.execute(f"DELETE FROM {_q(default)} WHERE {in_month}")
        cursor.execute(f"ALTER TABLE {_q(spec.table)} ATTACH PARTITION {_q(default)} DEFAULT")
    return True


def _catalog(cursor: Any, table: str) -> dict[str, Any]:
    """What the rebuild must restore: key constraints, other constraints, indexes, triggers,
    the id sequence's position."""
    cursor.execute(
        "SELECT conname, contype, pg_get_constraintdef(oid), "
        "ARRAY(SELECT attname FROM unnest(conkey) WITH ORDINALITY k(n, o) "
        "      JOIN pg_attribute ON attrelid = conrelid AND attnum = k.n ORDER BY o) "
        "FROM pg_constraint WHERE conrelid = to_regclass(%s) AND contype IN ('p', 'u', 'f') ORDER BY conname",
        [table],
    )
    constraints = [{"name": r[0], "type": r[1], "def": r[2], "columns": list(r[3])} for r in cursor.fetchall()]
    cursor.execute(
        "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i "
        "WHERE i.indrelid = to_regclass(%s) AND NOT EXISTS "
        "(SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid) ORDER BY 1",
        [table],
    )
    indexes = [r[0] for r in cursor.fetchall()]
    cursor.execute("SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = to_regclass(%s) "
                   "AND NOT tgisinternal AND tgparentid = 0 ORDER BY tgname", [table])
    triggers = [r[0] for r in cursor.fetchall()]
    sequence = _one(cursor, "SELECT pg_get_serial_sequence(%s, 'id')", [table])
    position = None
    if sequence:
        cursor.execute(f"SELECT last_value, is_called FROM {sequence}")
        position = list(cursor.fetchone())
    return {"constraints": constraints, "indexes": indexes, "triggers": triggers, "sequence": position}


def _rebuild(cursor: Any, table: str, layout: str) -> dict[str, Any]:
    """Replace `table` by a copy created with `layout` (" PARTITION BY ..." or "") holding
    the same rows; returns the old table's catalog for the caller to restore keys from."""
    found = _catalog(cursor, table)
    work = f"{table}__rebuild"
    cursor.execute(f"LOCK TABLE {_q(table)} IN ACCESS EXCLUSIVE MODE")
    cursor.execute(
        f"CREATE TABLE {_q(work)} (LIKE {_q(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
        f"INCLUDING STORAGE INCLUDING COMMENTS INCLUDING GENERATED){layout}"
    )
    if found["sequence"] is not None:  # the copied default names the sequence about to go
        cursor.execute(f"ALTER TABLE {_q(work)} ALTER COLUMN id DROP DEFAULT")
    return found | {"work": work}


def _restore(cursor: Any, table: str, found: dict[str, Any], key_columns: dict[str, list[str]]) -> None:
    """After the rows are in `table`: keys (with the given columns), foreign keys, indexes,
    triggers and the id sequence, all under their former names."""
    if found["sequence"] is not None:
        sequence = f"{table}_id_seq"
        cursor.execute(f"CREATE SEQUENCE {_q(sequence)} OWNED BY {_q(table)}.id")
        last_value, is_called = found["sequence"]
        cursor.execute("SELECT setval(%s, %s, %s)", [sequence, last_value, is_called])
        cursor.execute(f"ALTER TABLE {_q(table)} ALTER COLUMN id SET DEFAULT nextval({_lit(sequence)}::regclass)")
    for constraint in found["constraints"]:
        name = _q(constraint["name"])
        if constraint["type"] in ("p", "u"):
            kind = "PRIMARY KEY" if constraint["type"] == "p" else "UNIQUE"
            columns = ", ".join(_q(c) for c in key_columns[constraint["name"]])
            cursor.execute(f"ALTER TABLE {_q(table)} ADD CONSTRAINT {name} {kind} ({columns})")
        else:
            cursor.execute(f"ALTER TABLE {_q(table)} ADD CONSTRAINT {name} {constraint['def']}")
    for statement in found["indexes"] + found["triggers"]:
        cursor.execute(statement)


def _swap(cursor: Any, table: str, work: str) -> None:
    cursor.execute(f"INSERT INTO {_q(work)} SELECT * FROM {_q(table)}")
    cursor.execute(f"DROP TABLE {_q(table)}")
    cursor.execute(f"ALTER TABLE {_q(work)} RENAME TO {_q(table)}")


def _months_present(cursor: Any, spec: Spec) -> list[date]:
    column = _q(spec.month_column or "")
    kind = _one(cursor, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                        "WHERE attrelid = to_regclass(%s) AND attname = %s", [spec.table, spec.month_column])
    utc = "" if kind == "date" else " AT TIME ZONE 'UTC'"
    cursor.execute(f"SELECT DISTINCT date_trunc('month', {column}{utc})::date FROM {_q(spec.table)} ORDER BY 1")
    return [row[0] for row in cursor.fetchall()]


def upcoming_months(months: int, today: date | None = None) -> list[date]:
    month = _month_start(today or date.today())
    found = []
    for _ in range(months + 1):  # the current month and `months` after it
        found.append(month)
        month = _next_month(month)
    return found


def partition(spec: Spec, *, n: int, months: int, using: str = DEFAULT_DB_ALIAS) -> bool:
    """Convert one table (idempotent: False when it is already partitioned)."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        if is_partitioned(cursor, spec.table):
            return False
        wanted = sorted(set(_months_present(cursor, spec) + upcoming_months(months))) if spec.month_column else []
        if spec.month_column:
            layout = f" PARTITION BY RANGE ({_q(spec.month_column)})"
        else:
            layout = f" PARTITION BY HASH ({_q(spec.tenant_column or '')})"
        found = _rebuild(cursor, spec.table, layout)
        work = found["work"]
        if spec.month_column:
            cursor.execute(f"CREATE TABLE {_q(f'{spec.table}_default')} PARTITION OF {_q(work)} DEFAULT")
        else:
            _bucket_partitions(cursor, work, n, prefix=spec.table)
        _swap(cursor, spec.table, work)
        for month in wanted:
            _create_month(cursor, spec, month, n)
        widened = {
            c["name"]: c["columns"] + [k for k in spec.keys if k not in c["columns"]]
            for c in found["constraints"] if c["type"] in ("p", "u")
        }
        _restore(cursor, spec.table, found, widened)
        original = {c["name"]: c["columns"] for c in found["constraints"] if c["type"] in ("p", "u")}
        cursor.execute(f"COMMENT ON TABLE {_q(spec.table)} IS {_lit(MARK + json.dumps(original))}")
    return True


def unpartition(spec: Spec, *, using: str = DEFAULT_DB_ALIAS) -> bool:
    """Back to one plain table with the keys it had before `partition` (from the comment)."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        if not is_partitioned(cursor, spec.table):
            return False
        comment = _one(cursor, "SELECT obj_description(to_regclass(%s), 'pg_class')", [spec.table]) or ""
        if not comment.startswith(MARK):
            raise RuntimeError(f"{spec.table} is partitioned but not by paypilot.partitioning; leaving it")
        original = json.loads(comment[len(MARK):])
        found = _rebuild(cursor, spec.table, "")
        _swap(cursor, spec.table, found["work"])
        _restore(cursor, spec.table, found, original)
    return True


def partition_all(*, using: str = DEFAULT_DB_ALIAS, months: int = DEFAULT_MONTHS_AHEAD) -> list[str]:
    """The migration's forward step: every table of SPECS, when the setting is on (PostgreSQL)."""
    if not enabled(using):
        return []
    return [s.table for s in SPECS if partition(s, n=buckets(), months=months, using=using)]


def unpartition_all(*, using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """The migration's reverse step: whatever `partition_all` converted goes back."""
    if connections[using].vendor != "postgresql":
        return []
    return [s.table for s in SPECS if unpartition(s, using=using)]


def ensure_months(months: int, *, using: str = DEFAULT_DB_ALIAS, today: date | None = None) -> list[str]:
    """Create the month partitions from this month to `months` ahead on every partitioned
    table with a month level (idempotent); returns the partitions created."""
    created: list[str] = []
    if connections[using].vendor != "postgresql":
        return created
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        for spec in SPECS:
            if not spec.month_column or not is_partitioned(cursor, spec.table):
                continue
            n = _existing_buckets(cursor, spec) or buckets()
            for month in upcoming_months(months, today):
                if _create_month(cursor, spec, month, n):
                    created.append(month_partition_name(spec, month))
    return created


def _existing_buckets(cursor: Any, spec: Spec) -> int | None:
    """The bucket count the table was built with (a changed setting must not mix moduli)."""
    if not spec.tenant_column:
        return None
    return _one(cursor,
                "SELECT max((regexp_match(pg_get_expr(c.relpartbound, c.oid), 'MODULUS (\\d+)'))[1]::int) "
                "FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE p.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass(%s))",
                [spec.table])
