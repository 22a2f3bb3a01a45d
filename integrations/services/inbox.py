"""The webhook inbox: verify on the raw bytes, store, enqueue; reprocess; sweep.

`webhook_receive` is the whole request path. It verifies before parsing, inserts the event
and enqueues `integrations.tasks.process_event` in one transaction (with the ORM broker the
queue row is an INSERT in the same database, so both commit or neither does), and lets the
unique constraint answer duplicates.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import ModuleType
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django_q.tasks import async_task

from integrations.crypto import SecretUnreadable
from integrations.models import ProviderCredential, WebhookEvent
from integrations.providers import Credentials, PayloadInvalid, VerificationFailed, adapter
from integrations.services.credentials import credential_read
from integrations.services.inbox_sql import event_values_insert, queue_broker, task_enqueue
from integrations.services.processing import ProcessingFailed
from paypilot.models import Tenant
from paypilot.queue import queue_row_id
from paypilot.ratelimit import client_key, counter_hit
from paypilot.refusals import refusal_audit_detail
from paypilot.services import audit_record
from paypilot.tenancy import set_current_tenant, tenant_context

logger = logging.getLogger("paypilot.integrations")

PROCESS_TASK = "integrations.tasks.process_event"
REASON_SECRET_NOT_CONFIGURED = "secret_not_configured"  # no secret and unsigned mode not allowed
REASON_SECRET_UNREADABLE = "secret_unreadable"  # stored secret does not decrypt with the key
REASON_TENANT_NOT_FOUND = "tenant_not_found"
REASON_TENANT_DEACTIVATED = "tenant_deactivated"  # closed for good: 410, so providers stop
REASON_RATE_LIMITED = "rate_limited"  # too many failed verifications from this address/tenant
REASON_PAYLOAD_INVALID = "invalid_payload"
SWEEP_BATCH = 1000  # per run; the next run takes the rest


@dataclass(frozen=True)
class Receipt:
    """What the view answers: an HTTP status and a small JSON body."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


def _refused(status: int, code: str, detail: str) -> Receipt:
    return Receipt(status=status, body={"error": code, "detail": detail})


# The hot path's only read, cached per process for a few seconds: a secret rotation or a
# tenant suspension reaches other processes within CREDENTIAL_CACHE_SECONDS; this process
# drops its cache at once (integrations.apps connects `credential_cache_clear` to saves).
CREDENTIAL_CACHE_SECONDS = 5.0
CREDENTIAL_CACHE_MAX = 10_000
_credential_cache: dict[tuple[str, str], tuple[float, Tenant | None, Credentials | None]] = {}
_cache_lock = threading.Lock()


def credential_cache_clear(**kwargs: Any) -> None:
    with _cache_lock:
        _credential_cache.clear()


def _credential_for(tenant_slug: str, provider: str) -> tuple[Tenant | None, Credentials | None]:
    """The tenant and its decrypted credential for `provider` (None, None for an unknown
    tenant). Raises SecretUnreadable when the stored secret does not decrypt."""
    key = (tenant_slug, provider)
    now = time.monotonic()
    hit = _credential_cache.get(key)
    if hit is not None and hit[0] > now:
        return hit[1], hit[2]
    tenant = Tenant.objects.filter(slug=tenant_slug).first()
    credential = None
    if tenant is not None:
        with _tenant_bound(tenant):
            row = ProviderCredential.objects.filter(tenant=tenant, provider=provider).first()
        credential = credential_read(row) if row is not None else None
    # An unknown slug is cached too, so a flood of deliveries to made-up tenants costs a
    # dict lookup, not a query each (a tenant created here clears the cache at once).
    with _cache_lock:
        if len(_credential_cache) >= CREDENTIAL_CACHE_MAX:  # made-up slugs cannot grow it for ever
            _credential_cache.clear()
        _credential_cache[key] = (now + CREDENTIAL_CACHE_SECONDS, tenant, credential)
    return tenant, credential


