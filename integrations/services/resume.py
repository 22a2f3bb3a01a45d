"""Drafting, on an operator's request, the failures recorded while a tenant was suspended.

A suspended tenant's failed payments are recorded in the ledger but not drafted (outcome
`recorded_tenant_inactive`, see processing). Resuming drafts nothing by itself: the
operator asks for it with `manage.py tenants resume <slug> --draft-open`, which calls
`suspended_failures_draft` through the hook `paypilot.services` keeps (paypilot may not
import integrations). The drafts go through the same hand-off as a live webhook
(dunning's pipeline, then an approval request), so nothing reaches a customer without a
recorded approval.
"""

from __future__ import annotations

from dunning.llm import llm_drafting_enabled
from dunning.services import DraftRequest
from integrations import handoff
from integrations.domain import PaymentFailed
from integrations.models import ProviderCredential, WebhookEvent
from integrations.services.event_handlers import (
    OUTCOME_CLOSED_BEFORE_RESUME,
    OUTCOME_DRAFTED_ON_RESUME,
    OUTCOME_TENANT_INACTIVE,
)
from integrations.services.processing import _translate
from ledger.models import Invoice
from paypilot.models import Tenant
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context

RESUME_CHUNK = 100  # invoices drafted per transaction; a re-run picks up where one stopped


def suspended_failures_draft(*, tenant: Tenant, actor: str) -> int:
    """Draft every open treatment-arm invoice whose failure was recorded undrafted while
    `tenant` was not active; returns how many drafts were opened.

    Each chunk of invoices is one transaction: their drafts and approval requests, their
    events' outcome moved on (`draft_opened_on_resume`, or `noop_closed_before_resume` for
    an invoice paid, churned or exhausted meanwhile), so a second run drafts nothing twice,
    and one audit row. Raises ValueError when the tenant is not active.
    """
    if not tenant.is_active:
        raise ValueError("resume the tenant before drafting its open failures")
    with tenant_context(tenant):
        marked = list(
            WebhookEvent.objects.filter(tenant=tenant, status=WebhookEvent.Status.PROCESSED,
                                        outcome=OUTCOME_TENANT_INACTIVE).order_by("pk")
        )
    # The latest failure of each invoice decides its draft (attempt, provider retry).
    by_invoice: dict[tuple[str, str], list[tuple[WebhookEvent, PaymentFailed]]] = {}
    credentials: dict[str, ProviderCredential | None] = {}
    for event in marked:
        event.tenant = tenant
        _, domain = _translate(event, credentials)
        if isinstance(domain, PaymentFailed):
            by_invoice.setdefault((event.provider, domain.external_invoice_id), []).append((event, domain))
    keys = list(by_invoice)
    # One invoice per transaction while model drafting is on: each draft waits on a network
    # call, and a chunk would hold its locks (SQLite's write lock) through all of them.
    size = 1 if llm_drafting_enabled() else RESUME_CHUNK
    opened = 0
    for start in range(0, len(keys), size):
        chunk = {key: by_invoice[key] for key in keys[start:start + size]}
        opened += _draft_chunk(tenant=tenant, actor=actor, chunk=chunk)
    return opened


def _draft_chunk(*, tenant: Tenant, actor: str,
                 chunk: dict[tuple[str, str], list[tuple[WebhookEvent, PaymentFailed]]]) -> int:
    with tenant_context(tenant):
        ids = [event.pk for rows in chunk.values() for event, _ in rows]
        # Locked and re-read: a concurrent run that settled some of them first wins.
        still = set(
            WebhookEvent.objects.select_for_update()
            .filter(pk__in=ids, outcome=OUTCOME_TENANT_INACTIVE).values_list("pk", flat=True)
        )
        open_invoices = {
            (invoice.provider, invoice.external_invoice_id): invoice
            for invoice in Invoice.objects.filter(
                tenant=tenant, arm=Invoice.Arm.TREATMENT, state__in=Invoice.OPEN_STATES,
                provider__in={provider for provider, _ in chunk},
                external_invoice_id__in={external for _, external in chunk},
            ).select_related("customer")
        }
        requests: list[DraftRequest] = []
        drafted: list[int] = []
        closed: list[int] = []
        for key, rows in chunk.items():
            pks = [event.pk for event, _ in rows if event.pk in still]
            if not pks:
                continue
            if key in open_invoices:
                event, failed = rows[-1]
                requests.append(DraftRequest(invoice=open_invoices[key], provider_retry_at=failed.retry_at,
                                             provider_retry_source=event.provider, card_brand=failed.card_brand,
                                             network_advice_code=failed.network_advice_code,
                                             network_decline_code=failed.network_decline_code))
                drafted.extend(pks)
            else:
                closed.extend(pks)
        if requests:
            handoff.recovery_start(tenant=tenant, requests=requests)
        WebhookEvent.objects.filter(pk__in=drafted).update(outcome=OUTCOME_DRAFTED_ON_RESUME)
        WebhookEvent.objects.filter(pk__in=closed).update(outcome=OUTCOME_CLOSED_BEFORE_RESUME)
        if drafted or closed:
            audit_record(event="integrations.webhook.drafted_on_resume", tenant=tenant, actor=actor,
                         detail={"count": len(requests), "counts": {"drafted_events": len(drafted),
                                                                    "closed_events": len(closed)}})
        return len(requests)
