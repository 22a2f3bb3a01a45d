"""The worker side of the inbox: translate one stored event and apply it to the ledger.

Everything an event does happens in ONE transaction with the event row locked: the ledger
write, the decision and draft (dunning), the approval request (approvals) and the event's
own status. A crash half-way therefore leaves nothing behind, and the retry starts clean.
Domain events dispatch through `HANDLERS`, a dict keyed by the event class.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

from django.db.models import F
from django.utils import timezone

from integrations import handoff, stripe_api
from integrations.crypto import secret_decrypt
from integrations.domain import (
    DomainEvent,
    Ignored,
    PaymentFailed,
    PaymentSucceeded,
    RetriesExhausted,
    SubscriptionCancelled,
)
from integrations.models import ProviderCredential, WebhookEvent
from integrations.providers import Credentials, adapter, load_json
from ledger.models import Invoice
from ledger.services import (
    FailureResult,
    customer_upsert,
    invoice_mark_churned,
    invoice_mark_exhausted,
    invoice_record_failure,
    invoice_record_payment,
)
from paypilot.tenancy import tenant_context, tenant_for_row

logger = logging.getLogger("paypilot.integrations")

Status = WebhookEvent.Status
FINAL_STATUSES = frozenset({Status.PROCESSED, Status.IGNORED})
Result = tuple[str, str]  # (status, outcome)

# Outcomes (snake_case, stored on the event and answered to duplicates).
OUTCOME_HOLDOUT = "recorded_holdout"  # holdout arm: recorded, never drafted
OUTCOME_RETRY_SCHEDULED = "recorded_retry_scheduled"  # the provider retries; no email drafted
OUTCOME_ALREADY_PAID = "noop_already_paid"  # lost the race: paid before this failure
OUTCOME_INVOICE_CLOSED = "noop_invoice_closed"  # lost the race: invoice already closed
OUTCOME_OUT_OF_ORDER = "noop_out_of_order"  # a newer resource_version was applied already
OUTCOME_NO_OPEN_INVOICE = "noop_no_open_invoice"  # cancellation with nothing open


class ProcessingFailed(Exception):
    """Raised by the task after the failure is recorded, so django-q2 logs it too."""


def webhook_event_process(*, event_id: int) -> str:
    """Apply one stored event; returns its status afterwards.

    Idempotent: a processed or ignored event is returned as is. On any exception the whole
    transaction rolls back, then the event is marked `failed` with the error and one more
    attempt, and ProcessingFailed is raised (the sweeper retries up to the limit).
    """
    # Before any tenant is bound the event row is invisible under row-level security: its
    # tenant comes from the SECURITY DEFINER lookup (a plain query on SQLite).
    tenant_id = tenant_for_row(WebhookEvent, event_id)
    if tenant_id is None:
        return "missing"
    try:
        with tenant_context(tenant_id):
            event = WebhookEvent.objects.select_for_update(of=("self",)).select_related("tenant").get(pk=event_id)
            if event.status in FINAL_STATUSES:
                return event.status
            status, outcome = _apply(event)
            WebhookEvent.objects.filter(pk=event.pk).update(
                status=status, outcome=outcome[:64], error="", attempts=F("attempts") + 1,
                processed_at=timezone.now(),
            )
            return status
    except Exception as exc:
        with tenant_context(tenant_id):
            WebhookEvent.objects.filter(pk=event_id).exclude(status__in=FINAL_STATUSES).update(
                status=Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000],
                attempts=F("attempts") + 1, processed_at=timezone.now(),
            )
        logger.warning("webhook event %s failed: %s", event_id, type(exc).__name__)
        raise ProcessingFailed(f"webhook event {event_id}: {type(exc).__name__}") from exc


def _apply(event: WebhookEvent) -> Result:
    module = adapter(event.provider)
    credential = ProviderCredential.objects.filter(tenant_id=event.tenant_id, provider=event.provider).first()
    context = Credentials(default_currency=credential.default_currency if credential else "USD")
    payload = load_json(bytes(event.body))
    enrich = getattr(module, "enrich", None)
    if enrich is not None and credential is not None and credential.api_key_encrypted:
        payload = enrich(payload=payload, event_type=event.event_type,
                         api_key=secret_decrypt(credential.api_key_encrypted),
                         fetch=stripe_api.invoice_payment_error)
    domain = module.translate(payload=payload, event_type=event.event_type, context=context)
    if not isinstance(domain, Ignored) and _superseded(event):
        return Status.PROCESSED, OUTCOME_OUT_OF_ORDER
    handler = cast(Callable[[WebhookEvent, Any], Result], HANDLERS[type(domain)])
    return handler(event, domain)


def _superseded(event: WebhookEvent) -> bool:
    """A newer version of the same resource was applied already (providers that publish a
    resource version, e.g. Chargebee's `resource_version`). Stored, so it survives restarts."""
    if not event.resource_key or event.resource_version is None:
        return False
    return WebhookEvent.objects.filter(
        tenant_id=event.tenant_id, provider=event.provider, resource_key=event.resource_key,
        status=Status.PROCESSED, resource_version__gt=event.resource_version,
    ).exists()


def _ref(event: WebhookEvent) -> str:
    return f"{event.provider}:{event.event_key}"[:200]


def _record_failure(event: WebhookEvent, failed: PaymentFailed) -> FailureResult:
    customer = None
    if failed.provider_customer_id:
        customer = customer_upsert(
            tenant=event.tenant, external_id=failed.provider_customer_id, name=failed.customer_name[:200],
            email=failed.customer_email[:254], currency=failed.currency,
        )
    return invoice_record_failure(
        tenant=event.tenant, provider=event.provider, external_invoice_id=failed.external_invoice_id,
        amount_minor=failed.amount_minor, currency=failed.currency, failure_code=failed.failure_code,
        attempt=failed.attempt, customer=customer, subscription_id=failed.subscription_id,
        provider_customer_id=failed.provider_customer_id,
        hosted_invoice_url=failed.hosted_invoice_url, event_ref=_ref(event),
    )


_LOST_RACE = {"already_paid": OUTCOME_ALREADY_PAID, "closed_noop": OUTCOME_INVOICE_CLOSED}


def _on_payment_failed(event: WebhookEvent, failed: PaymentFailed) -> Result:
    result = _record_failure(event, failed)
    if result.outcome in _LOST_RACE:
        return Status.PROCESSED, _LOST_RACE[result.outcome]
    invoice = cast(Invoice, result.invoice)
    if invoice.arm == Invoice.Arm.HOLDOUT:
        return Status.PROCESSED, OUTCOME_HOLDOUT
    if failed.suppressed_reason:
        return Status.PROCESSED, OUTCOME_RETRY_SCHEDULED
    outcome = handoff.recovery_start(
        invoice=invoice, provider_retry_at=failed.retry_at, provider_retry_source=event.provider
    )
    return Status.PROCESSED, outcome


def _on_payment_succeeded(event: WebhookEvent, paid: PaymentSucceeded) -> Result:
    result = invoice_record_payment(
        tenant=event.tenant, provider=event.provider, external_invoice_id=paid.external_invoice_id,
        amount_paid_minor=paid.amount_paid_minor, currency=paid.currency, event_ref=_ref(event),
    )
    return Status.PROCESSED, result.outcome


def _on_subscription_cancelled(event: WebhookEvent, cancelled: SubscriptionCancelled) -> Result:
    moved = invoice_mark_churned(
        tenant=event.tenant, provider=event.provider, subscription_id=cancelled.subscription_id,
        event_ref=_ref(event),
    )
    return Status.PROCESSED, "churned" if moved else OUTCOME_NO_OPEN_INVOICE


def _on_retries_exhausted(event: WebhookEvent, exhausted: RetriesExhausted) -> Result:
    if exhausted.failure is not None:
        # Record the last failure first, so an invoice first seen here is still counted;
        # no draft: the provider has closed collection.
        result = _record_failure(event, exhausted.failure)
        if result.outcome in _LOST_RACE:
            return Status.PROCESSED, _LOST_RACE[result.outcome]
    outcome = invoice_mark_exhausted(
        tenant=event.tenant, provider=event.provider,
        external_invoice_id=exhausted.external_invoice_id, event_ref=_ref(event),
    )
    return Status.PROCESSED, outcome if outcome == "exhausted" else f"noop_exhausted_{outcome}"


def _on_ignored(event: WebhookEvent, ignored: Ignored) -> Result:
    return Status.IGNORED, ignored.reason


HANDLERS: dict[type[DomainEvent], Callable[[WebhookEvent, Any], Result]] = {  # type: ignore[valid-type]
    PaymentFailed: _on_payment_failed,
    PaymentSucceeded: _on_payment_succeeded,
    SubscriptionCancelled: _on_subscription_cancelled,
    RetriesExhausted: _on_retries_exhausted,
    Ignored: _on_ignored,
}
