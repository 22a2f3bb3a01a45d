"""PayPal's Settlement Report (STL) to canonical provider rows.

Layout: PayPal "Settlement Report Specification" (developer.paypal.com/docs/reports/sftp-reports/
settlement-report/) and its transaction event codes (developer.paypal.com/docs/reports/reference/
tcodes/). A CSV of typed records, the type in the first column: RH/FH/SH report, file and
section headers, CH the column header, SB one transaction, SF/SC/RF/RC/FF footers and counts.
Amounts are integers in the currency's minor unit with a separate CR/DR column; dates are
"YYYY/MM/DD HH:MM:SS +hhmm". A withdrawal to the bank (event codes T04xx) is the payout.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from reconciliation.formats.base import (
    REASON_BAD_AMOUNT,
    REASON_BAD_CURRENCY,
    REASON_BAD_DATE,
    REASON_BAD_TYPE,
    REASON_COUNT_MISMATCH,
    REASON_MISSING_COLUMN,
    REASON_MISSING_VALUE,
    REASON_MIXED_CURRENCIES,
    REASON_WRONG_COLUMNS,
    FileRefused,
    Parsed,
)
from reconciliation.formats.cells import currency_normalise, minor_int
from reconciliation.formats.csvtext import normalise_header, text_stream
from reconciliation.formats.registry import Reader

FILE_FORMAT = "paypal_stl"
RECORD_TYPES = frozenset({"RH", "FH", "SH", "CH", "SB", "SF", "SC", "RF", "RC", "FF"})
# Columns of the CH record that are read (normalised); the rest are optional.
REQUIRED = ("transaction id", "transaction event code", "transaction initiation date",
            "transaction debit or credit", "gross transaction amount", "gross transaction currency")
# Event code (its first three characters, or the whole code) -> canonical type.
EVENT_TYPES: dict[str, str] = {
    "T00": "charge",  # PayPal account-to-account payments (T0000-T0099: checkout, subscriptions, ...)
    "T07": "charge",  # card deposits (direct card payments)
    "T1107": "refund",  # payment refund
    "T1106": "dispute",  # payment reversal, initiated by PayPal
    "T1201": "dispute",  # chargeback
    "T1202": "dispute_reversal",  # chargeback reversal
    "T01": "fee",  # non-payment-related fees
    "T04": "payout",  # withdrawal from the PayPal balance to a bank account
}


def looks_like_paypal_settlement(head: str) -> bool:
    """The first record is a report header (RH) and a column header (CH) names the STL columns."""
    lines = head.splitlines()
    if not lines or next(csv.reader(lines[:1]), [""])[0].strip() != "RH":
        return False
    for cells in csv.reader(lines):
        if cells and cells[0].strip() == "CH":
            return set(REQUIRED) <= {normalise_header(c) for c in cells}
    return False


def _event_type(code: str) -> str:
    return EVENT_TYPES.get(code) or EVENT_TYPES.get(code[:3]) or "adjustment"


def _when(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%Y/%m/%d %H:%M:%S %z").astimezone(UTC)


def parse_paypal_settlement(text: str | io.TextIOBase) -> Parsed:
    reader = csv.reader(io.StringIO(text) if isinstance(text, str) else text)
    return Parsed(kind="provider", file_format=FILE_FORMAT, rows=_rows(reader))


def _rows(reader: Any) -> Iterator[dict[str, Any]]:
    index: dict[str, int] | None = None
    width = 0
    body_rows = 0
    counted = False
    for cells in reader:
        line = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        record = cells[0].strip()
        if record not in RECORD_TYPES:
            raise FileRefused(REASON_BAD_TYPE, f"record type {record[:8]!r} is not one of the report's",
                              line=line, column="record type")
        if record == "CH":
            index = {normalise_header(h): i for i, h in enumerate(cells)}
            width = len(cells)
            missing = [c for c in REQUIRED if c not in index]
            if missing:
                raise FileRefused(REASON_MISSING_COLUMN, f"the column header has no {', '.join(missing)}",
                                  line=line, column=missing[0])
            continue
        if record == "RC":
            # The report's own count of SB rows: a cut file is refused, not half imported.
            count = cells[1].strip() if len(cells) > 1 else ""
            if not count.isdigit() or int(count) != body_rows:
                raise FileRefused(REASON_COUNT_MISMATCH, f"the report counts {count or 'no'} rows, "
                                  f"the file has {body_rows}", line=line, column="RC")
            counted = True
            continue
        if record != "SB":
            continue
        if index is None:
            raise FileRefused(REASON_MISSING_COLUMN, "a transaction row (SB) before the column header (CH)",
                              line=line)
        if len(cells) != width:
            raise FileRefused(REASON_WRONG_COLUMNS, f"{len(cells)} cells, the header has {width}", line=line)
        body_rows += 1
        yield _row(cells, index, line)
    if not counted:
        raise FileRefused(REASON_COUNT_MISMATCH, "no report count (RC): the file is cut short")


def _row(cells: list[str], index: dict[str, int], line: int) -> dict[str, Any]:
    def cell(name: str) -> str:
        i = index.get(name, -1)
        return cells[i].strip() if i >= 0 else ""

    try:
        currency = currency_normalise(cell("gross transaction currency"))
    except ValueError as exc:
        raise FileRefused(REASON_BAD_CURRENCY, str(exc), line=line, column="Gross Transaction Currency") from exc
    fee_currency = cell("fee currency")
    if fee_currency and fee_currency.upper() != currency:
        raise FileRefused(REASON_MIXED_CURRENCIES, f"gross in {currency} but the fee in {fee_currency}",
                          line=line, column="Fee Currency")
    try:
        created = _when(cell("transaction initiation date"))
    except ValueError as exc:
        raise FileRefused(REASON_BAD_DATE, str(exc), line=line, column="Transaction Initiation Date") from exc
    column = "Gross Transaction Amount"
    try:
        gross = minor_int(cell("gross transaction amount"), _sign(cell("transaction debit or credit")))
        column = "Fee Amount"
        # A fee debited (DR) is a cost: a positive canonical fee, as Stripe's.
        fee = -minor_int(cell("fee amount") or "0", _sign(cell("fee debit or credit") or "DR"))
    except ValueError as exc:
        raise FileRefused(REASON_BAD_AMOUNT, str(exc), line=line, column=column) from exc
    transaction_id = cell("transaction id")
    if not transaction_id:
        raise FileRefused(REASON_MISSING_VALUE, "no Transaction ID", line=line, column="Transaction ID")
    kind = _event_type(cell("transaction event code"))
    reference = cell("paypal reference id") if cell("paypal reference id type").upper() == "TXN" else ""
    return {
        "line": line,
        "transaction_id": transaction_id,
        "created_at": created,
        "type": kind,
        "amount_minor": gross,
        "fee_minor": fee,
        "net_minor": gross - fee,
        "currency": currency,
        # A refund or chargeback names the payment it reverses (reference type TXN).
        "charge_id": reference if kind != "charge" else transaction_id,
        "order_reference": cell("invoice id"),
        "payout_id": transaction_id if kind == "payout" else "",
        "payout_date": created.date() if kind == "payout" else None,
    }


def _sign(indicator: str) -> int:
    value = indicator.strip().upper()
    if value not in ("CR", "DR"):
        raise ValueError(f"debit or credit must be CR or DR, not {indicator!r}")
    return 1 if value == "CR" else -1


READER = Reader(
    file_format=FILE_FORMAT, kind="provider", order=16,
    recognises=lambda sample: looks_like_paypal_settlement(sample.head),
    read=lambda sample: parse_paypal_settlement(text_stream(sample.data)),
    wrong_kind="a PayPal settlement report imports only as kind provider",
)
