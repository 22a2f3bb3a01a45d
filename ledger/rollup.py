"""The report rollup: its key (in Python and in SQL for both vendors), the triggers that keep
it exact, and the rebuild from the ledger rows.

The key of an invoice is (tenant, arm, currency, cohort week, state, messaged, delay bucket).
`rollup_key()` computes it in Python (the recomputation the tests compare against);
`_week_sql()` / `_delay_sql()` compute the same thing in SQLite and PostgreSQL. Both work on
whole seconds since the epoch, so the two never disagree by a rounding at a bucket edge.

Triggers rather than service code: every path that writes `ledger_invoice` (services, bulk
inserts, GDPR erasure, retention purge, a hand repair) keeps the rollup exact in the same
transaction, and the ledger services stay untouched. On PostgreSQL they are statement-level
with transition tables: one aggregated upsert per statement, in key order (a bulk insert of
a million rows costs one GROUP BY; concurrent transactions lock rollup rows in the same
order). On SQLite (one writer at a time) they are row-level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db import connection, migrations, transaction

ROLLUP_TABLE = "ledger_reportrollup"
INVOICE_TABLE = "ledger_invoice"
NOT_RECOVERED = -1  # delay bucket of an invoice that is not (yet) recovered
HOUR_BUCKETS_BELOW = 72  # 1-hour buckets below this many hours, whole days from there
ROLLUP_DELAY_CAP_HOURS = 366 * 24  # last bucket: recovered 366 days or more after failing
WINDOW_DAYS_MAX = 365  # the report window must stay below the cap

KEY_COLUMNS = ("tenant_id", "arm", "currency", "week", "state", "messaged", "delay_hours")
SUM_COLUMNS = ("invoices", "failed_minor", "recovered_minor", "refunded_minor")
# Invoice columns the key or the sums read: an UPDATE touching none of them skips the trigger.
WATCHED_COLUMNS = ("tenant_id", "arm", "currency", "failed_at", "state", "first_messaged_at",
                   "recovered_at", "amount_minor", "recovered_minor", "refunded_minor")


@dataclass(frozen=True)
class RollupKey:
    tenant_id: int
    arm: str
    currency: str
    week: date
    state: str
    messaged: bool
    delay_hours: int


def week_of(moment: datetime) -> date:
    """Monday (UTC) of the week `moment` falls in: the invoice's cohort."""
    day = moment.astimezone(UTC).date()
    return day - timedelta(days=day.weekday())


