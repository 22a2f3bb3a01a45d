"""Ledger writes, one module per concern; import them from here.

- `transitions`: the state table, the one locking transition service, invoice-key locks,
  and the moves to churned, exhausted, voided, messaged and clicked;
- `customers`: customer upserts (one or many) and admin edits;
- `payments`: the invoice upsert from failed payments (one or many), recoveries on
  payment (provider times, currency checked) and paid-before-failure markers;
- `refunds`: refunds of recovered invoices (by refund id or cumulative total, capped);
- `inconsistencies`: events refused or capped because they contradict the ledger.
"""

from ledger.services.customers import CustomerInput, customer_update, customer_upsert, customer_upsert_many
from ledger.services.inconsistencies import OUTCOME_CURRENCY_MISMATCH, inconsistency_record
from ledger.services.payments import (
    FailureInput,
    FailureResult,
    PaymentResult,
    invoice_record_failure,
    invoice_record_failures,
    invoice_record_payment,
)
from ledger.services.refunds import RefundResult, invoice_record_refund
from ledger.services.transitions import (
    ALLOWED_MOVES,
    CAUSE_EMAIL_SENT,
    CAUSE_INVOICE_VOIDED,
    CAUSE_LINK_CLICKED,
    CAUSE_PAYMENT_FAILED,
    CAUSE_PAYMENT_SUCCEEDED,
    CAUSE_RETRIES_EXHAUSTED,
    CAUSE_SUBSCRIPTION_CANCELLED,
    REASON_HOLDOUT,
    REASON_ILLEGAL_MOVE,
    IllegalTransition,
    invoice_close_hook_register,
    invoice_mark_churned,
    invoice_mark_clicked,
    invoice_mark_exhausted,
    invoice_mark_messaged,
    invoice_record_void,
    invoice_transition,
)

__all__ = [
    "ALLOWED_MOVES", "CAUSE_EMAIL_SENT", "CAUSE_INVOICE_VOIDED", "OUTCOME_CURRENCY_MISMATCH", "RefundResult",
    "inconsistency_record", "invoice_record_refund", "invoice_record_void",
    "CAUSE_LINK_CLICKED", "CAUSE_PAYMENT_FAILED", "CAUSE_PAYMENT_SUCCEEDED",
    "CAUSE_RETRIES_EXHAUSTED", "CAUSE_SUBSCRIPTION_CANCELLED", "REASON_HOLDOUT", "REASON_ILLEGAL_MOVE",
    "CustomerInput", "FailureInput", "invoice_close_hook_register",
    "FailureResult", "IllegalTransition", "PaymentResult", "customer_update",
    "customer_upsert", "customer_upsert_many", "invoice_mark_churned", "invoice_mark_clicked",
    "invoice_mark_exhausted", "invoice_mark_messaged", "invoice_record_failure", "invoice_record_failures",
    "invoice_record_payment", "invoice_transition",
]
