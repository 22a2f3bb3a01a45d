"""Refunds of recovered invoices: full or partial, idempotent by the provider's refund id or by
a cumulative refunded total, capped at what was recovered, audited in the same transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from ledger.models import Invoice, InvoiceRefund, LedgerInconsistency
from ledger.money import currency_normalise
from ledger.services.inconsistencies import OUTCOME_CURRENCY_MISMATCH, inconsistency_record
from ledger.services.transitions import _invoice_key_lock
from paypilot.models import Tenant
from paypilot.services import audit_record

# Outcomes of `invoice_record_refund` (snake_case, stored on the webhook event).
OUTCOME_REFUNDED = "refunded"  # a refund row stored, net recovered reduced
OUTCOME_REFUND_CAPPED = "refunded_capped"  # more than the remaining recovered amount: capped, recorded
OUTCOME_REFUND_DUPLICATE = "noop_refund_duplicate"  # this refund (or cumulative total) is stored already
OUTCOME_REFUND_STALE = "noop_refund_stale"  # a cumulative total not above what is stored (out of order)
OUTCOME_REFUND_UNKNOWN = "noop_refund_unknown_invoice"  # never seen failing: not a recovery, nothing to reduce
OUTCOME_REFUND_NOT_RECOVERED = "noop_refund_not_recovered"  # seen failing but not recovered here

# Separates the scope from the total in the refund_ref of a cumulative refund ("ch_1#500").
CUMULATIVE_SEPARATOR = "#"


@dataclass(frozen=True)
class RefundResult:
    invoice: Invoice | None  # None when the invoice was never seen failing
    outcome: str
    applied_minor: int = 0  # what this call took off the recovered amount


def invoice_record_refund(
    *,
    tenant: Tenant,
    provider: str,
    external_invoice_id: str,
    refund_ref: str,
    currency: str,
    amount_minor: int | None = None,
    cumulative_minor: int | None = None,
    occurred_at: datetime | None = None,
    event_ref: str = "",
) -> RefundResult:
    """Reduce a recovered invoice's net by a refund the provider reported.

    Give exactly one of `amount_minor` (this refund alone, deduplicated by `refund_ref`, the
    provider's refund id) or `cumulative_minor` (the total refunded so far under the scope
    `refund_ref`, e.g. a Stripe charge's `amount_refunded`: the new part is the total minus
    what is stored for that scope; a total not above it is stale).

    A refund larger than what remains recovered is capped at the remainder (net reaches zero,
    never below) and recorded as a `refund_exceeds_recovered` inconsistency. A refund in
    another currency is refused as a `currency_mismatch` inconsistency, the invoice untouched.
    A refund of an invoice never seen failing, or not recovered here, changes nothing
    (paid-before-failure invoices are not recoveries). Everything, with its audit event, in
    one transaction under the invoice key lock. Raises ValueError on bad input.
    """
    if (amount_minor is None) == (cumulative_minor is None):
        raise ValueError("give exactly one of amount_minor and cumulative_minor")
    given = amount_minor if amount_minor is not None else cumulative_minor
    if isinstance(given, bool) or not isinstance(given, int) or given < 0:
        raise ValueError("refund amounts must be non-negative integers in minor units")
    if amount_minor == 0:
        raise ValueError("a refund of nothing is not a refund: amount_minor must be positive")
    if not refund_ref or len(refund_ref) > 150:
        raise ValueError("refund_ref is required (at most 150 characters)")
    currency = currency_normalise(currency)
    stored_ref = refund_ref if cumulative_minor is None else f"{refund_ref}{CUMULATIVE_SEPARATOR}{cumulative_minor}"
    with transaction.atomic(), _invoice_key_lock(
        tenant_id=tenant.pk, provider=provider, external_invoice_id=external_invoice_id
    ):
        invoice = (
            Invoice.objects.select_for_update()
            .filter(tenant=tenant, provider=provider, external_invoice_id=external_invoice_id)
            .first()
        )
        if invoice is None:
            return RefundResult(invoice=None, outcome=OUTCOME_REFUND_UNKNOWN)
        if invoice.state != Invoice.State.RECOVERED:
            audit_record(event="ledger.invoice.refund_ignored", tenant=tenant, detail={
                "invoice_id": invoice.pk, "state": invoice.state, "reason": OUTCOME_REFUND_NOT_RECOVERED,
            })
            return RefundResult(invoice=invoice, outcome=OUTCOME_REFUND_NOT_RECOVERED)
        if InvoiceRefund.objects.filter(tenant=tenant, provider=provider, refund_ref=stored_ref).exists():
            return RefundResult(invoice=invoice, outcome=OUTCOME_REFUND_DUPLICATE)
        if currency != invoice.currency:
            inconsistency_record(invoice=invoice, kind=LedgerInconsistency.Kind.CURRENCY_MISMATCH,
                                 cause="refund", amount_minor=given, received_currency=currency,
                                 occurred_at=occurred_at, event_ref=event_ref)
            return RefundResult(invoice=invoice, outcome=OUTCOME_CURRENCY_MISMATCH)
        part = given if cumulative_minor is None else given - _scope_total(invoice, provider, refund_ref)
        if part <= 0:
            return RefundResult(invoice=invoice, outcome=OUTCOME_REFUND_STALE if cumulative_minor is not None
                                else OUTCOME_REFUND_DUPLICATE)
        return _apply(invoice, part=part, provider=provider, stored_ref=stored_ref, currency=currency,
                      occurred_at=occurred_at, event_ref=event_ref)


def _scope_total(invoice: Invoice, provider: str, scope: str) -> int:
    """What is stored already under a cumulative scope (rows "<scope>#<total>")."""
    total = InvoiceRefund.objects.filter(
        invoice=invoice, provider=provider, refund_ref__startswith=f"{scope}{CUMULATIVE_SEPARATOR}"
    ).aggregate(total=Sum("amount_minor"))["total"]
    return int(total or 0)


def _apply(
    invoice: Invoice, *, part: int, provider: str, stored_ref: str, currency: str,
    occurred_at: datetime | None, event_ref: str,
) -> RefundResult:
    remaining = invoice.recovered_minor - invoice.refunded_minor
    applied = min(part, remaining)
    if applied < part:
        # The provider says more went back than PayPilot saw paid (a refund of another
        # payment, a missed partial payment...): net goes to zero, never below, and a person
        # is told instead of the ledger guessing.
        inconsistency_record(invoice=invoice, kind=LedgerInconsistency.Kind.REFUND_EXCEEDS_RECOVERED,
                             cause="refund", amount_minor=part, received_currency=currency,
                             occurred_at=occurred_at, event_ref=event_ref)
    if applied > 0:
        InvoiceRefund.objects.create(
            tenant_id=invoice.tenant_id, invoice=invoice, provider=provider, refund_ref=stored_ref,
            amount_minor=applied, currency=currency, occurred_at=occurred_at or timezone.now(),
            event_ref=event_ref[:200],
        )
        invoice.refunded_minor += applied
        invoice.save(update_fields=["refunded_minor", "updated_at"])
        audit_record(event="ledger.invoice.refunded", tenant=invoice.tenant, detail={
            "invoice_id": invoice.pk, "amount_minor": applied, "currency": currency,
            "refunded_minor": invoice.refunded_minor, "recovered_minor": invoice.recovered_minor,
        })
    outcome = OUTCOME_REFUNDED if applied == part else OUTCOME_REFUND_CAPPED
    return RefundResult(invoice=invoice, outcome=outcome, applied_minor=applied)