def _tenant_bound(tenant: Tenant) -> AbstractContextManager[None]:
    """Row-level security binding on PostgreSQL; nothing on SQLite (where tenant_context
    would open a write transaction just to read)."""
    return tenant_context(tenant) if connection.vendor == "postgresql" else nullcontext()


def _one_transaction() -> AbstractContextManager[Any]:
    """PostgreSQL: the request's transaction (opened here when there is none), which the
    tenant binding needs, with no savepoint inside it: nothing here rolls back on its own,
    an error fails the request. SQLite: none; the insert opens its own, so the write lock
    is not held while the signature is checked."""
    return transaction.atomic(savepoint=False) if connection.vendor == "postgresql" else nullcontext()


def webhook_receive(
    *,
    tenant_slug: str,
    provider: str,
    body: bytes,
    headers: Mapping[str, str],
    url_key: str = "",
    client: str = "",
) -> Receipt:
    """Verify, store and enqueue one delivery; answers in milliseconds.

    Every verified delivery is stored, whatever the tenant's status: a suspended tenant's
    events are applied (processing drafts nothing for it). 200 for a new event and for a
    duplicate (with the stored status and outcome); 400 with a reason code (audited,
    nothing stored) for a bad signature, a missing secret or a body that is not the
    provider's shape; 404 for an unknown tenant; 410 for a deactivated one (nothing
    stored, so providers stop). A delivery that fails verification counts against
    `client` and the tenant (PAYPILOT_WEBHOOK_FAILURES_PER_*): past the limit it gets 429
    and nothing is written, not even the audit row. A verified one is never limited.
    """
    module = adapter(provider)
    try:
        tenant, credential = _credential_for(tenant_slug, provider)
    except SecretUnreadable:
        tenant = Tenant.objects.get(slug=tenant_slug)
        with _one_transaction():
            return _reject(tenant, provider, REASON_SECRET_UNREADABLE, status=500)
    if tenant is None:
        return _failure_limited(client, None) or _refused(404, REASON_TENANT_NOT_FOUND, "no such tenant")
    if tenant.status == Tenant.Status.DEACTIVATED:
        return _refused(410, REASON_TENANT_DEACTIVATED, "this tenant is closed and accepts no more webhooks")
    failure = _verification_failure(module, tenant, credential, body=body, headers=headers, url_key=url_key)
    if failure is not None:
        # Counted before any transaction opens: past the limit nothing reaches the database.
        limited = _failure_limited(client, tenant)
        if limited is not None:
            return limited
    # Row-level security: the tenant is bound by the audit row's path or by the event
    # insert itself, and stays bound to the end of the request's one transaction.
    with _one_transaction():
        if failure is not None:
            return _reject(tenant, module.NAME, failure)
        return _store(module, tenant, body=body, headers=headers)


def _failure_limited(client: str, tenant: Tenant | None) -> Receipt | None:
    """Count one failed verification for `client` (and `tenant`); the 429 to answer once
    either is past its limit in this window, else None. No database: counters only."""
    window = settings.PAYPILOT_RATE_LIMIT_WINDOW_SECONDS
    checks = [("ip", client_key(client), settings.PAYPILOT_WEBHOOK_FAILURES_PER_IP, "address")]
    if tenant is not None:
        checks.append(("tenant", str(tenant.pk), settings.PAYPILOT_WEBHOOK_FAILURES_PER_TENANT, "tenant"))
    limited: Receipt | None = None
    for kind, ident, limit, who in checks:
        if not limit:
            continue
        hit = counter_hit(f"whfail:{kind}:{ident}", window=window)
        if hit.count > limit and limited is None:
            if hit.count == limit + 1:  # once per window and key: the flood is noticed, not logged per hit
                logger.warning("webhook verification failures over the per-%s limit (%d/%ds)", who, limit, window)
            limited = Receipt(429, {"error": REASON_RATE_LIMITED,
                                    "detail": f"too many failed webhook verifications for this {who}"},
                              headers={"Retry-After": str(hit.retry_after)})
    return limited


