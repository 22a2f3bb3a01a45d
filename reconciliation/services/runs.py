"""The run: set-based matching in SQL, stored once per (tenant, as-of date, input digest).

Every step is a query over temporary tables built from the tenant's imported rows (the
same SQL on SQLite and PostgreSQL, dates as integer day numbers): the newest file wins
for a repeated id (a weekly export overlapping the last), rows dated after the as-of date
are left out, and only rows already known to be off come back to Python, where
`reconciliation.engine` words them. Nothing loops over pairs in Python.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from paypilot.models import Tenant
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context
from reconciliation import engine
from reconciliation.engine import BreakItem, Capture, money, refs_make
from reconciliation.formats import EPOCH, day_number
from reconciliation.models import Break, ContractVersion, DisputeRow, ImportFile, Run

# Order statuses that expect no capture: such orders are left out of leg 1.
ORDER_STATUSES_WITHOUT_CAPTURE = ("cancelled", "canceled", "voided", "void", "failed", "pending")
# Dispute statuses with nothing left to decide (evidence sent, or closed).
DISPUTE_CLOSED = ("won", "lost", "closed", "warning_closed", "under_review", "warning_under_review",
                  "charge_refunded", "accepted", "expired", "prevented")
# Reference words: ids with hyphens whole (ADY-BATCH-000123) and their parts.
TOKEN = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")
MIN_TOKEN = 6
TEMP_TABLES = ("rt_orders", "rt_prov", "rt_cap", "rt_payout", "rt_bank", "rt_token", "rt_pmatch", "rt_cv",
               "rt_link", "rt_cum", "rt_bopen", "rt_osum")
Progress = Callable[[str], None]
RUN_WORK_MEM = "128MB"  # PostgreSQL sort/hash memory per plan node during a run


def _q(sql: str, params: dict[str, Any] | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or {})
        return cursor.fetchall() if cursor.description else []


def _x(sql: str, params: dict[str, Any] | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or {})


def _analyze(*tables: str) -> None:
    """PostgreSQL never auto-analyses temporary tables; without statistics its planner picks
    nested scans that are quadratic at a million rows. SQLite plans from the indexes."""
    if connection.vendor == "postgresql":
        for name in tables:
            _x(f"ANALYZE {name}")


def _drop_temps() -> None:
    for name in TEMP_TABLES:
        _x(f"DROP TABLE IF EXISTS {name}")


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join("'" + v + "'" for v in values) + ")"  # constants defined above, never input


def input_digest(*, tenant: Tenant, as_of: date) -> str:
    """sha256 over what a run reads: every imported file's sha256 and kind, every contract
    version, the rules' version and the date window. No database ids, so the same files
    imported into another database give the same digest."""
    files = sorted(ImportFile.objects.filter(tenant=tenant).values_list("kind", "sha256"))
    contracts = sorted(
        (c.currency, c.version, c.effective_from.isoformat(), c.percent_micro, c.fixed_minor,
         c.chargeback_fee_minor, c.payout_delay_days)
        for c in ContractVersion.objects.filter(tenant=tenant)
    )
    payload = {"engine": engine.ENGINE_VERSION, "as_of": as_of.isoformat(), "files": files,
               "contracts": contracts, "window": settings.PAYPILOT_RECON_DATE_WINDOW_DAYS}
    # Disputes kept current by webhooks (not files): each one's last applied event.
    live = sorted(DisputeRow.objects.filter(tenant=tenant, file__isnull=True).values_list("dispute_id",
                                                                                         "last_event_id"))
    if live:  # absent otherwise, so tenants without live disputes keep their digests
        payload["live_disputes"] = live
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _latest_of(table: str, key: str, day: str) -> str:
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


def _build_temps(tenant_id: int, as_of_day: int) -> None:
    p = {"t": tenant_id, "d": as_of_day}
    _x(f"""CREATE TEMP TABLE rt_orders AS
        SELECT order_id, amount_minor, currency, payment_reference, status
        {_latest_of("reconciliation_orderrow", "order_id", "ordered_day")}
          AND status NOT IN {_in(ORDER_STATUSES_WITHOUT_CAPTURE)}""", p)
    _x("CREATE INDEX rt_orders_id ON rt_orders (order_id)")
    _x("CREATE INDEX rt_orders_ref ON rt_orders (payment_reference)")
    _analyze("rt_orders")
    _x(f"""CREATE TEMP TABLE rt_prov AS
        SELECT transaction_id, created_day, type, amount_minor, fee_minor, net_minor, currency,
               CASE WHEN charge_id <> '' THEN charge_id WHEN type = 'charge' THEN transaction_id ELSE '' END
                 AS charge_key,
               order_reference, payout_id, payout_day
        {_latest_of("reconciliation_providerrow", "transaction_id", "created_day")}""", p)
    _x("CREATE INDEX rt_prov_charge ON rt_prov (type, charge_key)")
    _analyze("rt_prov")
    _x("""CREATE TEMP TABLE rt_cv AS
        SELECT id, currency, version, effective_day, percent_micro, fixed_minor, chargeback_fee_minor,
               payout_delay_days,
               COALESCE(LEAD(effective_day) OVER (PARTITION BY currency ORDER BY effective_day, version),
                        2147483647) AS until_day
        FROM reconciliation_contractversion WHERE tenant_id = %(t)s""", p)
    # Captures: the charge plus partial-capture reversals (adjustments on the same charge),
    # what was refunded of it, and its order: by the order's payment reference, else the
    # order reference the provider carries.
    # `eff` marks the captures that count for leg 1: those not fully refunded, or, when every
    # capture of an order was refunded (a refunded order), its first one (set just below, on
    # the few such orders only: a window over every capture cost SQLite seconds).
    _x("""CREATE TEMP TABLE rt_cap AS
        SELECT z.*, CASE WHEN z.refunded < z.captured THEN 1 ELSE 0 END AS eff
        FROM (
        SELECT c.transaction_id, c.charge_key, c.currency, c.created_day, c.fee_minor,
               CAST(c.amount_minor + COALESCE(a.total, 0) AS BIGINT) AS captured,
               CAST(COALESCE(r.total, 0) AS BIGINT) AS refunded,
               COALESCE(o1.order_id, o2.order_id) AS order_id
        FROM rt_prov c
        LEFT JOIN (SELECT charge_key, SUM(amount_minor) AS total FROM rt_prov
                   WHERE type = 'adjustment' AND charge_key <> '' GROUP BY charge_key) a
               ON a.charge_key = c.charge_key
        LEFT JOIN (SELECT charge_key, -SUM(amount_minor) AS total FROM rt_prov
                   WHERE type = 'refund' AND charge_key <> '' GROUP BY charge_key) r
               ON r.charge_key = c.charge_key
        LEFT JOIN rt_orders o1 ON o1.payment_reference <> '' AND o1.payment_reference = c.charge_key
        LEFT JOIN rt_orders o2 ON o1.order_id IS NULL AND c.order_reference <> ''
               AND o2.order_id = c.order_reference
        WHERE c.type = 'charge') z""")
    _x("CREATE INDEX rt_cap_order ON rt_cap (order_id)")
    _x("""UPDATE rt_cap SET eff = 1 WHERE transaction_id IN (
        SELECT transaction_id FROM (
          SELECT transaction_id,
                 ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY created_day, transaction_id) AS rn
          FROM rt_cap WHERE order_id IN (SELECT order_id FROM rt_cap WHERE order_id IS NOT NULL
                                         GROUP BY order_id HAVING MAX(eff) = 0)) f
        WHERE rn = 1)""")
    _x("CREATE INDEX rt_cap_charge ON rt_cap (charge_key)")
    _analyze("rt_cv", "rt_cap")


def _leg1(breaks: list[BreakItem]) -> tuple[int, int]:
    """Orders to captures. Returns (orders, matched)."""
    # An order matches when exactly one counting capture (eff = 1) has its amount and
    # currency; the rows of the orders that do not come back with their captures, in order.
    if connection.vendor == "sqlite":
        # Each order's captures summed once (rt_osum); only the orders that do not match
        # are joined back to their captures: 3.5 s on the 1M-order bench, where the two
        # full joins below (one windowed) took 9.8 s.
        _x("""CREATE TEMP TABLE rt_osum AS
            SELECT order_id, COUNT(*) AS n, SUM(captured) AS s, MIN(currency) AS ccy
            FROM rt_cap WHERE eff = 1 AND order_id IS NOT NULL GROUP BY order_id""")
        _x("CREATE INDEX rt_osum_id ON rt_osum (order_id)")
        _analyze("rt_osum")
        orders, matched = _q("""
            SELECT COUNT(*), COALESCE(SUM(CASE WHEN s.n = 1 AND s.s = o.amount_minor AND s.ccy = o.currency
                                          THEN 1 ELSE 0 END), 0)
            FROM rt_orders o LEFT JOIN rt_osum s ON s.order_id = o.order_id""")[0]
        rows = _q("""
            SELECT o.order_id, o.amount_minor, o.currency, c.transaction_id, c.charge_key, c.captured, c.currency
            FROM rt_orders o LEFT JOIN rt_osum s ON s.order_id = o.order_id
                 LEFT JOIN rt_cap c ON c.order_id = o.order_id AND c.eff = 1
            WHERE NOT (COALESCE(s.n, 0) = 1 AND s.s = o.amount_minor AND s.ccy = o.currency)
            ORDER BY o.order_id, c.created_day, c.transaction_id""")
    else:  # PostgreSQL hashes both joins (5.4 s; the form above cost it 12.7 s)
        orders, matched = _q("""
            SELECT COUNT(*),
                   COALESCE(SUM(CASE WHEN n = 1 AND s = amount_minor AND ccy = currency THEN 1 ELSE 0 END), 0)
            FROM (SELECT o.order_id, o.amount_minor, o.currency, COUNT(c.charge_key) AS n,
                         SUM(c.captured) AS s, MIN(c.currency) AS ccy
                  FROM rt_orders o LEFT JOIN rt_cap c ON c.order_id = o.order_id AND c.eff = 1
                  GROUP BY o.order_id, o.amount_minor, o.currency) x""")[0]
        rows = _q("""
            SELECT x.order_id, x.amount_minor, x.currency, x.transaction_id, x.charge_key, x.captured, x.ccy
            FROM (SELECT o.order_id, o.amount_minor, o.currency, c.transaction_id, c.charge_key, c.captured,
                         c.currency AS ccy, c.created_day,
                         COUNT(c.charge_key) OVER (PARTITION BY o.order_id) AS n,
                         SUM(c.captured) OVER (PARTITION BY o.order_id) AS s
                  FROM rt_orders o LEFT JOIN rt_cap c ON c.order_id = o.order_id AND c.eff = 1) x
            WHERE NOT (x.n = 1 AND x.s = x.amount_minor AND x.ccy = x.currency)
            ORDER BY x.order_id, x.created_day, x.transaction_id""")
    groups: dict[str, tuple[int, str, list[Capture]]] = {}
    for order_id, amount, currency, txn, charge, captured, ccy in rows:
        entry = groups.setdefault(order_id, (amount, currency, []))
        if txn is not None:
            entry[2].append(Capture(txn, charge, captured, ccy))
    for order_id, (amount, currency, captures) in groups.items():
        breaks.extend(engine.order_breaks(order_id=order_id, amount_minor=amount, currency=currency,
                                          captures=captures))
    for txn, charge, captured, currency in _q("""
            SELECT transaction_id, charge_key, captured, currency FROM rt_cap
            WHERE order_id IS NULL AND refunded < captured ORDER BY transaction_id"""):
        breaks.append(BreakItem(engine.CAPTURE_WITHOUT_ORDER, captured, currency,
                                refs_make(transaction=txn, charge=charge),
                                f"Capture {txn} of {money(captured, currency)} matches no order."))
    return int(orders), int(matched)


def _fees(breaks: list[BreakItem], labels: dict[int, str]) -> None:
    """Each capture's fee against percent x amount (half up) + fixed of the version in
    force on the capture date; each dispute's fee against the chargeback fee."""
    rows = _q("""
        SELECT 'charge', c.transaction_id, c.charge_key, c.order_id, c.captured, c.fee_minor, c.currency, v.id,
               (c.captured * v.percent_micro + 500000) / 1000000 + v.fixed_minor
        FROM rt_cap c JOIN rt_cv v ON v.currency = c.currency
             AND c.created_day >= v.effective_day AND c.created_day < v.until_day
        WHERE c.captured > 0 AND c.fee_minor <> (c.captured * v.percent_micro + 500000) / 1000000 + v.fixed_minor
        UNION ALL
        SELECT 'dispute', p.transaction_id, p.charge_key, NULL, p.amount_minor, p.fee_minor, p.currency, v.id,
               v.chargeback_fee_minor
        FROM rt_prov p JOIN rt_cv v ON v.currency = p.currency
             AND p.created_day >= v.effective_day AND p.created_day < v.until_day
        WHERE p.type = 'dispute' AND p.fee_minor <> v.chargeback_fee_minor
        ORDER BY 2""")
    for what, txn, charge, order_id, amount, fee, currency, version_id, expected in rows:
        diff = fee - expected
        label = labels[version_id]
        if what == "charge":
            why = (f"Fee on {txn} ({money(amount, currency)}) is {money(fee, currency)}; {label} says "
                   f"{money(expected, currency)}, a difference of {money(diff, currency)}.")
        else:
            why = (f"Chargeback fee on {txn} is {money(fee, currency)}; {label} says {money(expected, currency)}, "
                   f"a difference of {money(diff, currency)}.")
        refs = refs_make(transaction=txn, charge=charge, order=order_id)
        breaks.append(BreakItem(engine.FEE_MISMATCH, diff, currency, refs, why, contract_version=label,
                                contract_version_id=version_id))


