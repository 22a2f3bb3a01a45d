"""Ledger inconsistencies: an event the ledger refuses (or caps) because it contradicts what is
stored, recorded for a person to look at instead of being converted or guessed."""

from __future__ import annotations

from datetime import datetime

from ledger.models import Invoice, LedgerInconsistency
from paypilot.services import audit_record

# Outcome of a payment or refund refused because its currency is not the invoice's.
OUTCOME_CURRENCY_MISMATCH = "refused_currency_mismatch"


def inconsistency_record(
    *, invoice: Invoice, kind: str, cause: str, amount_minor: int | None, received_currency: str = "",
    occurred_at: datetime | None = None, event_ref: str = "",
) -> LedgerInconsistency:
    """Store one `LedgerInconsistency` about `invoice` and its audit event, inside the caller's
    transaction (the caller holds the invoice locked). `cause` says which kind of event was
    refused ("payment", "refund"); `amount_minor` is in `received_currency`'s minor unit."""
    row = LedgerInconsistency.objects.create(
        tenant_id=invoice.tenant_id, invoice=invoice, kind=kind, provider=invoice.provider,
        external_invoice_id=invoice.external_invoice_id, event_ref=event_ref[:200],
        expected_currency=invoice.currency, received_currency=received_currency or invoice.currency,
        amount_minor=amount_minor, occurred_at=occurred_at,
    )
    audit_record(event="ledger.invoice.inconsistency", tenant=invoice.tenant, detail={
        "invoice_id": invoice.pk, "inconsistency": row.pk, "kind": kind, "cause": cause,
        "expected_currency": row.expected_currency, "received_currency": row.received_currency,
        "amount_minor": amount_minor,
    })
    return row
