"""Reader of Stripe's itemized balance change / payout reconciliation report (provider rows)."""

from __future__ import annotations

import functools
import io
from collections.abc import Iterator
from datetime import date
from typing import Any

from reconciliation.formats.base import (
    REASON_BAD_AMOUNT,
    REASON_BAD_CURRENCY,
    REASON_BAD_DATE,
    REASON_MISSING_VALUE,
    REASON_WRONG_COLUMNS,
    FileRefused,
    Parsed,
)
from reconciliation.formats.cells import amount_to_minor, currency_normalise, parse_when
from reconciliation.formats.csvtext import csv_rows, normalise_header, text_stream
from reconciliation.formats.registry import Reader

# Column names of Stripe's itemized balance change / payout reconciliation reports
# (docs.stripe.com/reports/report-types and /reports/reporting-categories). Recognised
# when these are all present; the rest of the report's columns are optional.
STRIPE_REQUIRED = frozenset(
    {"balance_transaction_id", "created_utc", "currency", "gross", "fee", "net", "reporting_category"}
)
# reporting_category -> canonical type. Partial-capture reversals stay tied to their charge
# (as an adjustment carrying its charge_id) so the run sees the captured amount.
STRIPE_CATEGORIES: dict[str, str] = {
    "charge": "charge",
    "refund": "refund",
    "refund_failure": "adjustment",
    "dispute": "dispute",
    "dispute_reversal": "dispute_reversal",
    "fee": "fee",
    "payout": "payout",
    "payout_reversal": "adjustment",
    "partial_capture_reversal": "adjustment",
}


def is_stripe_report(header: list[str]) -> bool:
    return STRIPE_REQUIRED <= {normalise_header(h) for h in header}


@functools.lru_cache(maxsize=4096)
def _date_part(text: str) -> date | None:
    """The date of a report timestamp; cached, payout dates repeat on thousands of rows."""
    value = text.strip()
    return parse_when(value, "iso").date() if value else None


def parse_stripe_report(text: str | io.TextIOBase) -> Parsed:
    header, body = csv_rows(text, ",")
    return Parsed(kind="provider", file_format="stripe_report", rows=_stripe_rows(header, body))


def _stripe_rows(header: list[str], body: Iterator[tuple[int, list[str]]]) -> Iterator[dict[str, Any]]:
    index = {normalise_header(h): i for i, h in enumerate(header)}
    width = len(header)
    # Column positions looked up once; -1 for an optional column the report leaves out.
    at = {name: index.get(name, -1) for name in (
        "balance_transaction_id", "created_utc", "currency", "gross", "fee", "net", "reporting_category",
        "source_id", "charge_id", "automatic_payout_id", "automatic_payout_effective_at_utc",
        "payment_metadata[order_id]", "order_id")}
    (i_txn, i_created, i_currency, i_gross, i_fee, i_net, i_category, i_source, i_charge, i_payout, i_payout_at,
     i_meta_order, i_order) = at.values()
    currencies: dict[str, str] = {}

    def cell(cells: list[str], i: int) -> str:
        return cells[i].strip() if i >= 0 else ""

    for line, cells in body:
        if len(cells) != width:
            raise FileRefused(REASON_WRONG_COLUMNS, f"{len(cells)} cells, the header has {width}", line=line)
        column = "currency"
        try:
            raw_currency = cells[i_currency]
            currency = currencies.get(raw_currency) or currencies.setdefault(raw_currency,
                                                                             currency_normalise(raw_currency))
            kind = STRIPE_CATEGORIES.get(cells[i_category].strip(), "adjustment")
            column = "created_utc"
            created = parse_when(cells[i_created], "iso")
            column = "gross"
            gross = amount_to_minor(cells[i_gross] or "0", currency)
            column = "fee"
            fee = amount_to_minor(cells[i_fee] or "0", currency)
            column = "net"
            net = amount_to_minor(cells[i_net] or "0", currency)
            column = "automatic_payout_effective_at_utc"
            payout_date = _date_part(cell(cells, i_payout_at))
        except ValueError as exc:
            reason = REASON_BAD_CURRENCY if column == "currency" else (
                REASON_BAD_DATE if "utc" in column else REASON_BAD_AMOUNT)
            raise FileRefused(reason, str(exc), line=line, column=column) from exc
        source = cell(cells, i_source)
        charge_id = cell(cells, i_charge) or (source if kind == "charge" else "")
        payout_id = cell(cells, i_payout) or (source if kind == "payout" else "")
        if kind == "payout" and payout_date is None:
            payout_date = created.date()
        transaction_id = cells[i_txn].strip()
        if not transaction_id:
            raise FileRefused(REASON_MISSING_VALUE, "no balance_transaction_id", line=line,
                              column="balance_transaction_id")
        yield {
            "line": line,
            "transaction_id": transaction_id,
            "created_at": created,
            "type": kind,
            "amount_minor": gross,
            "fee_minor": fee,
            "net_minor": net,
            "currency": currency,
            "charge_id": charge_id,
            "order_reference": cell(cells, i_meta_order) or cell(cells, i_order),
            "payout_id": payout_id,
            "payout_date": payout_date,
        }


READER = Reader(
    file_format="stripe_report", kind="provider", order=30,
    recognises=lambda sample: is_stripe_report(sample.header),
    read=lambda sample: parse_stripe_report(text_stream(sample.data)),
    wrong_kind="a Stripe balance report imports only as kind provider",
)