def _payout_temps(tenant_id: int, as_of_day: int) -> None:
    p = {"t": tenant_id, "d": as_of_day}
    # A payout's amount: its own payout row when the export has one, else the net of the
    # rows paid out in it (refunds and dispute debits netted inside are part of that net).
    # Its date: the export's payout date, else (a settlement batch without one) its last row.
    _x("""CREATE TEMP TABLE rt_payout AS
        SELECT y.*, COALESCE(v.payout_delay_days, 0) AS delay FROM (
          SELECT payout_id, currency, COALESCE(MAX(payout_day), MAX(created_day)) AS payout_day,
                 CAST(CASE WHEN SUM(CASE WHEN type = 'payout' THEN 1 ELSE 0 END) > 0
                      THEN -SUM(CASE WHEN type = 'payout' THEN net_minor ELSE 0 END)
                      ELSE SUM(net_minor) END AS BIGINT) AS amount_minor
          FROM rt_prov WHERE payout_id <> '' GROUP BY payout_id, currency) y
        LEFT JOIN rt_cv v ON v.currency = y.currency AND y.payout_day >= v.effective_day
             AND y.payout_day < v.until_day
        WHERE y.amount_minor > 0""")
    _x("CREATE INDEX rt_payout_id ON rt_payout (payout_id)")
    # The same statement line in two overlapping statements (same bank reference, day and
    # amount) counts once; lines without a bank reference are all kept.
    _x("""CREATE TEMP TABLE rt_bank AS
        SELECT id, booking_day, amount_minor, currency, reference, remittance, bank_reference FROM (
          SELECT b.*, ROW_NUMBER() OVER (
                   PARTITION BY CASE WHEN b.bank_reference <> '' THEN b.bank_reference ELSE CAST(b.id AS TEXT) END,
                                b.booking_day, b.amount_minor, b.currency
                   ORDER BY b.id DESC) AS rn
          FROM reconciliation_bankrow b WHERE b.tenant_id = %(t)s AND b.booking_day <= %(d)s
               AND b.amount_minor > 0) x
        WHERE rn = 1""", p)
    # Temporary tables have no keys: every column a later join or NOT EXISTS looks up gets
    # an index, or those lookups would scan (quadratic in payouts x bank lines).
    _x("CREATE INDEX rt_bank_id ON rt_bank (id)")
    _x("CREATE INDEX rt_bank_amount ON rt_bank (currency, amount_minor)")
    _x("CREATE TEMP TABLE rt_token (bank_id BIGINT, token VARCHAR(255), currency VARCHAR(3))")
    # Words of each credit's references, so a payout id inside free text joins on equality.
    # One pass over the credits (linear), not a comparison of every credit with every payout.
    tokens: list[tuple[int, str, str]] = []
    for bank_id, reference, remittance, bank_reference, currency in _q(
            "SELECT id, reference, remittance, bank_reference, currency FROM rt_bank"):
        words: set[str] = set()
        for word in TOKEN.findall(f"{reference} {remittance} {bank_reference}"):
            words.update(w for w in (word, *word.split("-")) if len(w) >= MIN_TOKEN)
        tokens.extend((bank_id, w, currency) for w in sorted(words))
    if tokens:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":  # a temporary table: COPY (2.4 s -> 0.1 s at 20k credits)
                with cursor.copy("COPY rt_token (bank_id, token, currency) FROM STDIN") as copy:
                    for token in tokens:
                        copy.write_row(token)
            else:
                cursor.executemany("INSERT INTO rt_token (bank_id, token, currency) VALUES (%s, %s, %s)", tokens)
    _x("CREATE INDEX rt_token_t ON rt_token (token)")
    _analyze("rt_payout", "rt_bank", "rt_token")
    _x("CREATE TEMP TABLE rt_pmatch (payout_id VARCHAR(128), bank_id BIGINT, how VARCHAR(16))")
    _x("CREATE INDEX rt_pmatch_p ON rt_pmatch (payout_id)")
    _x("CREATE INDEX rt_pmatch_b ON rt_pmatch (bank_id)")


