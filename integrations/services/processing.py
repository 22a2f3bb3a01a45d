"""The worker side of the inbox: translate stored events and apply them to the ledger.

Everything an event does happens in ONE transaction with the event row locked: the ledger
write, the decision and draft (dunning), the approval request (approvals) and the event's
own status. A crash half-way therefore leaves nothing behind, and the retry starts clean.
Domain events dispatch through `HANDLERS`, a dict keyed by the event class.

Batches: the task for one event also takes up to PAYPILOT_WEBHOOK_BATCH - 1 `received`
events of the same tenant that arrived after it (rows another worker holds are skipped), applies them
in arrival order in the same transaction and marks them; their own queued tasks then find
them processed and return. Consecutive failed payments of distinct invoices and customers
are applied together through `BATCH_HANDLERS` (one INSERT per table instead of one per
row); every other event, and any event carrying a resource version, is applied alone, in
order, so each sees what the events before it wrote. If anything in a batch raises, the
whole batch rolls back and its events are applied one by one, so one bad event costs only
itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import Any, cast

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from dunning.llm import llm_drafting_enabled
from dunning.services import DraftRequest
from integrations import handoff, stripe_api
from integrations.crypto import secret_decrypt
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
from integrations.models import ProviderCredential, WebhookEvent
from integrations.providers import Credentials, adapter, currency_checked, load_json
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
from paypilot.tenancy import tenant_context, tenant_for_row

logger = logging.getLogger("paypilot.integrations")

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


class ProcessingFailed(Exception):
    """Raised by the task after the failure is recorded, so django-q2 logs it too."""


def webhook_event_process(*, event_id: int) -> str:
    """Apply one stored event (and a batch of other received events with it); returns the
    event's status afterwards.

    Idempotent: a processed or ignored event is returned as is. If the event itself fails,
    its work rolls back, it is marked `failed` with the error and one more attempt, and
    ProcessingFailed is raised (the sweeper retries up to the limit).
    """
    if event_id in _processed_here:  # done by an earlier batch in this process: final
        return Status.PROCESSED
    # Before any tenant is bound the event row is invisible under row-level security: its
    # tenant comes from the SECURITY DEFINER lookup (a plain query on SQLite).
    tenant_id, status = _tenant_and_status(event_id)
    if tenant_id is None:
        return "missing"
    if status in FINAL_STATUSES:  # already done, most often by an earlier batch
        return str(status)
    batch: list[int] = []
    if batch_size() > 1:
        try:
            return _process_batch(tenant_id, event_id, taken=batch)
        except Exception as exc:  # the batch rolled back: apply its events one by one
            logger.warning("webhook batch at event %s rolled back (%s); applying %d event(s) one by one",
                           event_id, type(exc).__name__, len(batch))
    for other_id in batch:
        if other_id != event_id:
            try:
                _process_one(tenant_id, other_id)
            except ProcessingFailed:
                pass  # recorded on that event; its own task or the sweeper retries it
    return _process_one(tenant_id, event_id)


def batch_size() -> int:
    """Events per processing transaction: PAYPILOT_WEBHOOK_BATCH, but one while model
    drafting is on, where every draft waits on a network call and a batch would hold its
    row locks (on SQLite the database's write lock) through all of them."""
    return 1 if llm_drafting_enabled() else settings.PAYPILOT_WEBHOOK_BATCH


def _tenant_and_status(event_id: int) -> tuple[int | None, str | None]:
    """The event's tenant and status, read without locking anything: every event of a
    batch but one ends here, so this is raw SQL (the ORM's query compilation would cost more
    than the read), and a row lock taken only to find the row done would cost a WAL flush
    on PostgreSQL. Under row-level security the status is read once the tenant is bound."""
    sql = f"SELECT tenant_id, status FROM {WebhookEvent._meta.db_table} WHERE id = %s"
    if connection.vendor == "postgresql":
        tenant_id = tenant_for_row(WebhookEvent, event_id)
        if tenant_id is None:
            return None, None
        with tenant_context(tenant_id), connection.cursor() as cursor:
            cursor.execute(sql, [event_id])
            row = cursor.fetchone()
    else:
        with connection.cursor() as cursor:
            cursor.execute(sql, [event_id])
            row = cursor.fetchone()
    return (row[0], row[1]) if row else (None, None)


def _process_batch(tenant_id: int, event_id: int, *, taken: list[int]) -> str:
    """Lock the event and up to PAYPILOT_WEBHOOK_BATCH - 1 received events of its tenant
    that arrived after it, apply them in arrival order and mark them, in one transaction."""
    with tenant_context(tenant_id):
        event = WebhookEvent.objects.select_for_update(of=("self",)).select_related("tenant").get(pk=event_id)
        if event.status in FINAL_STATUSES:
            return event.status
        # Only events after this one: the batch keeps arrival order from its first event,
        # and the read walks the primary key forward from here instead of past every
        # event processed before (whose dead index entries PostgreSQL would step over).
        others = list(
            WebhookEvent.objects.select_for_update(skip_locked=True)
            .filter(tenant_id=tenant_id, status=Status.RECEIVED, pk__gt=event_id)
            .order_by("pk")[: batch_size() - 1]
        )
        for other in others:
            other.tenant = event.tenant
        events = sorted([event, *others], key=lambda row: row.pk)
        taken.extend(row.pk for row in events)
        results = _apply_in_order(events)
        processed = [pk for pk, (status, _) in results.items() if status == Status.PROCESSED and pk != event_id]
        transaction.on_commit(lambda: _remember_processed(processed))
        return results[event.pk][0]


# Events this process marked `processed` in a batch whose transaction committed. `processed`
# is final (reprocessing refuses it), so their own queued tasks may return without a read.
# Bounded: the oldest ids go first; a forgotten id only costs the read again.
_PROCESSED_HERE_MAX = 20_000
_processed_here: dict[int, None] = {}


def _remember_processed(ids: list[int]) -> None:
    _processed_here.update(dict.fromkeys(ids))
    while len(_processed_here) > _PROCESSED_HERE_MAX:
        del _processed_here[next(iter(_processed_here))]


def _process_one(tenant_id: int, event_id: int) -> str:
    try:
        with tenant_context(tenant_id):
            event = WebhookEvent.objects.select_for_update(of=("self",)).select_related("tenant").get(pk=event_id)
            if event.status in FINAL_STATUSES:
                return event.status
            return _apply_in_order([event])[event.pk][0]
    except Exception as exc:
        with tenant_context(tenant_id):
            WebhookEvent.objects.filter(pk=event_id).exclude(status__in=FINAL_STATUSES).update(
                status=Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000],
                attempts=F("attempts") + 1, processed_at=timezone.now(),
            )
        logger.warning("webhook event %s failed: %s", event_id, type(exc).__name__)
        raise ProcessingFailed(f"webhook event {event_id}: {type(exc).__name__}") from exc