def delay_bucket(*, state: str, failed_at: datetime, recovered_at: datetime | None) -> int:
    """The delay bucket (see ReportRollup.delay_hours). A recovery without a payment time
    (rows stored before provider times were kept) counts as recovered at once; a payment
    time before the failure time (clocks, backfills) counts as 0."""
    if state != "recovered":
        return NOT_RECOVERED
    seconds = 0
    if recovered_at is not None:
        seconds = math.floor(recovered_at.timestamp()) - math.floor(failed_at.timestamp())
    hours = max(0, seconds // 3600)
    bucket = hours if hours < HOUR_BUCKETS_BELOW else (hours // 24) * 24
    return min(ROLLUP_DELAY_CAP_HOURS, bucket)


def bucket_width(delay_hours: int) -> int:
    """Hours a bucket spans (the cap bucket is open-ended; callers treat it as 'later')."""
    return 1 if delay_hours < HOUR_BUCKETS_BELOW else 24


def rollup_key(*, tenant_id: int, arm: str, currency: str, state: str, failed_at: datetime,
               first_messaged_at: datetime | None, recovered_at: datetime | None) -> RollupKey:
    return RollupKey(tenant_id=tenant_id, arm=arm, currency=currency, week=week_of(failed_at),
                     state=state, messaged=first_messaged_at is not None,
                     delay_hours=delay_bucket(state=state, failed_at=failed_at, recovered_at=recovered_at))


# --- SQL, per vendor ---------------------------------------------------------------------------

def _week_sql(vendor: str, row: str) -> str:
    if vendor == "postgresql":
        return f"(date_trunc('week', {row}.failed_at AT TIME ZONE 'UTC'))::date"
    # strftime('%w'): 0 = Sunday; Django stores SQLite datetimes as naive UTC text.
    return (f"date({row}.failed_at, '-' || ((CAST(strftime('%w', {row}.failed_at) AS INTEGER) + 6) % 7)"
            f" || ' days')")


def _delay_sql(vendor: str, row: str) -> str:
    if vendor == "postgresql":
        seconds = (f"(floor(extract(epoch FROM {row}.recovered_at)) - "
                   f"floor(extract(epoch FROM {row}.failed_at)))::bigint")
        hours = f"GREATEST(0, COALESCE(floor({seconds} / 3600.0)::bigint, 0))"
        least = "LEAST"
    else:
        seconds = (f"(CAST(strftime('%s', {row}.recovered_at) AS INTEGER) - "
                   f"CAST(strftime('%s', {row}.failed_at) AS INTEGER))")
        hours = f"MAX(0, COALESCE({seconds} / 3600, 0))"  # negative seconds end at 0 either way
        least = "MIN"
    bucket = f"CASE WHEN {hours} < {HOUR_BUCKETS_BELOW} THEN {hours} ELSE ({hours} / 24) * 24 END"
    return (f"CASE WHEN {row}.state = 'recovered' THEN {least}({ROLLUP_DELAY_CAP_HOURS}, {bucket}) "
            f"ELSE {NOT_RECOVERED} END")


def _key_exprs(vendor: str, row: str) -> list[str]:
    """The SQL of each KEY_COLUMNS value for the invoice row aliased `row`."""
    return [f"{row}.tenant_id", f"{row}.arm", f"{row}.currency", _week_sql(vendor, row), f"{row}.state",
            f"({row}.first_messaged_at IS NOT NULL)", _delay_sql(vendor, row)]


def _key_select(vendor: str, row: str) -> str:
    return ", ".join(_key_exprs(vendor, row))


_KEYS = ", ".join(KEY_COLUMNS)
_UPSERT_TAIL = (f" ON CONFLICT ({_KEYS}) DO UPDATE SET "
                + ", ".join(f"{c} = {ROLLUP_TABLE}.{c} + excluded.{c}" for c in SUM_COLUMNS))


def _aggregate_insert(vendor: str, source: str, *, sign: int, where: str = "") -> str:
    """INSERT ... SELECT the aggregated key of every row of `source` (alias r), sign +1/-1."""
    sums = (f"{sign} * COUNT(*), {sign} * SUM(r.amount_minor), {sign} * SUM(r.recovered_minor), "
            f"{sign} * SUM(r.refunded_minor)")
    return (f"INSERT INTO {ROLLUP_TABLE} ({_KEYS}, {', '.join(SUM_COLUMNS)}) "
            f"SELECT {_key_select(vendor, 'r')}, {sums} FROM {source} r {where or 'WHERE true'} "
            f"GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7" + _UPSERT_TAIL)


def _pg_changed(old: str, new: str) -> str:
    return " OR ".join(f"{old}.{c} IS DISTINCT FROM {new}.{c}" for c in WATCHED_COLUMNS)


def _pg_subtract(source: str) -> str:
    """Take the rows of `source` out of the rollup: UPDATEs of existing rollup rows only, in
    key order (the same lock order in every transaction). Never an INSERT: a row already
    gone (a tenant deleted with everything it owns, a flush) is not brought back negative."""
    keys = ", ".join(f"{expr} AS {name}" for expr, name in zip(
        _key_exprs("postgresql", "r"), KEY_COLUMNS, strict=True))
    match = " AND ".join(f"{c} = d.{c}" for c in KEY_COLUMNS)
    return (f"FOR d IN SELECT {keys}, COUNT(*) AS n, SUM(r.amount_minor) AS failed, "
            f"SUM(r.recovered_minor) AS gross, SUM(r.refunded_minor) AS refunded FROM {source} r "
            f"GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7 LOOP\n"
            f"  UPDATE {ROLLUP_TABLE} SET invoices = invoices - d.n, failed_minor = failed_minor - d.failed, "
            f"recovered_minor = recovered_minor - d.gross, refunded_minor = refunded_minor - d.refunded "
            f"WHERE {match};\nEND LOOP;")


def _pg_statements() -> list[str]:
    # Rows a statement emptied are dropped by their exact keys (through the key index), not
    # by a sweep over the tenant's rollup.
    keys = ", ".join(f"{expr} AS {name}" for expr, name in zip(
        _key_exprs("postgresql", "r"), KEY_COLUMNS, strict=True))
    match = " AND ".join(f"x.{c} = k.{c}" for c in KEY_COLUMNS)
    drop_empty_for = (f"DELETE FROM {ROLLUP_TABLE} x USING (SELECT DISTINCT {keys} FROM %s r) k "
                      f"WHERE {match} AND x.invoices = 0")
    changed_old = (f"(SELECT o.* FROM old_rows o JOIN new_rows n ON n.id = o.id "
                   f"WHERE {_pg_changed('o', 'n')})")
    changed_new = (f"(SELECT n.* FROM new_rows n JOIN old_rows o ON o.id = n.id "
                   f"WHERE {_pg_changed('o', 'n')})")
    functions = {
        "insert": _aggregate_insert("postgresql", "new_rows", sign=1) + ";",
        "delete": _pg_subtract("old_rows") + "\n" + drop_empty_for % "old_rows" + ";",
        "update": (_pg_subtract(changed_old) + "\n"
                   + _aggregate_insert("postgresql", changed_new, sign=1) + ";\n"
                   + drop_empty_for % changed_old + ";"),
    }
    out: list[str] = []
    for op, body in functions.items():
        referencing = {"insert": "NEW TABLE AS new_rows", "delete": "OLD TABLE AS old_rows",
                       "update": "OLD TABLE AS old_rows NEW TABLE AS new_rows"}[op]
        out += [
            f"CREATE OR REPLACE FUNCTION ledger_rollup_{op}() RETURNS trigger AS $$\n"
            f"DECLARE d record;\nBEGIN\n{body}\nRETURN NULL;\nEND;\n$$ LANGUAGE plpgsql",
            f'DROP TRIGGER IF EXISTS ledger_invoice_rollup_{op} ON "{INVOICE_TABLE}"',
            f'CREATE TRIGGER ledger_invoice_rollup_{op} AFTER {op.upper()} ON "{INVOICE_TABLE}" '
            f"REFERENCING {referencing} FOR EACH STATEMENT EXECUTE FUNCTION ledger_rollup_{op}()",
        ]
    return out


def _sqlite_row_sql(row: str, *, sign: int) -> str:
    """One upsert of one row (NEW or OLD) into the rollup, sign +1/-1."""
    values = (f"{_key_select('sqlite', row)}, {sign}, {sign} * {row}.amount_minor, "
              f"{sign} * {row}.recovered_minor, {sign} * {row}.refunded_minor")
    # SELECT ... WHERE true: SQLite's documented way to avoid the ON CONFLICT parse ambiguity.
    return (f"INSERT INTO {ROLLUP_TABLE} ({_KEYS}, {', '.join(SUM_COLUMNS)}) SELECT {values} WHERE true"
            + _UPSERT_TAIL + ";")


def _sqlite_subtract(row: str) -> str:
    """Take OLD out of its rollup row: an UPDATE only, never an INSERT (see _pg_subtract)."""
    match = " AND ".join(f"{c} = {expr}" for c, expr in zip(KEY_COLUMNS, _key_exprs("sqlite", row), strict=True))
    return (f"UPDATE {ROLLUP_TABLE} SET invoices = invoices - 1, failed_minor = failed_minor - {row}.amount_minor, "
            f"recovered_minor = recovered_minor - {row}.recovered_minor, "
            f"refunded_minor = refunded_minor - {row}.refunded_minor WHERE {match};")


def _sqlite_drop_empty(row: str) -> str:
    return (f"DELETE FROM {ROLLUP_TABLE} WHERE invoices = 0 AND tenant_id = {row}.tenant_id "
            f"AND arm = {row}.arm AND currency = {row}.currency AND week = {_week_sql('sqlite', row)} "
            f"AND state = {row}.state;")


def _sqlite_statements() -> list[str]:
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in WATCHED_COLUMNS)
    return [
        f"DROP TRIGGER IF EXISTS ledger_invoice_rollup_{op}" for op in ("insert", "update", "delete")
    ] + [
        f"CREATE TRIGGER ledger_invoice_rollup_insert AFTER INSERT ON {INVOICE_TABLE} BEGIN "
        f"{_sqlite_row_sql('NEW', sign=1)} END",
        f"CREATE TRIGGER ledger_invoice_rollup_delete AFTER DELETE ON {INVOICE_TABLE} BEGIN "
        f"{_sqlite_subtract('OLD')} {_sqlite_drop_empty('OLD')} END",
        f"CREATE TRIGGER ledger_invoice_rollup_update AFTER UPDATE OF {', '.join(WATCHED_COLUMNS)} "
        f"ON {INVOICE_TABLE} WHEN {changed} BEGIN "
        f"{_sqlite_subtract('OLD')} {_sqlite_drop_empty('OLD')} {_sqlite_row_sql('NEW', sign=1)} END",
    ]


def trigger_statements(vendor: str) -> list[str]:
    if vendor == "postgresql":
        return _pg_statements()
    if vendor == "sqlite":
        return _sqlite_statements()
    raise RuntimeError(f"PayPilot runs on SQLite or PostgreSQL; no rollup triggers for {vendor}")


def _drop_statements(vendor: str) -> list[str]:
    if vendor == "postgresql":
        return [s for op in ("insert", "update", "delete") for s in (
            f'DROP TRIGGER IF EXISTS ledger_invoice_rollup_{op} ON "{INVOICE_TABLE}"',
            f"DROP FUNCTION IF EXISTS ledger_rollup_{op}()")]
    return [f"DROP TRIGGER IF EXISTS ledger_invoice_rollup_{op}" for op in ("insert", "update", "delete")]


def rollup_triggers() -> migrations.RunPython:
    """Migration operation: install the rollup triggers, then fill the rollup from the rows."""

    def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
        vendor = schema_editor.connection.vendor
        for sql in trigger_statements(vendor):
            schema_editor.execute(sql, params=None)
        schema_editor.execute(f"DELETE FROM {ROLLUP_TABLE}", params=None)
        schema_editor.execute(_aggregate_insert(vendor, INVOICE_TABLE, sign=1), params=None)

    def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
        for sql in _drop_statements(schema_editor.connection.vendor):
            schema_editor.execute(sql, params=None)

    return migrations.RunPython(forwards, backwards, elidable=False)


def rollup_rebuild(*, tenant_id: int) -> int:
    """Recompute one tenant's rollup rows from its invoice rows, in one transaction (the
    tenant's rollup is never seen half-built). Returns the number of rollup rows stored."""
    vendor = connection.vendor
    with transaction.atomic(), connection.cursor() as cursor:
        # The id is inlined (an int, never text): the SQLite strftime('%s') in the key would
        # otherwise be taken for a placeholder.
        tid = int(tenant_id)
        cursor.execute(f"DELETE FROM {ROLLUP_TABLE} WHERE tenant_id = {tid}")
        cursor.execute(_aggregate_insert(vendor, INVOICE_TABLE, sign=1, where=f"WHERE r.tenant_id = {tid}"))
        cursor.execute(f"SELECT COUNT(*) FROM {ROLLUP_TABLE} WHERE tenant_id = {tid}")
        return int(cursor.fetchone()[0])


# --- reading, and the recomputation from scratch ------------------------------------------------

@dataclass(frozen=True)
class RollupCell:
    """One rollup row without its tenant: what `report_compute` reads."""

    arm: str
    currency: str
    week: date
    state: str
    messaged: bool
    delay_hours: int
    invoices: int
    failed_minor: int
    recovered_minor: int
    refunded_minor: int


def rollup_cells(*, tenant_id: int) -> list[RollupCell]:
    """The tenant's rollup rows: thousands at most, whatever the ledger's size."""
    from ledger.models import ReportRollup  # models import nothing from here; keep it that way

    fields = ("arm", "currency", "week", "state", "messaged", "delay_hours", *SUM_COLUMNS)
    return [RollupCell(*values) for values in
            ReportRollup.objects.filter(tenant_id=tenant_id, invoices__gt=0).values_list(*fields)]


def rollup_cells_recompute(invoices: list[dict]) -> list[RollupCell]:  # type: ignore[type-arg]
    """The same cells computed in Python from invoice rows (dicts with the invoice's field
    names, `tenant_id` ignored): the from-scratch answer the triggers must equal."""
    sums: dict[tuple, list[int]] = {}  # type: ignore[type-arg]
    for inv in invoices:
        key = rollup_key(tenant_id=0, arm=inv["arm"], currency=inv["currency"], state=inv["state"],
                         failed_at=inv["failed_at"], first_messaged_at=inv["first_messaged_at"],
                         recovered_at=inv["recovered_at"])
        cell = sums.setdefault((key.arm, key.currency, key.week, key.state, key.messaged, key.delay_hours),
                               [0, 0, 0, 0])
        cell[0] += 1
        cell[1] += inv["amount_minor"]
        cell[2] += inv["recovered_minor"]
        cell[3] += inv["refunded_minor"]
    return [RollupCell(*key, *values) for key, values in sums.items()]