def _leg2(breaks: list[BreakItem], as_of_day: int) -> list[dict[str, Any]]:
    """Payouts to bank credits; returns the payouts still in transit."""
    window = settings.PAYPILOT_RECON_DATE_WINDOW_DAYS
    # 1. By reference. A payout whose credits each name only it (one credit, or one payout
    #    split over several lines) compares the sum of those credits; a credit naming several
    #    payouts that no other credit names compares the sum of those payouts.
    _x("""CREATE TEMP TABLE rt_link AS
        SELECT DISTINCT t.bank_id, p.payout_id FROM rt_token t
        JOIN rt_payout p ON p.payout_id = t.token AND p.currency = t.currency""")
    try:
        _x("""INSERT INTO rt_pmatch (payout_id, bank_id, how)
            SELECT payout_id, bank_id, 'reference' FROM (
              SELECT l.payout_id, l.bank_id, COUNT(*) OVER (PARTITION BY l.bank_id) AS nb,
                     COUNT(*) OVER (PARTITION BY l.payout_id) AS np
              FROM rt_link l) x
            WHERE nb = 1 OR np = 1""")
    finally:
        _x("DROP TABLE IF EXISTS rt_link")
    # 2. By amount within the date window, one to one (mutual nearest by date, then ids).
    _x("""INSERT INTO rt_pmatch (payout_id, bank_id, how)
        SELECT payout_id, bank_id, 'amount' FROM (
          SELECT p.payout_id, b.id AS bank_id,
                 ROW_NUMBER() OVER (PARTITION BY p.payout_id ORDER BY b.booking_day - p.payout_day, b.id) AS rp,
                 ROW_NUMBER() OVER (PARTITION BY b.id ORDER BY b.booking_day - p.payout_day, p.payout_id) AS rb
          FROM rt_payout p JOIN rt_bank b ON b.currency = p.currency AND b.amount_minor = p.amount_minor
               AND b.booking_day >= p.payout_day AND b.booking_day <= p.payout_day + p.delay + %(w)s
          WHERE NOT EXISTS (SELECT 1 FROM rt_pmatch m WHERE m.payout_id = p.payout_id)
            AND NOT EXISTS (SELECT 1 FROM rt_pmatch m WHERE m.bank_id = b.id)) x
        WHERE rp = 1 AND rb = 1""", {"w": window})
    _analyze("rt_pmatch")
    # 3. A run of consecutive unmatched payouts (by date) summing exactly to one credit:
    #    cumulative sums turn "sums to" into an equality join (on an index of cum_before).
    _x("""CREATE TEMP TABLE rt_cum AS
        SELECT payout_id, currency, payout_day, delay, amount_minor, cum_after, cum_after - amount_minor AS cum_before,
               ord
        FROM (SELECT payout_id, currency, payout_day, delay, amount_minor,
               ROW_NUMBER() OVER (PARTITION BY currency ORDER BY payout_day, payout_id) AS ord,
               CAST(SUM(amount_minor) OVER (PARTITION BY currency ORDER BY payout_day, payout_id
                                            ROWS UNBOUNDED PRECEDING) AS BIGINT) AS cum_after
        FROM rt_payout p WHERE NOT EXISTS (SELECT 1 FROM rt_pmatch m WHERE m.payout_id = p.payout_id)) c""")
    try:
        _x("CREATE INDEX rt_cum_c ON rt_cum (currency, cum_before)")
        _x("CREATE INDEX rt_cum_d ON rt_cum (currency, payout_day)")
        _analyze("rt_cum")
        # From the credits still open (few once references and amounts have matched): the
        # planner otherwise walked every payout and, for each, every credit of its currency.
        _x("""CREATE TEMP TABLE rt_bopen AS SELECT b.id, b.booking_day, b.amount_minor, b.currency
            FROM rt_bank b WHERE NOT EXISTS (SELECT 1 FROM rt_pmatch m WHERE m.bank_id = b.id)""")
        _analyze("rt_bopen")
        groups = _q("""
            SELECT b.id, i.ord, j.ord, j.currency FROM rt_bopen b
            JOIN rt_cum j ON j.currency = b.currency AND j.payout_day <= b.booking_day
                 AND j.payout_day >= b.booking_day - j.delay - %(w)s
            JOIN rt_cum i ON i.currency = j.currency AND i.ord < j.ord
                 AND i.cum_before = j.cum_after - b.amount_minor
                 AND i.payout_day + i.delay + %(w)s >= b.booking_day
            ORDER BY b.booking_day, b.id, j.ord - i.ord, i.ord""", {"w": window})
        used_banks: set[int] = set()
        used: set[tuple[str, int]] = set()
        chosen: list[tuple[int, str, int, int]] = []
        for bank_id, first, last, currency in groups:
            span = {(currency, o) for o in range(first, last + 1)}
            if bank_id in used_banks or span & used:
                continue
            used_banks.add(bank_id)
            used |= span
            chosen.append((bank_id, currency, first, last))
        for bank_id, currency, first, last in chosen:
            _x("""INSERT INTO rt_pmatch (payout_id, bank_id, how)
                SELECT payout_id, %(b)s, 'group' FROM rt_cum
                WHERE currency = %(c)s AND ord BETWEEN %(f)s AND %(l)s""",
               {"b": bank_id, "c": currency, "f": first, "l": last})
    finally:
        _x("DROP TABLE IF EXISTS rt_cum")
        _x("DROP TABLE IF EXISTS rt_bopen")
    # Compare each connected set: payouts of one credit, or credits of one payout.
    rows = _q("""
        SELECT m.payout_id, m.bank_id, p.amount_minor, b.amount_minor, p.currency, b.bank_reference,
               COUNT(*) OVER (PARTITION BY m.bank_id) AS payouts_of_bank
        FROM rt_pmatch m JOIN rt_payout p ON p.payout_id = m.payout_id JOIN rt_bank b ON b.id = m.bank_id
        ORDER BY m.payout_id, m.bank_id""")
    by_payout: dict[str, dict[str, Any]] = {}
    by_bank: dict[int, dict[str, Any]] = {}
    for payout_id, bank_id, p_amount, b_amount, currency, bank_ref, payouts_of_bank in rows:
        bank_label = bank_ref or f"bank line {bank_id}"
        if payouts_of_bank == 1:
            entry = by_payout.setdefault(payout_id, {"amount": p_amount, "currency": currency, "banks": {}})
            entry["banks"][bank_label] = b_amount
        else:
            entry = by_bank.setdefault(bank_id, {"amount": b_amount, "currency": currency, "label": bank_label,
                                                 "payouts": {}})
            entry["payouts"][payout_id] = p_amount
    for payout_id, e in sorted(by_payout.items()):
        received = sum(e["banks"].values())
        _payout_compare(breaks, payouts={payout_id: e["amount"]}, banks=e["banks"], received=received,
                        expected=e["amount"], currency=e["currency"])
    for _, e in sorted(by_bank.items()):
        _payout_compare(breaks, payouts=e["payouts"], banks={e["label"]: e["amount"]}, received=e["amount"],
                        expected=sum(e["payouts"].values()), currency=e["currency"])
    in_transit: list[dict[str, Any]] = []
    for payout_id, amount, currency, payout_day, delay in _q("""
            SELECT payout_id, amount_minor, currency, payout_day, delay FROM rt_payout p
            WHERE NOT EXISTS (SELECT 1 FROM rt_pmatch m WHERE m.payout_id = p.payout_id)
            ORDER BY payout_day, payout_id"""):
        expected_by = EPOCH + timedelta(days=payout_day + delay)
        paid = EPOCH + timedelta(days=payout_day)
        if payout_day + delay < as_of_day:
            breaks.append(BreakItem(engine.PAYOUT_MISSING, amount, currency, refs_make(payout=payout_id),
                                    f"Payout {payout_id} of {money(amount, currency)} paid out on {paid} was due in "
                                    f"the bank by {expected_by} ({delay}-day delay) and has not arrived."))
        else:
            in_transit.append({"payout_id": payout_id, "amount_minor": amount, "currency": currency,
                               "payout_date": paid.isoformat(), "expected_by": expected_by.isoformat()})
    return in_transit


