"""What every file format's reader shares: reason codes, canonical fields per kind, FileRefused, Parsed.

Three ways in: Stripe's itemized balance / payout reconciliation report, an ISO 20022 camt.053
statement or an MT940 statement (each recognised by its own reader in this package), and any
other CSV through a confirmed `Layout`. Every error carries the 1-based line, the column and a
reason code; the caller refuses the whole file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

# Reason codes (the JSON `reason` of a refused file).
REASON_BAD_AMOUNT = "bad_amount"
REASON_BAD_DATE = "bad_date"
REASON_BAD_CURRENCY = "bad_currency"
REASON_MISSING_VALUE = "missing_value"
REASON_BAD_TYPE = "bad_type"
REASON_BAD_ENCODING = "bad_encoding"
REASON_EMPTY_FILE = "empty_file"
REASON_XML_FORBIDDEN = "xml_forbidden"
REASON_XML_INVALID = "xml_invalid"
REASON_WRONG_COLUMNS = "wrong_number_of_columns"
REASON_MISSING_COLUMN = "missing_column"
REASON_MIXED_CURRENCIES = "mixed_currencies"  # one row, account or merchant account in two currencies
REASON_COUNT_MISMATCH = "count_mismatch"  # a trailer's count or control total disagrees with the file

EPOCH = date(1970, 1, 1)

# Canonical fields per kind (the contract); the first ones listed are required.
CANONICAL: dict[str, tuple[str, ...]] = {
    "orders": ("order_id", "ordered_at", "amount", "currency", "payment_reference", "customer_email", "status"),
    "provider": (
        "transaction_id", "created_at", "type", "amount", "fee", "net", "currency", "charge_id",
        "order_reference", "payout_id", "payout_date",
    ),
    "bank": ("booking_date", "value_date", "amount", "currency", "reference", "remittance", "bank_reference",
             # a credit converted from another currency: what was sent, in what, at what rate
             "original_amount", "original_currency", "exchange_rate"),
    "disputes": (
        "dispute_id", "charge_id", "amount", "currency", "reason", "status", "evidence_due_by", "created_at",
    ),
}
REQUIRED: dict[str, frozenset[str]] = {
    "orders": frozenset({"order_id", "ordered_at", "amount", "currency"}),
    "provider": frozenset({"transaction_id", "created_at", "type", "amount", "currency"}),
    "bank": frozenset({"booking_date", "amount", "currency"}),
    "disputes": frozenset({"dispute_id", "amount", "currency", "created_at"}),
}
DATE_FIELDS = frozenset({"ordered_at", "created_at", "payout_date", "booking_date", "value_date", "evidence_due_by"})
AMOUNT_FIELDS = frozenset({"amount", "fee", "net"})
PROVIDER_TYPES = frozenset(
    {"charge", "refund", "dispute", "dispute_reversal", "fee", "payout", "adjustment"}
)
# Other providers' words for the canonical types (lower case, spaces and _ removed), used
# when a layout gives no explicit translation. Adyen's settlement details report
# (Settled, Refunded, Chargeback, ChargebackReversed, MerchantPayout, InvoiceDeduction),
# PayPal's and Mollie's common English labels.
TYPE_SYNONYMS: dict[str, str] = {
    "charge": "charge", "payment": "charge", "sale": "charge", "settled": "charge", "capture": "charge",
    "captured": "charge",
    "refund": "refund", "refunded": "refund",
    "dispute": "dispute", "chargeback": "dispute",
    "disputereversal": "dispute_reversal", "chargebackreversed": "dispute_reversal",
    "fee": "fee", "invoicededuction": "fee",
    "payout": "payout", "merchantpayout": "payout", "transfer": "payout", "settlement": "payout",
    "adjustment": "adjustment", "balancetransfer": "adjustment",
}


class FileRefused(Exception):
    """The whole file is refused: `reason` is a code, `line`/`column` locate the first bad cell."""

    def __init__(self, reason: str, message: str, *, line: int | None = None, column: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.line = line
        self.column = column

    def as_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "message": self.message, "line": self.line, "column": self.column}


@dataclass(frozen=True)
class LayoutSpec:
    """What a confirmed layout says about a CSV: canonical field -> header, and how to read cells."""

    columns: dict[str, str]
    date_format: str
    decimal_separator: str = "."
    delimiter: str = ","
    # Optional per-field value translation, e.g. {"type": {"Settled": "charge"}}: another
    # provider's words for the canonical provider types.
    values: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class Parsed:
    """A file being read: rows are produced lazily (a million-row export never sits in
    memory as dicts), so a bad row raises FileRefused while the caller is inserting; the
    caller's transaction then rolls the whole file back."""

    kind: str
    file_format: str
    rows: Iterable[dict[str, Any]] = field(default_factory=list)
    # The same rows as canonical columns (`reconciliation.columnar`) when the fast reader
    # took the file; then `rows` is not read.
    columns: dict[str, Any] | None = None