def _verification_failure(
    module: ModuleType, tenant: Tenant, credential: Credentials | None, *,
    body: bytes, headers: Mapping[str, str], url_key: str,
) -> str | None:
    """The reason the delivery fails verification, or None. Raw bytes only, no database."""
    creds = credential or Credentials()
    if not creds.secret:
        if not (settings.PAYPILOT_ALLOW_UNSIGNED_WEBHOOKS and tenant.slug == settings.PAYPILOT_DEMO_TENANT):
            return REASON_SECRET_NOT_CONFIGURED
        logger.warning("unsigned %s webhook accepted for demo tenant %s", module.NAME, tenant.slug)
        return None
    try:
        module.verify(body=body, headers=headers, credential=creds, url_key=url_key, now=time.time())
    except VerificationFailed as exc:
        return exc.reason
    return None


def _store(module: ModuleType, tenant: Tenant, *, body: bytes, headers: Mapping[str, str]) -> Receipt:
    """Parse the verified delivery, insert it and enqueue its processing (or answer the
    duplicate), inside the request's one transaction."""
    provider = module.NAME
    try:
        env = module.envelope(body=body, headers=headers)
    except PayloadInvalid as exc:
        return _reject(tenant, provider, REASON_PAYLOAD_INVALID, note=exc.reason)
    kept = {name: headers[name] for name in module.HEADERS if name in headers}
    # The row's values, not a WebhookEvent: building a model instance (its signals, every
    # field's default) cost CPU on every delivery for an object nothing here reads.
    values = {"tenant_id": tenant.pk, "provider": provider, "event_key": env.event_key,
              "event_type": env.event_type, "body": body, "headers": kept,
              "resource_key": env.resource_key, "resource_version": env.resource_version}
    # savepoint=False: inside the request's transaction (PostgreSQL) the insert needs none,
    # a duplicate is answered by ON CONFLICT, not by an error to roll back. The event
    # insert binds the tenant on PostgreSQL, for itself and the duplicate lookup below.
    # The event and its queue row commit together or not at all (the store-first promise).
    with transaction.atomic(savepoint=False):
        inserted = event_values_insert(values)
        if inserted is not None:
            enqueue_processing(inserted[0], task_row=inserted[1])
    if inserted is not None:
        return Receipt(200, {"received": True, "duplicate": False, "event": inserted[0]})
    stored = (
        WebhookEvent.objects.filter(tenant=tenant, provider=provider, event_key=env.event_key)
        .values("pk", "status", "outcome")
        .get()
    )
    return Receipt(200, {"received": True, "duplicate": True, "event": stored["pk"],
                         "status": stored["status"], "outcome": stored["outcome"]})


def _reject(tenant: Tenant, provider: str, reason: str, *, status: int = 400, note: str = "") -> Receipt:
    set_current_tenant(tenant)  # row-level security (PostgreSQL) for the audit row
    audit_record(
        event="integrations.webhook.rejected",
        tenant=tenant,
        actor=provider,
        detail={"provider": provider, "reason": reason, **({"kind": note} if note else {}),
                **refusal_audit_detail()},  # the id the refused provider is answered with
    )
    detail = {
        REASON_SECRET_NOT_CONFIGURED: "no webhook secret is configured for this tenant and provider",
        REASON_SECRET_UNREADABLE: "the stored webhook secret cannot be read",
        REASON_PAYLOAD_INVALID: "the body is not a webhook payload of this provider",
    }.get(reason, "the delivery could not be verified")
    receipt = _refused(status, reason, detail)
    if note:  # e.g. json_too_deep: which check refused the body, never its content
        receipt.body["reason"] = note
    return receipt


