"""django-q2 entry points: take ids, call one service, return. Safe to run twice."""

from __future__ import annotations

from django_q.tasks import async_task

from approvals.claims import send_claims_sweep
from approvals.digest import digest_send_due
from approvals.sending import send_approved, send_fallback_reconcile, send_missing, send_retry_due
from approvals.services import approval_expire_stale
from paypilot.models import Tenant
from paypilot.tenancy import tenant_context


def send_approval(approval_id: int) -> str:
    # send_approved binds the approval's tenant itself, one short transaction per step.
    return send_approved(approval_id=approval_id).outcome


def approvals_tick() -> dict[str, int]:
    """The scheduled job (every minute), tenant by tenant: expire stale requests, sweep sends
    whose sender died (one retry, or "delivery unknown"), enqueue due retries and sends
    whose enqueue was lost; then copy fallback-recorded sends into the database."""
    expired = unknown = 0
    due: list[int] = []
    for tenant_id in Tenant.objects.values_list("pk", flat=True):
        # Before the retries: a dead claim moved back to `retrying` is due at once.
        unknown += len(send_claims_sweep(tenant_id=tenant_id).unknown)
        with tenant_context(tenant_id):
            expired += approval_expire_stale(tenant_id=tenant_id)
            due += send_retry_due(tenant_id=tenant_id) + send_missing(tenant_id=tenant_id)
    for approval_id in due:
        async_task("approvals.tasks.send_approval", approval_id)
    reconciled = send_fallback_reconcile()
    return {"expired": expired, "enqueued": len(due), "reconciled": reconciled, "unknown": unknown}


def approvals_digest() -> dict[str, int]:
    """The scheduled job (every five minutes): the approvers' digests whose period has begun;
    each user and period at most once (approvals.digest)."""
    outcomes: dict[str, int] = {}
    for result in digest_send_due():
        outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
    return outcomes
