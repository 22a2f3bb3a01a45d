"""Braintree's Transaction Level Fee Report (CSV) to canonical provider rows.

Layout: Braintree Control Panel, Reports > Transaction Level Fee Report (developer.paypal.com/
braintree/articles/control-panel/reporting/transaction-level-fee-report), its column list:
one row per settled transaction (Sale, Credit) or dispute event, amounts in major units of
the Settlement Currency, the fee components beside their total, the disbursement date on
which the merchant account's balance of the day is paid to the bank. A disbursement is one
payout per merchant account and date: its id here is "<merchant account>-<disbursement date>".
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

from reconciliation.formats.base import (
    REASON_BAD_AMOUNT,
    REASON_BAD_CURRENCY,
    REASON_BAD_DATE,
    REASON_BAD_TYPE,
    REASON_MISSING_VALUE,
    REASON_MIXED_CURRENCIES,
    REASON_WRONG_COLUMNS,
    FileRefused,
    Parsed,
)
from reconciliation.formats.cells import amount_to_minor, currency_normalise
from reconciliation.formats.csvtext import csv_rows, normalise_header, text_stream
from reconciliation.formats.registry import Reader

FILE_FORMAT = "braintree_fees"
REQUIRED = frozenset({
    "transaction id", "transaction type", "merchant account id", "settlement date", "disbursement date",
    "settlement currency iso code", "settlement amount", "total fee amount",
})
# Transaction Type -> canonical type.
TYPES = {"sale": "charge", "credit": "refund", "refund": "refund", "dispute": "dispute", "chargeback": "dispute",
         "dispute won": "dispute_reversal", "dispute reversal": "dispute_reversal"}
DATE_FORMATS = ("%Y-%m-%d", "%m/%d/%Y")  # the report's ISO dates; a spreadsheet re-save's US dates


def is_braintree_fees(header: list[str]) -> bool:
    return REQUIRED <= {normalise_header(h) for h in header}


def _day(text: str) -> date:
    value = text.strip()[:10]
    for pattern in DATE_FORMATS:
        try:
            return datetime.strptime(value, pattern).date()
        except ValueError:
            continue
    raise ValueError(f"{text!r} is not a date (YYYY-MM-DD)")


def parse_braintree_fees(text: str | io.TextIOBase) -> Parsed:
    header, body = csv_rows(text, ",")
    return Parsed(kind="provider", file_format=FILE_FORMAT, rows=_rows(header, body))


def _rows(header: list[str], body: Iterator[tuple[int, list[str]]]) -> Iterator[dict[str, Any]]:
    index = {normalise_header(h): i for i, h in enumerate(header)}
    width = len(header)
    account_currency: dict[str, str] = {}  # a merchant account settles in one currency
    for line, cells in body:
        if len(cells) != width:
            raise FileRefused(REASON_WRONG_COLUMNS, f"{len(cells)} cells, the header has {width}", line=line)

        def cell(name: str, cells: list[str] = cells) -> str:
            i = index.get(name, -1)
            return cells[i].strip() if i >= 0 else ""

        try:
            currency = currency_normalise(cell("settlement currency iso code"))
        except ValueError as exc:
            raise FileRefused(REASON_BAD_CURRENCY, str(exc), line=line,
                              column="Settlement Currency ISO Code") from exc
        account = cell("merchant account id")
        if account_currency.setdefault(account, currency) != currency:
            raise FileRefused(REASON_MIXED_CURRENCIES, f"merchant account {account} settles in "
                              f"{account_currency[account]}; this row is {currency}", line=line,
                              column="Settlement Currency ISO Code")
        given = cell("transaction type")
        kind = TYPES.get(given.lower())
        if kind is None:
            raise FileRefused(REASON_BAD_TYPE, f"transaction type {given!r} is not Sale, Credit or a dispute",
                              line=line, column="Transaction Type")
        column = "Settlement Date"
        try:
            settled = _day(cell("settlement date"))
            column = "Disbursement Date"
            disbursed = _day(cell("disbursement date")) if cell("disbursement date") else None
        except ValueError as exc:
            raise FileRefused(REASON_BAD_DATE, str(exc), line=line, column=column) from exc
        column = "Settlement Amount"
        try:
            amount = abs(amount_to_minor(cell("settlement amount"), currency))
            column = "Total Fee Amount"
            fee = amount_to_minor(cell("total fee amount") or "0", currency)
        except ValueError as exc:
            raise FileRefused(REASON_BAD_AMOUNT, str(exc), line=line, column=column) from exc
        # The report writes every amount unsigned; a credit or a dispute takes money back.
        signed = amount if kind in ("charge", "dispute_reversal") else -amount
        transaction_id = cell("transaction id")
        if not transaction_id:
            raise FileRefused(REASON_MISSING_VALUE, "no Transaction ID", line=line, column="Transaction ID")
        original = cell("original transaction id")
        yield {
            "line": line,
            "transaction_id": transaction_id if kind == "charge" else f"{transaction_id}-{kind}",
            "created_at": datetime(settled.year, settled.month, settled.day, tzinfo=UTC),
            "type": kind,
            "amount_minor": signed,
            "fee_minor": fee,
            "net_minor": signed - fee,
            "currency": currency,
            "charge_id": transaction_id if kind == "charge" else (original or transaction_id),
            "order_reference": cell("order id"),
            "payout_id": f"{account}-{disbursed.isoformat()}" if disbursed else "",
            "payout_date": disbursed,
        }


READER = Reader(
    file_format=FILE_FORMAT, kind="provider", order=32,
    recognises=lambda sample: is_braintree_fees(sample.header),
    read=lambda sample: parse_braintree_fees(text_stream(sample.data)),
    wrong_kind="a Braintree transaction level fee report imports only as kind provider",
)