def _apply_in_order(events: list[WebhookEvent]) -> dict[int, Result]:
    """Translate and apply `events` (one tenant, arrival order) and mark each; returns
    {event id: (status, outcome)}. Runs inside the caller's transaction."""
    credentials: dict[str, ProviderCredential | None] = {}
    translated = [_translate(event, credentials) for event in events]
    results: dict[int, Result] = {}
    start = 0
    while start < len(translated):
        run = _run_from(translated, start)
        event, domain = run[0]
        many = BATCH_HANDLERS.get(type(domain))
        outcomes: list[Result]
        if not isinstance(domain, Ignored) and _superseded(event):  # runs of more than one have no version
            outcomes = [(Status.PROCESSED, OUTCOME_OUT_OF_ORDER)]
        elif many is not None:
            outcomes = many(run)
        else:
            handler = cast(Callable[[WebhookEvent, Any], Result], HANDLERS[type(domain)])
            outcomes = [handler(event, domain)]
        _mark([row for row, _ in run], outcomes)
        results.update({row.pk: outcome for (row, _), outcome in zip(run, outcomes, strict=True)})
        start += len(run)
    return results


def _run_from(translated: list[Translated], start: int) -> list[Translated]:
    """The longest run from `start` that one batch handler may apply at once: same domain
    class, no resource version to order by, and no invoice or customer seen twice (a
    second failure of one invoice must see the first one's write)."""
    event, domain = translated[start]
    if type(domain) not in BATCH_HANDLERS or _versioned(event):
        return [translated[start]]
    seen: set[Hashable] = set()
    run: list[Translated] = []
    for candidate, candidate_domain in translated[start:]:
        keys = _serial_keys(candidate, candidate_domain)
        if type(candidate_domain) is not type(domain) or _versioned(candidate) or keys & seen:
            break
        seen |= keys
        run.append((candidate, candidate_domain))
    return run


def _versioned(event: WebhookEvent) -> bool:
    """The provider publishes a resource version for this event (ordered by `_superseded`)."""
    return bool(event.resource_key) and event.resource_version is not None


def _serial_keys(event: WebhookEvent, domain: DomainEvent) -> set[Hashable]:
    if not isinstance(domain, PaymentFailed):
        return set()
    keys: set[Hashable] = {("invoice", event.provider, domain.external_invoice_id)}
    if domain.provider_customer_id:
        keys.add(("customer", domain.provider_customer_id))
    return keys


def _mark(events: list[WebhookEvent], outcomes: list[Result]) -> None:
    """Store each event's status and outcome: one UPDATE per distinct result."""
    groups: dict[Result, list[int]] = {}
    for event, (status, outcome) in zip(events, outcomes, strict=True):
        groups.setdefault((status, outcome[:64]), []).append(event.pk)
    now = timezone.now()
    for (status, outcome), ids in groups.items():
        WebhookEvent.objects.filter(pk__in=ids).update(
            status=status, outcome=outcome, error="", attempts=F("attempts") + 1, processed_at=now,
        )


def _translate(event: WebhookEvent, credentials: dict[str, ProviderCredential | None]) -> Translated:
    module = adapter(event.provider)
    if event.provider not in credentials:
        credentials[event.provider] = ProviderCredential.objects.filter(
            tenant_id=event.tenant_id, provider=event.provider
        ).first()
    credential = credentials[event.provider]
    context = Credentials(default_currency=credential.default_currency if credential else "USD")
    payload = load_json(bytes(event.body))
    enrich = getattr(module, "enrich", None)
    if enrich is not None and credential is not None and credential.api_key_encrypted:
        payload = enrich(payload=payload, event_type=event.event_type,
                         api_key=secret_decrypt(credential.api_key_encrypted),
                         fetch=stripe_api.invoice_payment_error)
    return event, currency_checked(module.translate(payload=payload, event_type=event.event_type, context=context))


def _superseded(event: WebhookEvent) -> bool:
    """A newer version of the same resource was applied already (providers that publish a
    resource version, e.g. Chargebee's `resource_version`). Stored, so it survives restarts."""
    if not _versioned(event):
        return False
    return WebhookEvent.objects.filter(
        tenant_id=event.tenant_id, provider=event.provider, resource_key=event.resource_key,
        status=Status.PROCESSED, resource_version__gt=event.resource_version,
    ).exists()


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
