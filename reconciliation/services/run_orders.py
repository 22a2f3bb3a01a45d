"""Leg 1 of a run: orders to captures, and each capture's and dispute's fee against its contract."""

from __future__ import annotations

from django.db import connection

from reconciliation import engine
from reconciliation.engine import BreakItem, Capture, money, refs_make
from reconciliation.services.run_sql import analyze, execute, latest_of, query, sql_in

# Order statuses that expect no capture: such orders are left out of leg 1.
ORDER_STATUSES_WITHOUT_CAPTURE = ("cancelled", "canceled", "voided", "void", "failed", "pending")


def captures_build(tenant_id: int, as_of_day: int) -> None:
    """The temporary tables of leg 1: latest orders, provider rows, contract versions, captures."""
    p = {"t": tenant_id, "d": as_of_day}
    execute(f"""CREATE TEMP TABLE rt_orders AS
        SELECT order_id, amount_minor, currency, payment_reference, status
        {latest_of("reconciliation_orderrow", "order_id", "ordered_day")}
          AND status NOT IN {sql_in(ORDER_STATUSES_WITHOUT_CAPTURE)}""", p)
    execute("CREATE INDEX rt_orders_id ON rt_orders (order_id)")
    execute("CREATE INDEX rt_orders_ref ON rt_orders (payment_reference)")
    analyze("rt_orders")
    execute(f"""CREATE TEMP TABLE rt_prov AS
        SELECT transaction_id, created_day, type, amount_minor, fee_minor, net_minor, currency,
               CASE WHEN charge_id <> '' THEN charge_id WHEN type = 'charge' THEN transaction_id ELSE '' END
                 AS charge_key,
               order_reference, payout_id, payout_day
        {latest_of("reconciliation_providerrow", "transaction_id", "created_day")}""", p)
    # No index on (type, charge_key): rt_cap's three reads of rt_prov are whole-table scans
    # either way, and building it cost 0.3-0.4 s of CPU per million rows on SQLite for
    # nothing (same result bytes; PostgreSQL's backend unchanged within noise).
    analyze("rt_prov")
    execute("""CREATE TEMP TABLE rt_cv AS
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
    execute("""CREATE TEMP TABLE rt_cap AS
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
    execute("CREATE INDEX rt_cap_order ON rt_cap (order_id)")
    execute("""UPDATE rt_cap SET eff = 1 WHERE transaction_id IN (
        SELECT transaction_id FROM (
          SELECT transaction_id,
                 ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY created_day, transaction_id) AS rn
          FROM rt_cap WHERE order_id IN (SELECT order_id FROM rt_cap WHERE order_id IS NOT NULL
                                         GROUP BY order_id HAVING MAX(eff) = 0)) f
        WHERE rn = 1)""")
    analyze("rt_cv", "rt_cap")  # the index on charge_key: by the disputes leg, only when there are disputes


def orders_match(breaks: list[BreakItem]) -> tuple[int, int]:
    """Orders to captures. Returns (orders, matched)."""
    # An order matches when exactly one counting capture (eff = 1) has its amount and
    # currency; the rows of the orders that do not come back with their captures, in order.
    if connection.vendor == "sqlite":
        # Each order's captures summed once (rt_osum); only the orders that do not match
        # are joined back to their captures: 3.5 s on the 1M-order bench, where the two
        # full joins below (one windowed) took 9.8 s.
        execute("""CREATE TEMP TABLE rt_osum AS
            SELECT order_id, COUNT(*) AS n, SUM(captured) AS s, MIN(currency) AS ccy
            FROM rt_cap WHERE eff = 1 AND order_id IS NOT NULL GROUP BY order_id""")
        execute("CREATE INDEX rt_osum_id ON rt_osum (order_id)")
        analyze("rt_osum")
        orders, matched = query("""
            SELECT COUNT(*), COALESCE(SUM(CASE WHEN s.n = 1 AND s.s = o.amount_minor AND s.ccy = o.currency
                                          THEN 1 ELSE 0 END), 0)
            FROM rt_orders o LEFT JOIN rt_osum s ON s.order_id = o.order_id""")[0]
        rows = query("""
            SELECT o.order_id, o.amount_minor, o.currency, c.transaction_id, c.charge_key, c.captured, c.currency
            FROM rt_orders o LEFT JOIN rt_osum s ON s.order_id = o.order_id
                 LEFT JOIN rt_cap c ON c.order_id = o.order_id AND c.eff = 1
            WHERE NOT (COALESCE(s.n, 0) = 1 AND s.s = o.amount_minor AND s.ccy = o.currency)
            ORDER BY o.order_id, c.created_day, c.transaction_id""")
    else:  # PostgreSQL hashes both joins (5.4 s; the form above cost it 12.7 s)
        orders, matched = query("""
            SELECT COUNT(*),
                   COALESCE(SUM(CASE WHEN n = 1 AND s = amount_minor AND ccy = currency THEN 1 ELSE 0 END), 0)
            FROM (SELECT o.order_id, o.amount_minor, o.currency, COUNT(c.charge_key) AS n,
                         SUM(c.captured) AS s, MIN(c.currency) AS ccy
                  FROM rt_orders o LEFT JOIN rt_cap c ON c.order_id = o.order_id AND c.eff = 1
                  GROUP BY o.order_id, o.amount_minor, o.currency) x""")[0]
        rows = query("""
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
    for txn, charge, captured, currency in query("""
            SELECT transaction_id, charge_key, captured, currency FROM rt_cap
            WHERE order_id IS NULL AND refunded < captured ORDER BY transaction_id"""):
        breaks.append(BreakItem(engine.CAPTURE_WITHOUT_ORDER, captured, currency,
                                refs_make(transaction=txn, charge=charge),
                                f"Capture {txn} of {money(captured, currency)} matches no order."))
    return int(orders), int(matched)


def fees_check(breaks: list[BreakItem], labels: dict[int, str]) -> None:
    """Each capture's fee against percent x amount (half up) + fixed of the version in
    force on the capture date; each dispute's fee against the chargeback fee."""
    rows = query("""
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
