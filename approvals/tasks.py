"""django-q2 entry points: take ids, call one service, return. Safe to run twice."""

from __future__ import annotations

from django_q.tasks import async_task

from approvals.sending import send_approved, send_fallback_reconcile, send_missing, send_retry_due
from approvals.services import approval_expire_stale


def send_approval(approval_id: int) -> str:
    return send_approved(approval_id=approval_id).outcome


def approvals_tick() -> dict[str, int]:
    """The scheduled job (every minute): expire stale requests, enqueue due retries and
    sends whose enqueue was lost, copy fallback-recorded sends into the database."""
    expired = approval_expire_stale()
    due = send_retry_due() + send_missing()
    for approval_id in due:
        async_task("approvals.tasks.send_approval", approval_id)
    reconciled = send_fallback_reconcile()
    return {"expired": expired, "enqueued": len(due), "reconciled": reconciled}
