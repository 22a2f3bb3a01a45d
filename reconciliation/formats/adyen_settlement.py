"""Adyen's Settlement details report (CSV) to canonical provider rows.

Layout: Adyen Docs, "Settlement details report" (docs.adyen.com/reporting/settlement-reconciliation/
transaction-level/settlement-details-report), the report's column list and its record types
(Settled, Refunded, Chargeback, ChargebackReversed, MerchantPayout, Fee, InvoiceDeduction, ...).
Gross amounts are in the payment's currency (Gross Currency), the fee columns and the net
amounts in the settlement currency (Net Currency), all in major units. Every row of a batch
(Batch Number) is settled in one payout, which the report's own MerchantPayout row books.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from reconciliation.formats.base import (
    REASON_BAD_AMOUNT,
    REASON_BAD_CURRENCY,
    REASON_BAD_DATE,
    REASON_MISSING_VALUE,
    REASON_WRONG_COLUMNS,
    FileRefused,
    Parsed,
)
from reconciliation.formats.cells import amount_to_minor, currency_normalise
from reconciliation.formats.csvtext import csv_rows, normalise_header, text_stream
from reconciliation.formats.registry import Reader

REASON_MIXED_CURRENCIES = "mixed_currencies"
FILE_FORMAT = "adyen_settlement"

# Recognised when these are all in the header (normalised: lower case, single spaces).
REQUIRED = frozenset({
    "merchant account", "psp reference", "merchant reference", "creation date", "timezone", "type",
    "modification reference", "gross currency", "gross debit (gc)", "gross credit (gc)", "net currency",
    "net debit (nc)", "net credit (nc)", "batch number",
})
# The fee columns, each in the net currency; absent columns count as zero.
FEE_COLUMNS = ("commission (nc)", "markup (nc)", "scheme fees (nc)", "interchange (nc)")
# Record type -> canonical type (lower case); a type not listed is an adjustment, like Stripe's.
TYPES: dict[str, str] = {
    "settled": "charge", "settledbulk": "charge", "settledexternallywithinfo": "charge",
    "refunded": "refund", "refundedbulk": "refund", "refundedexternallywithinfo": "refund",
    "chargeback": "dispute", "secondchargeback": "dispute", "chargebackexternallywithinfo": "dispute",
    "chargebackreversed": "dispute_reversal", "chargebackreversedexternallywithinfo": "dispute_reversal",
    "fee": "fee", "invoicededuction": "fee", "paymentcost": "fee", "misccosts": "fee",
    "merchantpayout": "payout",
}
# Adyen writes the time zone of Creation Date as an abbreviation or an IANA name.
ZONES = {"CET": "Europe/Amsterdam", "CEST": "Europe/Amsterdam", "GMT": "UTC", "UTC": "UTC", "BST": "Europe/London",
         "EST": "America/New_York", "EDT": "America/New_York", "PST": "America/Los_Angeles",
         "PDT": "America/Los_Angeles", "AEST": "Australia/Sydney", "AEDT": "Australia/Sydney",
         "SGT": "Asia/Singapore"}


def is_adyen_settlement(header: list[str]) -> bool:
    return REQUIRED <= {normalise_header(h) for h in header}


def _when(text: str, zone: str) -> datetime:
    """"2026-11-03 10:00:04" in the row's TimeZone, as UTC."""
    try:
        tz = ZoneInfo(ZONES.get(zone.strip().upper(), zone.strip()))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {zone!r}") from exc
    return datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S").replace(tzinfo=tz).astimezone(UTC)


def parse_adyen_settlement(text: str | io.TextIOBase) -> Parsed:
    header, body = csv_rows(text, ",")
    return Parsed(kind="provider", file_format=FILE_FORMAT, rows=_rows(header, body))


