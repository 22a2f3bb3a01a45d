"""Writes of the dunning app: run a recovery, store its decision and Draft."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import transaction

from decisions.services import decision_record
from dunning.models import Draft
from dunning.pipeline import RecoveryInput, RecoveryState, run_pipeline
from dunning.selectors import CustomerRow
from ledger.models import Customer, Invoice
from paypilot.models import Tenant
from paypilot.services import audit_record

__all__ = ["RecoveryInput", "RecoveryResult", "draft_for_invoice", "run_recovery"]


@dataclass(frozen=True)
class RecoveryResult:
    payload: dict[str, Any]  # {diagnosis, risk, strategy, schedule, message, subject, locale, impact, ...}
    draft: Draft | None  # stored only when asked to
    state: RecoveryState

    def as_dict(self) -> dict[str, Any]:
        return self.payload


def _invoice_ref(event: RecoveryInput, invoice: Invoice | None) -> str:
    if invoice is not None:
        ref = invoice.external_invoice_id
        return ref if len(ref) <= 64 else f"ledger:{invoice.pk}"
    return (event.invoice_ref or event.customer_id)[:64]


def _store(state: RecoveryState, *, tenant: Tenant, invoice: Invoice | None) -> Draft:
    assert state.decision is not None and state.locale is not None
    with transaction.atomic():
        record = decision_record(tenant=tenant, invoice_ref=_invoice_ref(state.event, invoice),
                                 decision=state.decision, source="pipeline")
        verdict = state.guard_verdict.as_dict() if state.guard_verdict else {"ok": True, "reasons": []}
        draft = Draft.objects.create(
            tenant=tenant, invoice=invoice, decision=record, subject=state.subject[:300], body=state.body,
            diagnosis=state.diagnosis, locale=state.locale.used, source=state.source,
            fallback_used=state.fallback_used, guard_verdict=verdict,
        )
        audit_record(event="dunning.draft.created", tenant=tenant, detail={
            "draft": draft.pk, "decision": record.pk, "invoice": invoice.pk if invoice else None,
            "rule_fired": record.rule_fired, "source": draft.source, "fallback_used": draft.fallback_used,
            "locale": draft.locale,
        })
    return draft


def run_recovery(
    *,
    tenant: Tenant | None,
    event: RecoveryInput,
    invoice: Invoice | None = None,
    store: bool = False,
    customer: Customer | CustomerRow | None = None,
    customer_preloaded: bool = False,
    now: datetime | None = None,
) -> RecoveryResult:
    """Run the seven steps for one failed payment.

    With `store=True` (or an `invoice`) the decision is recorded through `decisions` and a
    `Draft` stored, both in one transaction; a decision that cannot be recorded raises and
    nothing is stored. `customer`/`customer_preloaded` let a batch skip the per-event lookup.
    Raises ValueError for a malformed currency or an attempt below 1.
    """
    if event.attempt < 1:
        raise ValueError("attempt must be at least 1")
    state = RecoveryState(event=event, tenant=tenant, now=(now or datetime.now(UTC)),
                          customer_record=customer, preloaded=customer_preloaded)
    run_pipeline(state)
    draft = None
    if store or invoice is not None:
        if tenant is None:
            raise ValueError("a stored recovery needs a tenant")
        draft = _store(state, tenant=tenant, invoice=invoice)
    return RecoveryResult(payload=state.result, draft=draft, state=state)


def draft_for_invoice(
    *, invoice: Invoice, provider_retry_at: datetime | None = None, provider_retry_source: str = "provider"
) -> Draft:
    """Run the pipeline for a ledger invoice, record the decision and store the Draft.

    Raises ValueError for a holdout invoice (never drafted) or one that is no longer open.
    """
    if invoice.arm == Invoice.Arm.HOLDOUT:
        raise ValueError("holdout invoices are never drafted")
    if not invoice.is_open:
        raise ValueError("the invoice is closed")
    customer = invoice.customer
    event = RecoveryInput(
        customer_id=customer.external_id if customer else invoice.provider_customer_id,
        amount_minor=invoice.amount_minor,
        currency=invoice.currency,
        failure_code=invoice.failure_code,
        attempt=max(1, invoice.attempt_count),
        provider_retry_at=provider_retry_at,
        provider_retry_source=provider_retry_source,
        invoice_ref=invoice.external_invoice_id,
    )
    result = run_recovery(tenant=invoice.tenant, event=event, invoice=invoice, customer=customer,
                          customer_preloaded=True)
    assert result.draft is not None
    return result.draft