def _payout_compare(
    breaks: list[BreakItem], *, payouts: dict[str, int], banks: dict[str, int], received: int, expected: int,
    currency: str,
) -> None:
    diff = received - expected
    if diff == 0:
        return
    names = ", ".join(sorted(payouts))
    kind = engine.PAYOUT_SHORT if diff < 0 else engine.PAYOUT_OVER
    word = "short" if diff < 0 else "over"
    breaks.append(BreakItem(kind, diff, currency, refs_make(payout=list(payouts), bank=list(banks)),
                            f"Payout {names} of {money(expected, currency)} arrived as {money(received, currency)}, "
                            f"{money(abs(diff), currency)} {word}."))


def _disputes(tenant_id: int, as_of_day: int, breaks: list[BreakItem]) -> list[dict[str, Any]]:
    """Open disputes with evidence due within 7 days, each linked to a break on the same
    charge or, failing that, on the same order."""
    rows = _q(f"""
        SELECT d.dispute_id, d.charge_id, d.amount_minor, d.currency, d.evidence_due_by, c.order_id
        FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.dispute_id ORDER BY x.known_at DESC, x.id DESC) AS rn
              FROM reconciliation_disputerow x WHERE x.tenant_id = %(t)s) d
        LEFT JOIN rt_cap c ON c.charge_key = d.charge_id
        WHERE d.rn = 1 AND d.evidence_due_by IS NOT NULL AND d.status NOT IN {_in(DISPUTE_CLOSED)}
        ORDER BY d.evidence_due_by, d.dispute_id""", {"t": tenant_id})
    by_charge: dict[str, BreakItem] = {}
    by_order: dict[str, BreakItem] = {}
    for b in breaks:  # breaks are in their final order: the first (most money) wins
        for charge in b.refs["charge"]:
            by_charge.setdefault(charge, b)
        for order in b.refs["order"]:
            by_order.setdefault(order, b)
    due: list[dict[str, Any]] = []
    seen: set[str] = set()
    for dispute_id, charge_id, amount, currency, due_by, order_id in rows:
        if dispute_id in seen:
            continue
        seen.add(dispute_id)
        due_date = due_by if isinstance(due_by, date) else date.fromisoformat(str(due_by)[:10])
        days_left = day_number(due_date) - as_of_day
        if not 0 <= days_left <= engine.DISPUTE_DUE_DAYS:
            continue
        linked = by_charge.get(charge_id) or (by_order.get(order_id) if order_id else None)
        due.append({
            "dispute_id": dispute_id, "charge_id": charge_id, "due_by": due_date.isoformat(), "days_left": days_left,
            "amount_minor": amount, "currency": currency, "requires_human_decision": True,
            "linked_break": None if linked is None else {"kind": linked.kind, "refs": linked.refs},
        })
    return due


