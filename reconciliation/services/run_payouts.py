"""Leg 2 of a run: payouts to bank credits, by reference, by amount, then by runs of payouts summing to one credit."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection

from reconciliation import engine
from reconciliation.engine import BreakItem, money, refs_make
from reconciliation.formats import EPOCH
from reconciliation.services.run_sql import analyze, execute, query

# Reference words: ids with hyphens whole (ADY-BATCH-000123) and their parts.
TOKEN = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")
MIN_TOKEN = 6


def payouts_build(tenant_id: int, as_of_day: int) -> None:
    """The temporary tables of leg 2: payouts, bank credits and the words of their references."""
    p = {"t": tenant_id, "d": as_of_day}
    # A payout's amount: its own payout row when the export has one, else the net of the
    # rows paid out in it (refunds and dispute debits netted inside are part of that net).
    # Its date: the export's payout date, else (a settlement batch without one) its last row.
    execute("""CREATE TEMP TABLE rt_payout AS
        SELECT y.*, COALESCE(v.payout_delay_days, 0) AS delay FROM (
          SELECT payout_id, currency, COALESCE(MAX(payout_day), MAX(created_day)) AS payout_day,
                 CAST(CASE WHEN SUM(CASE WHEN type = 'payout' THEN 1 ELSE 0 END) > 0
                      THEN -SUM(CASE WHEN type = 'payout' THEN net_minor ELSE 0 END)
                      ELSE SUM(net_minor) END AS BIGINT) AS amount_minor
          FROM rt_prov WHERE payout_id <> '' GROUP BY payout_id, currency) y
        LEFT JOIN rt_cv v ON v.currency = y.currency AND y.payout_day >= v.effective_day
             AND y.payout_day < v.until_day
        WHERE y.amount_minor > 0""")
    execute("CREATE INDEX rt_payout_id ON rt_payout (payout_id)")
    # The same statement line in two overlapping statements (same bank reference, day and
    # amount) counts once; lines without a bank reference are all kept.
    # A credit converted from another currency matches its payout on the amount instructed
    # in that currency (`amount_minor`, `currency` here); what was booked stays beside it
    # for the FX check (run_fx).
    execute("""CREATE TEMP TABLE rt_bank AS
        SELECT id, booking_day,
               CASE WHEN fx THEN original_amount_minor ELSE amount_minor END AS amount_minor,
               CASE WHEN fx THEN original_currency ELSE currency END AS currency,
               amount_minor AS booked_minor, currency AS booked_currency, fx_rate,
               reference, remittance, bank_reference FROM (
          SELECT b.*, (b.original_currency <> '' AND b.original_amount_minor IS NOT NULL) AS fx, ROW_NUMBER() OVER (
                   PARTITION BY CASE WHEN b.bank_reference <> '' THEN b.bank_reference ELSE CAST(b.id AS TEXT) END,
                                b.booking_day, b.amount_minor, b.currency
                   ORDER BY b.id DESC) AS rn
          FROM reconciliation_bankrow b WHERE b.tenant_id = %(t)s AND b.booking_day <= %(d)s
               AND b.amount_minor > 0) x
        WHERE rn = 1""", p)
    # Temporary tables have no keys: every column a later join or NOT EXISTS looks up gets
    # an index, or those lookups would scan (quadratic in payouts x bank lines).
    execute("CREATE INDEX rt_bank_id ON rt_bank (id)")
    execute("CREATE INDEX rt_bank_amount ON rt_bank (currency, amount_minor)")
    execute("CREATE TEMP TABLE rt_token (bank_id BIGINT, token VARCHAR(255), currency VARCHAR(3))")
    # Words of each credit's references, so a payout id inside free text joins on equality.
    # One pass over the credits (linear), not a comparison of every credit with every payout.
    tokens: list[tuple[int, str, str]] = []
    for bank_id, reference, remittance, bank_reference, currency in query(
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
    execute("CREATE INDEX rt_token_t ON rt_token (token)")
    analyze("rt_payout", "rt_bank", "rt_token")
    execute("CREATE TEMP TABLE rt_pmatch (payout_id VARCHAR(128), bank_id BIGINT, how VARCHAR(16))")
    execute("CREATE INDEX rt_pmatch_p ON rt_pmatch (payout_id)")
    execute("CREATE INDEX rt_pmatch_b ON rt_pmatch (bank_id)")


def payouts_match(breaks: list[BreakItem], as_of_day: int) -> list[dict[str, Any]]:
    """Payouts to bank credits; returns the payouts still in transit."""
    window = settings.PAYPILOT_RECON_DATE_WINDOW_DAYS
    # 1. By reference. A payout whose credits each name only it (one credit, or one payout
    #    split over several lines) compares the sum of those credits; a credit naming several
    #    payouts that no other credit names compares the sum of those payouts.
    execute("""CREATE TEMP TABLE rt_link AS
        SELECT DISTINCT t.bank_id, p.payout_id FROM rt_token t
        JOIN rt_payout p ON p.payout_id = t.token AND p.currency = t.currency""")
    try:
        execute("""INSERT INTO rt_pmatch (payout_id, bank_id, how)
            SELECT payout_id, bank_id, 'reference' FROM (
              SELECT l.payout_id, l.bank_id, COUNT(*) OVER (PARTITION BY l.bank_id) AS nb,
                     COUNT(*) OVER (PARTITION BY l.payout_id) AS np
              FROM rt_link l) x
            WHERE nb = 1 OR np = 1""")
    finally:
        execute("DROP TABLE IF EXISTS rt_link")
    # 2. By amount within the date window, one to one (mutual nearest by date, then ids).
    execute("""INSERT INTO rt_pmatch (payout_id, bank_id, how)
        SELECT payout_id, bank_id, 'amount' FROM (
          SELECT p.payout_id, b.id AS bank_id,
                 ROW_NUMBER() OVER (PARTITION BY p.payout_id ORDER BY b.booking_day - p.payout_day, b.id) AS rp,
                 ROW_NUMBER() OVER (PARTITION BY b.id ORDER BY b.booking_day - p.payout_day, p.payout_id) AS rb
          FROM rt_payout p JOIN rt_bank b ON b.currency = p.currency AND b.amount_minor = p.amount_minor
               AND b.booking_day >= p.payout_day AND b.booking_day <= p.payout_day + p.delay + %(w)s
          WHERE NOT EXISTS (SELECT 1 FROM rt_pmatch m WHERE m.payout_id = p.payout_id)
            AND NOT EXISTS (SELECT 1 FROM rt_pmatch m WHERE m.bank_id = b.id)) x
        WHERE rp = 1 AND rb = 1""", {"w": window})
    analyze("rt_pmatch")
    # 3. A run of consecutive unmatched payouts (by date) summing exactly to one credit:
    #    cumulative sums turn "sums to" into an equality join (on an index of cum_before).
    execute("""CREATE TEMP TABLE rt_cum AS
        SELECT payout_id, currency, payout_day, delay, amount_minor, cum_after, cum_after - amount_minor AS cum_before,
               ord
        FROM (SELECT payout_id, currency, payout_day, delay, amount_minor,
               ROW_NUMBER() OVER (PARTITION BY currency ORDER BY payout_day, payout_id) AS ord,
               CAST(SUM(amount_minor) OVER (PARTITION BY currency ORDER BY payout_day, payout_id
                                            ROWS UNBOUNDED PRECEDING) AS BIGINT) AS cum_after
        FROM rt_payout p WHERE NOT EXISTS (SELECT 1 FROM rt_pmatch m WHERE m.payout_id = p.payout_id)) c""")
    try:
        execute("CREATE INDEX rt_cum_c ON rt_cum (currency, cum_before)")
        execute("CREATE INDEX rt_cum_d ON rt_cum (currency, payout_day)")
        analyze("rt_cum")
        # From the credits still open (few once references and amounts have matched): the
        # planner otherwise walked every payout and, for each, every credit of its currency.
        execute("""CREATE TEMP TABLE rt_bopen AS SELECT b.id, b.booking_day, b.amount_minor, b.currency
            FROM rt_bank b WHERE NOT EXISTS (SELECT 1 FROM rt_pmatch m WHERE m.bank_id = b.id)""")
        analyze("rt_bopen")
        groups = query("""
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
            execute("""INSERT INTO rt_pmatch (payout_id, bank_id, how)
                SELECT payout_id, %(b)s, 'group' FROM rt_cum
                WHERE currency = %(c)s AND ord BETWEEN %(f)s AND %(l)s""",
               {"b": bank_id, "c": currency, "f": first, "l": last})
    finally:
        execute("DROP TABLE IF EXISTS rt_cum")
        execute("DROP TABLE IF EXISTS rt_bopen")
    # Compare each connected set: payouts of one credit, or credits of one payout.
    rows = query("""
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
    for payout_id, amount, currency, payout_day, delay in query("""
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