def enqueue_processing(event_id: int, *, task_row: int | None = None) -> None:
    """Queue `process_event` for the event. ORM broker: in the caller's transaction (a
    transactional outbox), in queue row `task_row` when the event insert took one
    (`event_values_insert`). Redis broker: after commit; the sweeper covers a lost enqueue."""
    if settings.REDIS_URL:
        transaction.on_commit(lambda: _enqueue(event_id))
    else:
        with queue_row_id(task_row):
            _enqueue(event_id)


def _enqueue(event_id: int) -> None:
    # ack_failure: a failed attempt is recorded on the event and retried by the sweeper
    # (finite), not re-presented by the broker as well.
    # save=False: the event row already records the outcome; django-q2 keeps failures only.
    name = f"webhook-{event_id}"
    if task_enqueue(PROCESS_TASK, event_id, name=name, ack_failure=True, save=False):
        return  # the ORM broker's row, in the caller's transaction (inbox_sql.task_enqueue)
    try:
        async_task(PROCESS_TASK, event_id, ack_failure=True, save=False, task_name=name, broker=queue_broker())
    except ProcessingFailed:
        # Only in sync mode (tests, PAYPILOT_Q_SYNC=1), where django-q2 runs the task inline
        # and re-raises: the failure is already recorded on the event, the sweeper retries.
        pass


def webhook_event_reprocess(*, event: WebhookEvent, actor: str) -> bool:
    """Put a received, failed or ignored event back in the queue (admin action).

    A processed event is final and is left alone (False). Audited.
    """
    with transaction.atomic():
        updated = WebhookEvent.objects.filter(
            pk=event.pk,
            status__in=[WebhookEvent.Status.RECEIVED, WebhookEvent.Status.FAILED, WebhookEvent.Status.IGNORED],
        ).update(status=WebhookEvent.Status.RECEIVED, error="", enqueued_at=timezone.now())
        if not updated:
            return False
        audit_record(event="integrations.webhook.reprocess", tenant=event.tenant, actor=actor,
                     detail={"webhook_event": event.pk, "provider": event.provider})
        enqueue_processing(event.pk)
    return True


def webhook_events_sweep(*, now: datetime | None = None) -> int:
    """Re-enqueue events left `received`, or `failed` with attempts left, whose last
    enqueue is older than PAYPILOT_SWEEP_AFTER_MINUTES. Returns how many were enqueued."""
    now = now or timezone.now()
    cutoff = now - timedelta(minutes=settings.PAYPILOT_SWEEP_AFTER_MINUTES)
    swept = 0
    # Row-level security shows a tenant's events only with that tenant bound, so the sweep
    # goes tenant by tenant (the tenant list itself is not tenant-scoped).
    for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
        if swept >= SWEEP_BATCH:
            break
        swept += _sweep_tenant(tenant_id, cutoff=cutoff, now=now, limit=SWEEP_BATCH - swept)
    if swept:
        logger.warning("webhook sweeper re-enqueued %d event(s)", swept)
    return swept


def _sweep_tenant(tenant_id: int, *, cutoff: datetime, now: datetime, limit: int) -> int:
    due = WebhookEvent.objects.filter(tenant_id=tenant_id, enqueued_at__lt=cutoff).filter(
        Q(status=WebhookEvent.Status.RECEIVED)
        | Q(status=WebhookEvent.Status.FAILED, attempts__lt=max_attempts())
    )
    with tenant_context(tenant_id):
        ids = list(due.order_by("enqueued_at").values_list("pk", flat=True)[:limit])
    for event_id in ids:
        with tenant_context(tenant_id):
            # Stamped first, so the next sweep leaves it alone while it waits in the queue.
            WebhookEvent.objects.filter(pk=event_id).update(enqueued_at=now)
            enqueue_processing(event_id)
    return len(ids)


def max_attempts() -> int:
    """Processing attempts per event: the django-q2 cluster's own finite limit."""
    return int(settings.Q_CLUSTER.get("max_attempts") or 5)  # type: ignore[call-overload]