def run_compute(*, tenant: Tenant, as_of: date, progress: Progress | None = None) -> tuple[dict[str, Any], list]:
    """The review for `tenant` as of `as_of`: (result JSON data, breaks). Reads only; call
    inside `tenant_context(tenant)`."""
    step = progress or (lambda _label: None)
    as_of_day = day_number(as_of)
    labels = {c.pk: c.label for c in ContractVersion.objects.filter(tenant=tenant)}
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        # Each step sorts or hashes up to a million rows; at the default 4 MB every one
        # spills to disk. Transaction-local, so it ends with the run.
        _x(f"SET LOCAL work_mem = '{RUN_WORK_MEM}'")
    _drop_temps()
    try:
        step("orders and captures")
        _build_temps(tenant.pk, as_of_day)
        breaks: list[BreakItem] = []
        orders, matched = _leg1(breaks)
        step("fees")
        _fees(breaks, labels)
        step("payouts and bank")
        _payout_temps(tenant.pk, as_of_day)
        in_transit = _leg2(breaks, as_of_day)
        breaks.sort(key=BreakItem.sort_key)
        step("disputes")
        disputes = _disputes(tenant.pk, as_of_day, breaks)
    finally:
        _drop_temps()
    money_in_breaks: dict[str, int] = {}
    for b in breaks:
        money_in_breaks[b.currency] = money_in_breaks.get(b.currency, 0) + abs(b.amount_minor)
    result = {
        "as_of": as_of.isoformat(),
        "match_rate": round(matched / orders, 4) if orders else None,
        "orders": orders,
        "money_in_breaks_minor": dict(sorted(money_in_breaks.items())),
        "breaks": [b.as_json() for b in breaks],
        "in_transit": in_transit,
        "disputes_due": disputes,
        "todo": engine.todo_build(breaks=breaks, disputes=disputes),
    }
    return result, breaks


