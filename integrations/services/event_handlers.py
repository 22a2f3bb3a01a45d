"""Each domain event's effect on the ledger, dunning and approvals: one handler per event class.

`HANDLERS` maps a domain event class to the function applying one event; `BATCH_HANDLERS`
those applied a run at a time (failed payments: one INSERT per table for the run). Every
handler runs inside the caller's transaction and returns the event's (status, outcome).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from dunning.services import DraftRequest
from integrations import handoff
from integrations.domain import (
    DomainEvent,
    Ignored,
    InvoiceVoided,
    PaymentFailed,
    PaymentRefunded,
    PaymentSucceeded,
    RetriesExhausted,
    SubscriptionCancelled,
)
from integrations.models import WebhookEvent
from ledger.models import Invoice
from ledger.services import (
    CustomerInput,
    FailureInput,
    FailureResult,
    customer_upsert_many,
    invoice_mark_churned,
    invoice_mark_exhausted,
    invoice_record_failures,
    invoice_record_payment,
    invoice_record_refund,
    invoice_record_void,
)
from paypilot.disputes import DisputeReport, dispute_report
from paypilot.models import Tenant

Status = WebhookEvent.Status
FINAL_STATUSES = frozenset({Status.PROCESSED, Status.IGNORED})
Result = tuple[str, str]  # (status, outcome)
Translated = tuple[WebhookEvent, DomainEvent]

# Outcomes (snake_case, stored on the event and answered to duplicates).
OUTCOME_HOLDOUT = "recorded_holdout"  # holdout arm: recorded, never drafted
OUTCOME_RETRY_SCHEDULED = "recorded_retry_scheduled"  # the provider retries; no email drafted
OUTCOME_ALREADY_PAID = "noop_already_paid"  # lost the race: paid before this failure
OUTCOME_INVOICE_CLOSED = "noop_invoice_closed"  # lost the race: invoice already closed
OUTCOME_OUT_OF_ORDER = "noop_out_of_order"  # a newer resource_version was applied already
OUTCOME_NO_OPEN_INVOICE = "noop_no_open_invoice"  # cancellation with nothing open
# The tenant was suspended (or closed) when the failure was applied: recorded in the
# ledger, nothing drafted. `tenants resume --draft-open` looks for this outcome.
OUTCOME_TENANT_INACTIVE = "recorded_tenant_inactive"
# Drafted later, by `tenants resume --draft-open`, through the same hand-off.
OUTCOME_DRAFTED_ON_RESUME = "draft_opened_on_resume"
# Recorded while suspended, and the invoice closed (paid, churned...) before the resume.
OUTCOME_CLOSED_BEFORE_RESUME = "noop_closed_before_resume"
OUTCOME_NO_DISPUTE_SINK = "no_dispute_store"  # a dispute event, and no app stores disputes


def _ref(event: WebhookEvent) -> str:
    return f"{event.provider}:{event.event_key}"[:200]


def _record_failures(tenant: Tenant, run: list[tuple[WebhookEvent, PaymentFailed]]) -> list[FailureResult]:
    """Customers first (one upsert for the run), then the invoices, in one ledger call."""
    with_customer = [failed for _, failed in run if failed.provider_customer_id]
    customers = dict(zip(
        [failed.provider_customer_id for failed in with_customer],
        customer_upsert_many(tenant=tenant, customers=[
            CustomerInput(external_id=failed.provider_customer_id, name=failed.customer_name[:200],
                          email=failed.customer_email[:254], currency=failed.currency)
            for failed in with_customer
        ]),
        strict=True,
    ))
    return invoice_record_failures(tenant=tenant, failures=[
        FailureInput(
            provider=event.provider, external_invoice_id=failed.external_invoice_id,
            amount_minor=failed.amount_minor, currency=failed.currency, failure_code=failed.failure_code,
            attempt=failed.attempt, customer=customers.get(failed.provider_customer_id),
            subscription_id=failed.subscription_id, provider_customer_id=failed.provider_customer_id,
            hosted_invoice_url=failed.hosted_invoice_url, event_ref=_ref(event),
            occurred_at=failed.occurred_at,
        )
        for event, failed in run
    ])


_LOST_RACE = {"already_paid": OUTCOME_ALREADY_PAID, "closed_noop": OUTCOME_INVOICE_CLOSED}


def _on_payment_failed_many(run: list[Translated]) -> list[Result]:
    """Failed payments of distinct invoices and customers: record them all, then hand the
    treated ones that the provider will not retry itself to dunning and approvals."""
    failures = cast(list[tuple[WebhookEvent, PaymentFailed]], run)
    tenant = failures[0][0].tenant
    results: list[Result | None] = []
    handoffs: list[tuple[int, DraftRequest]] = []
    for index, ((event, failed), recorded) in enumerate(zip(failures, _record_failures(tenant, failures),
                                                             strict=True)):
        invoice = cast(Invoice, recorded.invoice)
        if recorded.outcome in _LOST_RACE:
            results.append((Status.PROCESSED, _LOST_RACE[recorded.outcome]))
        elif invoice.arm == Invoice.Arm.HOLDOUT:
            results.append((Status.PROCESSED, OUTCOME_HOLDOUT))
        elif failed.suppressed_reason:
            results.append((Status.PROCESSED, OUTCOME_RETRY_SCHEDULED))
        else:
            results.append(None)
            handoffs.append((index, DraftRequest(invoice=invoice, provider_retry_at=failed.retry_at,
                                                 provider_retry_source=event.provider,
                                                 card_brand=failed.card_brand,
                                                 network_advice_code=failed.network_advice_code,
                                                 network_decline_code=failed.network_decline_code)))
    if handoffs and not tenant.is_active:
        # A suspended tenant keeps its ledger (so a later payment still closes the invoice)
        # but gets no new dunning; the send gates refuse anything already approved.
        for index, _ in handoffs:
            results[index] = (Status.PROCESSED, OUTCOME_TENANT_INACTIVE)
    elif handoffs:
        outcomes = handoff.recovery_start(tenant=tenant, requests=[request for _, request in handoffs])
        for (index, _), outcome in zip(handoffs, outcomes, strict=True):
            results[index] = (Status.PROCESSED, outcome)
    return cast(list[Result], results)


def _on_payment_succeeded(event: WebhookEvent, paid: PaymentSucceeded) -> Result:
    result = invoice_record_payment(
        tenant=event.tenant, provider=event.provider, external_invoice_id=paid.external_invoice_id,
        amount_paid_minor=paid.amount_paid_minor, currency=paid.currency, event_ref=_ref(event),
        occurred_at=paid.occurred_at,
    )
    return Status.PROCESSED, result.outcome


def _on_subscription_cancelled(event: WebhookEvent, cancelled: SubscriptionCancelled) -> Result:
    moved = invoice_mark_churned(
        tenant=event.tenant, provider=event.provider, subscription_id=cancelled.subscription_id,
        event_ref=_ref(event), occurred_at=cancelled.occurred_at,
    )
    return Status.PROCESSED, "churned" if moved else OUTCOME_NO_OPEN_INVOICE


def _on_retries_exhausted(event: WebhookEvent, exhausted: RetriesExhausted) -> Result:
    if exhausted.failure is not None:
        # Record the last failure first, so an invoice first seen here is still counted;
        # no draft: the provider has closed collection.
        [result] = _record_failures(event.tenant, [(event, exhausted.failure)])
        if result.outcome in _LOST_RACE:
            return Status.PROCESSED, _LOST_RACE[result.outcome]
    outcome = invoice_mark_exhausted(
        tenant=event.tenant, provider=event.provider,
        external_invoice_id=exhausted.external_invoice_id, event_ref=_ref(event),
        occurred_at=exhausted.occurred_at,
    )
    return Status.PROCESSED, outcome if outcome == "exhausted" else f"noop_exhausted_{outcome}"


def _on_invoice_voided(event: WebhookEvent, voided: InvoiceVoided) -> Result:
    outcome = invoice_record_void(
        tenant=event.tenant, provider=event.provider, external_invoice_id=voided.external_invoice_id,
        event_ref=_ref(event), occurred_at=voided.occurred_at,
    )
    return Status.PROCESSED, outcome if outcome == "voided" else f"noop_voided_{outcome}"


def _on_payment_refunded(event: WebhookEvent, refunded: PaymentRefunded) -> Result:
    result = invoice_record_refund(
        tenant=event.tenant, provider=event.provider, external_invoice_id=refunded.external_invoice_id,
        refund_ref=refunded.refund_ref, currency=refunded.currency, amount_minor=refunded.amount_minor,
        cumulative_minor=refunded.cumulative_minor, occurred_at=refunded.occurred_at, event_ref=_ref(event),
    )
    return Status.PROCESSED, result.outcome


def _on_dispute(event: WebhookEvent, report: DisputeReport) -> Result:
    """Stored by the app that registered a dispute sink (reconciliation), in this
    transaction; ignored when none did."""
    outcome = dispute_report(tenant=event.tenant, report=report, event_ref=_ref(event))
    if outcome is None:
        return Status.IGNORED, OUTCOME_NO_DISPUTE_SINK
    return Status.PROCESSED, outcome


def _on_ignored(event: WebhookEvent, ignored: Ignored) -> Result:
    return Status.IGNORED, ignored.reason


HANDLERS: dict[type[DomainEvent], Callable[[WebhookEvent, Any], Result]] = {  # type: ignore[valid-type]
    PaymentFailed: lambda event, failed: _on_payment_failed_many([(event, failed)])[0],
    PaymentSucceeded: _on_payment_succeeded,
    SubscriptionCancelled: _on_subscription_cancelled,
    RetriesExhausted: _on_retries_exhausted,
    InvoiceVoided: _on_invoice_voided,
    PaymentRefunded: _on_payment_refunded,
    DisputeReport: _on_dispute,
    Ignored: _on_ignored,
}

# Domain classes applied a run at a time (see `_run_from`); each returns one result per event.
BATCH_HANDLERS: dict[type[DomainEvent], Callable[[list[Translated]], list[Result]]] = {  # type: ignore[valid-type]
    PaymentFailed: _on_payment_failed_many,
}