def _rows(header: list[str], body: Iterator[tuple[int, list[str]]]) -> Iterator[dict[str, Any]]:
    index = {normalise_header(h): i for i, h in enumerate(header)}
    width = len(header)
    fees = [index[c] for c in FEE_COLUMNS if c in index]
    for line, cells in body:
        if len(cells) != width:
            raise FileRefused(REASON_WRONG_COLUMNS, f"{len(cells)} cells, the header has {width}", line=line)

        def cell(name: str, cells: list[str] = cells) -> str:
            return cells[index[name]].strip()

        record = cell("type")
        kind = TYPES.get(record.lower(), "adjustment")
        column = "Gross Currency"
        try:
            gross_ccy = currency_normalise(cell("gross currency")) if cell("gross currency") else ""
            column = "Net Currency"
            currency = currency_normalise(cell("net currency") or cell("gross currency"))
        except ValueError as exc:
            raise FileRefused(REASON_BAD_CURRENCY, str(exc), line=line, column=column) from exc
        if gross_ccy and gross_ccy != currency:
            # One canonical row holds one currency; a batch settled in another currency than
            # it was paid in needs the bank's FX line, not a silently mixed row.
            raise FileRefused(REASON_MIXED_CURRENCIES, f"gross in {gross_ccy} but settled in {currency}: "
                              "a row in two currencies is not imported", line=line, column="Net Currency")
        column = "Creation Date"
        try:
            created = _when(cell("creation date"), cell("timezone"))
        except ValueError as exc:
            raise FileRefused(REASON_BAD_DATE, str(exc), line=line, column=column) from exc
        try:
            column = "Gross Credit (GC)"
            gross = _amount(cell("gross credit (gc)"), currency) - _amount(cell("gross debit (gc)"), currency)
            column = "Net Credit (NC)"
            net = _amount(cell("net credit (nc)"), currency) - _amount(cell("net debit (nc)"), currency)
            column = "Commission (NC)"
            fee = sum(_amount(cells[i].strip(), currency) for i in fees)
        except ValueError as exc:
            raise FileRefused(REASON_BAD_AMOUNT, str(exc), line=line, column=column) from exc
        psp, modification = cell("psp reference"), cell("modification reference")
        batch = cell("batch number")
        merchant = cell("merchant account")
        # Adyen numbers batches per merchant account: the account makes the payout id unique.
        # A batch written as an id already (not a plain number) is kept as it is.
        payout_id = (f"{merchant}-batch-{batch}" if batch.isdigit() else batch) if batch else ""
        if kind == "payout":
            # The payout row carries no payment: its id is the batch's, its gross is its net.
            transaction_id = modification or payout_id
            gross, fee = net, 0
        elif kind == "charge":
            transaction_id = modification or psp
        else:
            # A refund or chargeback may carry the payment's reference only, and batch costs
            # none: the record type (and the line, for costs) keeps each row its own id,
            # never the capture's, which a later row with the same id would replace.
            reference = modification or psp
            transaction_id = f"{record}-{reference}" if reference else f"{payout_id or 'nobatch'}-{record}-{line}"
        if not (psp or modification) and kind in ("charge", "refund", "dispute", "dispute_reversal"):
            raise FileRefused(REASON_MISSING_VALUE, "no Psp Reference nor Modification Reference", line=line,
                              column="Psp Reference")
        yield {
            "line": line,
            "transaction_id": transaction_id,
            "created_at": created,
            "type": kind,
            "amount_minor": gross,
            "fee_minor": fee,
            "net_minor": net,
            "currency": currency,
            # Refunds and chargebacks carry the payment's Psp Reference: their charge.
            "charge_id": psp if kind != "payout" else "",
            "order_reference": cell("merchant reference") if kind != "payout" else "",
            "payout_id": payout_id,
            "payout_date": created.date() if kind == "payout" else None,
        }


def _amount(text: str, currency: str) -> int:
    return amount_to_minor(text, currency) if text else 0


READER = Reader(
    file_format=FILE_FORMAT, kind="provider", order=31,
    recognises=lambda sample: is_adyen_settlement(sample.header),
    read=lambda sample: parse_adyen_settlement(text_stream(sample.data)),
    wrong_kind="an Adyen settlement details report imports only as kind provider",
)