def run_create(*, tenant: Tenant, as_of: date, actor: str, progress: Progress | None = None) -> tuple[Run, bool]:
    """Compute and store the review (one transaction with its audit row); returns (run, created).

    The same inputs and as-of date return the stored run, after checking the recomputed
    JSON is byte-identical (it must be: a difference raises RuntimeError)."""
    with tenant_context(tenant), transaction.atomic():
        digest = input_digest(tenant=tenant, as_of=as_of)
        result, breaks = run_compute(tenant=tenant, as_of=as_of, progress=progress)
        text = engine.result_dump(result)
        existing = Run.objects.filter(tenant=tenant, as_of=as_of, input_digest=digest).first()
        if existing is not None:
            if existing.result_json != text:
                raise RuntimeError(f"run {existing.pk} recomputed to different bytes: the engine is not deterministic")
            return existing, False
        run = Run.objects.create(
            tenant=tenant, as_of=as_of, input_digest=digest, result_json=text,
            result_sha256=hashlib.sha256(text.encode()).hexdigest(), match_rate=result["match_rate"],
            breaks_count=len(breaks), actor=actor,
        )
        carried = _previous_resolutions(tenant=tenant, run=run)
        Break.objects.bulk_create([
            Break(tenant=tenant, run=run, position=i, kind=b.kind, amount_minor=b.amount_minor, currency=b.currency,
                  refs=b.refs, explanation=b.explanation, contract_version_id=b.contract_version_id,
                  **carried.get(_break_key(b.kind, b.amount_minor, b.currency, b.refs), {}))
            for i, b in enumerate(breaks)
        ])
        audit_record(event="reconciliation.run.created", tenant=tenant, actor=actor,
                     detail={"recon_run": run.pk, "as_of": as_of.isoformat(), "input_digest": digest,
                             "count": len(breaks)})
    return run, True


