"""Writes of the dunning app: run a recovery, store its decision and Draft."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import transaction

from decisions.rules import action_drafts
from decisions.services import decision_rows_insert
from dunning.models import Draft
from dunning.pipeline import RecoveryInput, RecoveryState, run_pipeline
from dunning.selectors import CustomerRow
from ledger.models import Customer, Invoice
from ledger.money import currency_normalise
from paypilot.bulk import values_insert
from paypilot.models import Tenant
from paypilot.services import audit_record_many, audit_values

__all__ = [
    "DraftRequest", "RecoveryInput", "RecoveryResult", "StoredDraft", "draft_for_invoice", "drafts_for_invoices",
    "run_recovery",
]


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


@dataclass(frozen=True, slots=True)
class StoredDraft:
    """A Draft row just written, as the steps after it (approvals) read it: plain values
    instead of a model instance, which the drain would build only to serialise again."""

    id: int
    tenant_id: int
    invoice_id: int | None
    decision_id: int
    subject: str
    body: str
    source: str
    # The decision's own annual value at risk, when it recorded one (the approval's figure).
    annual_value_at_risk_minor: int | None


def _store(state: RecoveryState, *, tenant: Tenant, invoice: Invoice | None) -> Draft | None:
    stored = _store_many([(state, invoice)], tenant=tenant)[0]
    return _draft_model(stored)


def _draft_model(stored: StoredDraft | None) -> Draft | None:
    """The stored Draft as a model (with its decision and invoice), for the one-draft services."""
    if stored is None:
        return None
    return Draft.objects.select_related("decision", "invoice__customer").get(pk=stored.id)


def _store_many(items: list[tuple[RecoveryState, Invoice | None]], *, tenant: Tenant) -> list[StoredDraft | None]:
    """Record each state's decision and store its Draft, with one audit event per draft,
    in one transaction and one INSERT per table, from plain rows (no model instances).
    A decision whose action writes no email (`no_email`, from a tenant rule version) is
    recorded with no Draft: None in its place, audited as `dunning.draft.skipped`."""
    for state, _invoice in items:
        assert state.decision is not None and state.locale is not None
    with transaction.atomic():
        decisions = decision_rows_insert(
            tenant=tenant, source="pipeline",
            decisions=[(_invoice_ref(state.event, invoice), state.decision)  # type: ignore[misc]
                       for state, invoice in items],
            currencies=[currency_normalise(state.event.currency) for state, _ in items],
        )
        drafts: list[dict[str, Any]] = []
        audits: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []  # audited after the drafts created, as before
        for (state, invoice), decision in zip(items, decisions, strict=True):
            if not action_drafts(decision["action"]):
                skipped.append(audit_values(event="dunning.draft.skipped", tenant=tenant, detail={
                    "decision": decision["id"], "invoice": invoice.pk if invoice else None,
                    "rule_fired": decision["rule_fired"], "action": decision["action"],
                    "rules_version": decision["rules_version"]}))
                continue
            verdict = state.guard_verdict.as_dict() if state.guard_verdict else {"ok": True, "reasons": []}
            drafts.append({
                "tenant_id": tenant.pk, "invoice_id": invoice.pk if invoice else None,
                "decision_id": decision["id"], "subject": state.subject[:300], "body": state.body,
                "diagnosis": state.diagnosis, "locale": state.locale.used,  # type: ignore[union-attr]
                "source": state.source, "fallback_used": state.fallback_used, "guard_verdict": verdict,
                "dropped_fields": state.dropped_fields,
            })
        draft_ids = iter(values_insert(Draft, drafts))
        by_decision = {draft["decision_id"]: draft for draft in drafts}
        out: list[StoredDraft | None] = []
        for decision in decisions:
            draft = by_decision.get(decision["id"])
            if draft is None:
                out.append(None)
                continue
            draft["id"] = next(draft_ids)
            out.append(StoredDraft(
                id=draft["id"], tenant_id=tenant.pk, invoice_id=draft["invoice_id"], decision_id=decision["id"],
                subject=draft["subject"], body=draft["body"], source=draft["source"],
                annual_value_at_risk_minor=decision["annual_value_at_risk_minor"],
            ))
            audits.append(audit_values(event="dunning.draft.created", tenant=tenant, detail={
                "draft": draft["id"], "decision": decision["id"], "invoice": draft["invoice_id"],
                "rule_fired": decision["rule_fired"], "source": draft["source"],
                "fallback_used": draft["fallback_used"], "locale": draft["locale"],
                **({"dropped_fields": draft["dropped_fields"]} if draft["dropped_fields"] else {}),
            }))
        audit_record_many(audits + skipped)
    return out


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
) -> Draft | None:
    """Run the pipeline for a ledger invoice, record the decision and store the Draft.

    Raises ValueError for a holdout invoice (never drafted) or one that is no longer open.
    """
    request = DraftRequest(invoice=invoice, provider_retry_at=provider_retry_at,
                           provider_retry_source=provider_retry_source)
    return _draft_model(drafts_for_invoices(tenant=invoice.tenant, requests=[request])[0])


@dataclass(frozen=True)
class DraftRequest:
    """One invoice to draft for, with the provider's own retry date when it has one."""

    invoice: Invoice
    provider_retry_at: datetime | None = None
    provider_retry_source: str = "provider"
    # The card network's answer as the provider passed it on ("" when it did not).
    card_brand: str = ""
    network_advice_code: str = ""
    network_decline_code: str = ""


def drafts_for_invoices(*, tenant: Tenant, requests: list[DraftRequest]) -> list[StoredDraft | None]:
    """`draft_for_invoice` for many invoices of one tenant: the pipeline runs per invoice,
    then the decisions, drafts and audit events are stored one INSERT per table, in one
    transaction. Returns the stored drafts in order (`StoredDraft`: plain values), None
    where the tenant's rule version said `no_email` for the failure code (the decision is
    recorded, no draft written); raises ValueError (nothing stored) when any invoice is
    holdout, closed or another tenant's."""
    states: list[tuple[RecoveryState, Invoice | None]] = []
    now = datetime.now(UTC)
    for request in requests:
        invoice = request.invoice
        if invoice.tenant_id != tenant.pk:
            raise ValueError("the invoice belongs to another tenant")
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
            provider_retry_at=request.provider_retry_at,
            provider_retry_source=request.provider_retry_source,
            invoice_ref=invoice.external_invoice_id,
            card_brand=request.card_brand,
            network_advice_code=request.network_advice_code,
            network_decline_code=request.network_decline_code,
        )
        state = RecoveryState(event=event, tenant=tenant, now=now, customer_record=customer, preloaded=True)
        run_pipeline(state)
        states.append((state, invoice))
    return _store_many(states, tenant=tenant)
