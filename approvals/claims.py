"""Sends whose sender died: the sweeper for dead claims, and a person's way out of "unknown".

A send is claimed (`sending`, `claimed_at`) and committed before the backend is called, and
`handed_at` is committed just before the call (`approvals.sending`). A worker killed in
between (SIGKILL, out of memory, a lost machine) leaves the row `sending` for good. Once the
claim is older than PAYPILOT_SEND_CLAIM_TIMEOUT (above the task timeout, so its sender is
certainly gone) the sweeper decides, for each such row:
- an acceptance written to the fallback directory: left to `send_fallback_reconcile`;
- never handed to the backend, first time: back to `retrying`, due now, marked
  `reclaimed`, so the ordinary retry sends it (the same row, so the one-send constraint and
  the compare-and-set claim still allow one send at most);
- handed to the backend without a recorded acceptance, or its one retry died too, or a claim
  from before the hand-off marker existed: `unknown` ("delivery unknown"), shown in the
  console, the refusal review and `/metrics`, until a person checks the provider's log and
  marks it sent or resends it. Nothing resends it automatically: it may have gone out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from approvals.models import EmailSend
from approvals.sending import _record_sent, fallback_path
from approvals.services import ApprovalError, approver_may_act, send_enqueue
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context

logger = logging.getLogger("paypilot.approvals")

Status = EmailSend.Status

# error_code of a row the sweeper moved (one code per path, shown in the console).
SENDER_DIED = "sender_died"  # died before the hand-off: retried once, automatically
SENDER_DIED_AFTER_HANDOFF = "sender_died_after_handoff"  # may have gone out: a person checks
SENDER_DIED_AGAIN = "sender_died_again"  # the one automatic retry died too: a person decides
SENDER_DIED_UNMARKED = "sender_died_unmarked"  # claimed before hand-off markers existed
RESEND_REQUESTED = "resend_requested"  # a person checked and asked for it to be sent

# ApprovalError codes of the two actions.
NOT_DELIVERY_UNKNOWN = "not_delivery_unknown"  # only an `unknown` send can be resolved by hand


@dataclass
class SweepResult:
    retried: list[int] = field(default_factory=list)  # approval ids back to `retrying`
    unknown: list[int] = field(default_factory=list)  # send ids flagged delivery unknown
    left_to_fallback: list[int] = field(default_factory=list)  # send ids the fallback records


def _stale(*, tenant_id: int | None, now: datetime) -> Any:
    cutoff = now - timedelta(seconds=settings.PAYPILOT_SEND_CLAIM_TIMEOUT)
    rows = EmailSend.objects.filter(status=Status.SENDING, message_id="").filter(
        Q(claimed_at__lte=cutoff) | Q(claimed_at__isnull=True, created_at__lte=cutoff)
    )
    return rows if tenant_id is None else rows.filter(tenant_id=tenant_id)


def send_claims_sweep(*, tenant_id: int | None = None, now: datetime | None = None) -> SweepResult:
    """Resolve the dead claims of one tenant (or all). Each move is a compare-and-set on the
    claim the sweeper read, so a sender that was only slow and finishes first wins, and two
    sweeps never both retry a row. Writes `approvals.send.reclaimed` or
    `approvals.send.delivery_unknown` in the move's transaction."""
    now = now or timezone.now()
    result = SweepResult()
    with tenant_context(tenant_id):
        stale = list(_stale(tenant_id=tenant_id, now=now).select_related("tenant"))
    for send in stale:
        if fallback_path(send.approval_id).exists():
            result.left_to_fallback.append(send.pk)  # accepted: the reconcile records it
            continue
        if send.claimed_at is None:
            reason = SENDER_DIED_UNMARKED
        elif send.handed_at is not None:
            reason = SENDER_DIED_AFTER_HANDOFF
        elif send.reclaimed:
            reason = SENDER_DIED_AGAIN
        else:
            reason = SENDER_DIED
        same_claim = EmailSend.objects.filter(
            pk=send.pk, status=Status.SENDING, claimed_at=send.claimed_at, handed_at=send.handed_at
        )
        with tenant_context(send.tenant_id):
            if reason == SENDER_DIED:
                moved = same_claim.update(status=Status.RETRYING, next_attempt_at=now,
                                          reclaimed=True, error_code=reason)
                event = "approvals.send.reclaimed"
            else:
                moved = same_claim.update(status=Status.UNKNOWN, next_attempt_at=None, error_code=reason)
                event = "approvals.send.delivery_unknown"
            if not moved:
                continue  # its sender was alive after all and moved it first
            audit_record(event=event, tenant=send.tenant,
                         detail={"approval": send.approval_id, "send": send.pk,
                                 "invoice_id": send.invoice_id, "reason": reason,
                                 "attempt": send.attempts})
        if reason == SENDER_DIED:
            result.retried.append(send.approval_id)
        else:
            logger.warning("send %s: delivery unknown (%s); a person must check", send.pk, reason)
            result.unknown.append(send.pk)
    return result


def _locked_unknown(*, send: EmailSend, user: Any) -> EmailSend:
    """Inside the caller's tenant transaction: the row locked, or ApprovalError."""
    if not approver_may_act(user=user, approval=send.approval):
        raise ApprovalError("forbidden", "you may not resolve this send")
    locked = EmailSend.objects.select_for_update().select_related(
        "approval__tenant", "approval__invoice", "tenant"
    ).get(pk=send.pk)
    if locked.status != Status.UNKNOWN:
        raise ApprovalError(NOT_DELIVERY_UNKNOWN, f"send {send.pk} is {locked.status}, not delivery unknown")
    return locked


def send_mark_sent(*, send: EmailSend, user: Any, now: datetime | None = None) -> EmailSend:
    """A person found the message in the provider's log: record it as sent (the invoice moves
    to `messaged`, as on any send) with `approvals.send.marked_sent` naming them. Raises
    ApprovalError (forbidden, not_delivery_unknown)."""
    with tenant_context(send.tenant_id):
        locked = _locked_unknown(send=send, user=user)
        _record_sent(send=locked, approval=locked.approval, message_id="",
                     sent_at=locked.handed_at or now or timezone.now())
        audit_record(event="approvals.send.marked_sent", tenant=locked.tenant, actor=f"user:{user.pk}",
                     detail={"approval": locked.approval_id, "send": locked.pk,
                             "invoice_id": locked.invoice_id})
    locked.refresh_from_db()
    return locked


def send_resend(*, send: EmailSend, user: Any, now: datetime | None = None) -> EmailSend:
    """A person found no trace of the message at the provider: put the same row back to
    `retrying`, due now, and queue its send (every gate runs again; an approval older than
    the TTL is refused as usual). Audited as `approvals.send.resend_requested`. Raises
    ApprovalError (forbidden, not_delivery_unknown)."""
    now = now or timezone.now()
    with tenant_context(send.tenant_id):
        locked = _locked_unknown(send=send, user=user)
        EmailSend.objects.filter(pk=locked.pk).update(
            status=Status.RETRYING, next_attempt_at=now, handed_at=None, error_code=RESEND_REQUESTED
        )
        audit_record(event="approvals.send.resend_requested", tenant=locked.tenant,
                     actor=f"user:{user.pk}",
                     detail={"approval": locked.approval_id, "send": locked.pk,
                             "invoice_id": locked.invoice_id})
    send_enqueue(approval_id=locked.approval_id)  # after commit: the task must see `retrying`
    locked.refresh_from_db()
    return locked