def _break_key(kind: str, amount: int, currency: str, refs: dict[str, Any]) -> str:
    return json.dumps([kind, amount, currency, refs], sort_keys=True)


def _previous_resolutions(*, tenant: Tenant, run: Run) -> dict[str, dict[str, Any]]:
    """Assignment and resolution of the same break in the tenant's latest earlier run, so a
    new file does not reopen what a person already closed."""
    previous = Run.objects.filter(tenant=tenant).exclude(pk=run.pk).order_by("-created_at", "-pk").first()
    if previous is None:
        return {}
    carried: dict[str, dict[str, Any]] = {}
    for b in previous.breaks.exclude(status=Break.Status.OPEN, assignee__isnull=True):
        carried[_break_key(b.kind, b.amount_minor, b.currency, b.refs)] = {
            "status": b.status, "assignee_id": b.assignee_id, "resolution_note": b.resolution_note,
            "resolved_at": b.resolved_at, "resolved_by": b.resolved_by,
        }
    return carried


def break_assign(*, brk: Break, user: Any, actor: str) -> None:
    with tenant_context(brk.tenant_id), transaction.atomic():
        locked = Break.objects.select_for_update().get(pk=brk.pk)
        locked.assignee = user
        locked.save(update_fields=["assignee"])
        audit_record(event="reconciliation.break.assigned", tenant=locked.tenant, actor=actor,
                     detail={"recon_break": locked.pk, "kind": locked.kind,
                             "approver": None if user is None else user.pk})


def break_resolve(*, brk: Break, note: str, actor: str) -> bool:
    """Resolve with a note (required). Imported rows are never touched. False when it was
    already resolved (a repeated click)."""
    from paypilot.services import pii_hash

    if not note.strip():
        raise ValueError("a resolution needs a note")
    with tenant_context(brk.tenant_id), transaction.atomic():
        locked = Break.objects.select_for_update().get(pk=brk.pk)
        if locked.status == Break.Status.RESOLVED:
            return False
        locked.status = Break.Status.RESOLVED
        locked.resolution_note = note.strip()
        locked.resolved_at = timezone.now()
        locked.resolved_by = actor
        locked.save(update_fields=["status", "resolution_note", "resolved_at", "resolved_by"])
        audit_record(event="reconciliation.break.resolved", tenant=locked.tenant, actor=actor,
                     detail={"recon_break": locked.pk, "kind": locked.kind, "note_hash": pii_hash(note)})
    brk.status = locked.status
    return True
