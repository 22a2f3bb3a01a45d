"""Ledger writes, one module per concern; import them from here.

- `transitions`: the state table, the one locking transition service, invoice-key locks,
  and the moves to churned, exhausted, messaged and clicked;
- `customers`: customer upserts (one or many) and admin edits;
- `payments`: the invoice upsert from failed payments (one or many), recoveries on
  payment and paid-before-failure markers.
"""

from ledger.services.customers import CustomerInput, customer_update, customer_upsert, customer_upsert_many
from ledger.services.payments import (
    FailureInput,
    FailureResult,
    PaymentResult,
    invoice_record_failure,
    invoice_record_failures,
    invoice_record_payment,
)
from ledger.services.transitions import (
    ALLOWED_MOVES,
    CAUSE_EMAIL_SENT,
    CAUSE_LINK_CLICKED,
    CAUSE_PAYMENT_FAILED,
    CAUSE_PAYMENT_SUCCEEDED,
    CAUSE_RETRIES_EXHAUSTED,
    CAUSE_SUBSCRIPTION_CANCELLED,
    REASON_HOLDOUT,
    REASON_ILLEGAL_MOVE,
    IllegalTransition,
    invoice_mark_churned,
    invoice_mark_clicked,
    invoice_mark_exhausted,
    invoice_mark_messaged,
    invoice_transition,
)

__all__ = [
    "ALLOWED_MOVES", "CAUSE_EMAIL_SENT", "CAUSE_LINK_CLICKED", "CAUSE_PAYMENT_FAILED", "CAUSE_PAYMENT_SUCCEEDED",
    "CAUSE_RETRIES_EXHAUSTED", "CAUSE_SUBSCRIPTION_CANCELLED", "REASON_HOLDOUT", "REASON_ILLEGAL_MOVE",
    "CustomerInput", "FailureInput", "FailureResult", "IllegalTransition", "PaymentResult", "customer_update",
    "customer_upsert", "customer_upsert_many", "invoice_mark_churned", "invoice_mark_clicked",
    "invoice_mark_exhausted", "invoice_mark_messaged", "invoice_record_failure", "invoice_record_failures",
    "invoice_record_payment", "invoice_transition",
]
