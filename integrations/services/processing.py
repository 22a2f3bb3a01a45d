"""The worker side of the inbox: translate stored events and apply them to the ledger.

Everything an event does happens in ONE transaction with the event row locked: the ledger
write, the decision and draft (dunning), the approval request (approvals) and the event's
own status. A crash half-way therefore leaves nothing behind, and the retry starts clean.
Domain events dispatch through `HANDLERS`, a dict keyed by the event class
(`integrations.services.event_handlers`, where each event's effect is written).

Batches: the task for one event also takes up to PAYPILOT_WEBHOOK_BATCH - 1 `received`
events of the same tenant that arrived after it (rows another worker holds are skipped), applies them
in arrival order in the same transaction and marks them; their own queued tasks then find
them processed and return (their queue rows are deleted in the batch's transaction, so on
PostgreSQL with the ORM broker most never reach a worker). Consecutive failed payments of
distinct invoices and customers are applied together through `BATCH_HANDLERS` (one INSERT per table instead of one per
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
from integrations import stripe_api
from integrations.crypto import secret_decrypt
from integrations.domain import DomainEvent, Ignored, PaymentFailed
from integrations.models import ProviderCredential, WebhookEvent
from integrations.providers import Credentials, adapter, currency_checked, load_json
from integrations.services.event_handlers import (
    BATCH_HANDLERS,
    FINAL_STATUSES,
    HANDLERS,
    OUTCOME_OUT_OF_ORDER,
    Result,
    Status,
    Translated,
)
from paypilot.queue import queue_rows_delete
from paypilot.tenancy import tenant_context, tenant_for_row

logger = logging.getLogger("paypilot.integrations")


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
        # The other events' own tasks have nothing left to do: delete their queue rows with
        # this transaction (it marks the events final), so the cluster never hands them out.
        # A row already handed out runs anyway and returns from the memo below.
        queue_rows_delete([row.task_row for row in others
                           if row.task_row is not None and results[row.pk][0] in FINAL_STATUSES])
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
