"""Sending one approved draft: gates, a claimed `EmailSend` row, the backend, the ledger.

Order of work, and why:
1. The gates run; the first refusal is stored as a `SuppressedSend` and nothing is sent.
2. An `EmailSend` row is inserted and committed BEFORE the provider is called. Its unique
   constraint on the draft is what makes a send task that runs twice send once.
3. `handed_at` is committed (a compare-and-set on the claim), then the backend is called.
   A worker that dies before this leaves a claim the sweeper may retry once; after it,
   delivery is unknown and a person decides (`approvals.claims`). A transient failure
   leaves the row `retrying` with a backoff, a permanent one `failed` (nothing went out
   either way); an answer lost after the request left (`DeliveryError.ambiguous`) leaves it
   `unknown`, never retried automatically.
4. The provider's acceptance, the audit event and `invoice_mark_messaged` are written in one
   transaction. If that transaction fails, the acceptance is written to a durable file in
   PAYPILOT_SEND_FALLBACK_DIR, which the next attempt reads first so the email is never
   resent, and which `send_fallback_reconcile` later copies into the database.
Each step is its own transaction bound to the approval's tenant (`tenant_context`, for
PostgreSQL row-level security); the provider call sits outside any transaction, so the
claim in step 2 is committed before it and nothing can roll it back afterwards.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError
from django.db.models import F
from django.utils import timezone

from approvals.gates import SendContext, gates_run
from approvals.mailer import ComposedEmail, DeliveryError, email_compose, email_deliver
from approvals.models import ApprovalRequest, EmailSend, SuppressedSend
from ledger.services import IllegalTransition, invoice_mark_messaged
from paypilot.services import audit_record, pii_hash
from paypilot.tenancy import tenant_context, tenant_for_row

logger = logging.getLogger("paypilot.approvals")

SEND_MAX_ATTEMPTS = 4
# Minutes to wait after the 1st, 2nd and 3rd transient failure before the next attempt.
RETRY_BACKOFF_MINUTES = (1, 5, 30)


@dataclass(frozen=True)
class SendResult:
    # sent | dry_run | suppressed | retrying | failed | delivery_unknown | duplicate | already_done
    # | sent_unrecorded
    outcome: str
    reason: str = ""
    gate: str = ""
    send: EmailSend | None = None


# --- the durable fallback -------------------------------------------------------------------

def _fallback_dir() -> Path:
    return Path(settings.PAYPILOT_SEND_FALLBACK_DIR)


def fallback_path(approval_id: int) -> Path:
    return _fallback_dir() / f"approval-{approval_id}.json"


def _fallback_write(*, send: EmailSend, message_id: str, sent_at: datetime) -> Path:
    """Write the acceptance to disk and fsync it (file and directory) before returning, so a
    crash right after still leaves the record behind."""
    directory = _fallback_dir()
    directory.mkdir(parents=True, exist_ok=True)
    record = {
        "approval": send.approval_id, "send": send.pk, "draft": send.draft_id,
        "invoice": send.invoice_id, "tenant": send.tenant_id, "message_id": message_id,
        "sent_at": sent_at.isoformat(),
    }
    final = fallback_path(send.approval_id)
    temp = final.with_suffix(".tmp")
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, final)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return final


def _record_sent(*, send: EmailSend, approval: ApprovalRequest, message_id: str,
                 sent_at: datetime) -> None:
    """Provider acceptance -> send row, audit event and the invoice's `messaged`, together."""
    with tenant_context(approval.tenant_id):
        EmailSend.objects.filter(pk=send.pk).update(
            status=EmailSend.Status.SENT, message_id=message_id[:255], sent_at=sent_at,
            error_code="", next_attempt_at=None,
        )
        audit_record(
            event="approvals.send.sent", tenant=approval.tenant,
            detail={"approval": approval.pk, "send": send.pk, "draft": approval.draft_id,
                    "invoice_id": approval.invoice_id, "dry_run": False},
        )
        try:
            invoice_mark_messaged(invoice=approval.invoice, event_ref=f"send:{send.pk}")
        except IllegalTransition:
            # The gates let only open treatment invoices through; a move refused here was
            # audited by the ledger and must not undo the record of a real send.
            logger.warning("invoice %s not moved to messaged after send %s", approval.invoice_id, send.pk)


def send_fallback_reconcile() -> int:
    """Copy sends recorded only in the fallback directory into the database; each file
    moves to `reconciled/` once its row says sent. Returns how many were reconciled."""
    directory = _fallback_dir()
    if not directory.is_dir():
        return 0
    done = 0
    for path in sorted(directory.glob("approval-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        with tenant_context(record["tenant"]):
            send = EmailSend.objects.select_related("approval__tenant", "approval__invoice").filter(
                pk=record["send"]
            ).first()
            if send is None:
                logger.error("fallback %s names a send that does not exist", path.name)
                continue
            if send.status not in EmailSend.TOUCH_STATUSES:
                _record_sent(send=send, approval=send.approval, message_id=record["message_id"],
                             sent_at=datetime.fromisoformat(record["sent_at"]))
        (directory / "reconciled").mkdir(exist_ok=True)
        os.replace(path, directory / "reconciled" / path.name)
        done += 1
    return done


# --- the send ------------------------------------------------------------------------------

def _suppress(*, approval: ApprovalRequest, gate_name: str, reason: str, dry_run: bool,
              existing: EmailSend | None) -> SuppressedSend:
    with tenant_context(approval.tenant_id):
        row = SuppressedSend.objects.create(
            tenant_id=approval.tenant_id, approval=approval, invoice_id=approval.invoice_id,
            gate=gate_name, reason=reason, dry_run=dry_run,
        )
        if existing is not None:  # a retry stopped by a gate ends here
            EmailSend.objects.filter(pk=existing.pk).update(
                status=EmailSend.Status.FAILED, error_code=reason[:64], next_attempt_at=None
            )
        audit_record(
            event="approvals.send.suppressed", tenant=approval.tenant,
            detail={"approval": approval.pk, "draft": approval.draft_id,
                    "invoice_id": approval.invoice_id, "gate": gate_name, "reason": reason,
                    "dry_run": dry_run},
        )
    return row


def _claim(*, approval: ApprovalRequest, existing: EmailSend | None,
           composed: ComposedEmail) -> EmailSend | None:
    """Take the one send slot for this draft; None when someone else holds it."""
    if existing is None:
        try:
            with tenant_context(approval.tenant_id):
                return EmailSend.objects.create(
                    tenant_id=approval.tenant_id, approval=approval, draft_id=approval.draft_id,
                    invoice_id=approval.invoice_id, customer_id=approval.invoice.customer_id,
                    recipient_hash=pii_hash(composed.recipient.lower()), attempts=1,
                    claimed_at=timezone.now(),
                )
        except IntegrityError:
            return None
    with tenant_context(approval.tenant_id):
        claimed = EmailSend.objects.filter(pk=existing.pk, status=EmailSend.Status.RETRYING).update(
            status=EmailSend.Status.SENDING, attempts=F("attempts") + 1, next_attempt_at=None,
            claimed_at=timezone.now(), handed_at=None,
        )
        if not claimed:
            return None
        existing.refresh_from_db()
    return existing


def _hand_off(*, send: EmailSend, approval: ApprovalRequest) -> bool:
    """Commit "handed to the backend" just before the call. Only the holder of a live claim
    gets True: a claim the sweeper already took back (its holder was presumed dead) gets
    False and must not call the backend."""
    with tenant_context(approval.tenant_id):
        handed = EmailSend.objects.filter(
            pk=send.pk, status=EmailSend.Status.SENDING, claimed_at=send.claimed_at,
            handed_at__isnull=True,
        ).update(handed_at=timezone.now())
    return bool(handed)


def _record_failure(*, send: EmailSend, approval: ApprovalRequest, error: DeliveryError,
                    now: datetime) -> str:
    retry = error.transient and not error.ambiguous and send.attempts < SEND_MAX_ATTEMPTS
    fields: dict[str, Any] = {"error_code": error.code[:64]}
    if error.ambiguous:  # it may have gone out: a person checks (approvals.claims)
        fields.update(status=EmailSend.Status.UNKNOWN, next_attempt_at=None)
        event = "approvals.send.delivery_unknown"
    elif retry:
        wait = RETRY_BACKOFF_MINUTES[min(send.attempts, len(RETRY_BACKOFF_MINUTES)) - 1]
        fields.update(status=EmailSend.Status.RETRYING, next_attempt_at=now + timedelta(minutes=wait))
        event = "approvals.send.retrying"
    else:
        fields.update(status=EmailSend.Status.FAILED, next_attempt_at=None)
        event = "approvals.send.failed"
    with tenant_context(approval.tenant_id):
        EmailSend.objects.filter(pk=send.pk).update(**fields)
        audit_record(
            event=event,
            tenant=approval.tenant,
            detail={"approval": approval.pk, "send": send.pk, "invoice_id": approval.invoice_id,
                    "reason": error.code, "attempt": send.attempts},
        )
        send.refresh_from_db()
    return "delivery_unknown" if error.ambiguous else "retrying" if retry else "failed"


def send_approved(*, approval_id: int, now: datetime | None = None) -> SendResult:
    """Run the gates for one approval and send it at most once. Safe to run any number of
    times, concurrently too. Never raises for a gate or provider refusal: the outcome is in
    the result and in the database."""
    now = now or timezone.now()
    tenant_id = tenant_for_row(ApprovalRequest, approval_id)
    with tenant_context(tenant_id):
        approval = ApprovalRequest.objects.select_related(
            "tenant", "invoice__customer", "draft"
        ).get(pk=approval_id)
        if fallback_path(approval.pk).exists():
            return SendResult("sent_unrecorded")  # accepted by the provider already: never again
        existing = EmailSend.objects.filter(approval=approval).first()
        if existing is not None and existing.status != EmailSend.Status.RETRYING:
            return SendResult("already_done", send=existing)
        if existing is None and approval.decided_at is not None and SuppressedSend.objects.filter(
            approval=approval, created_at__gte=approval.decided_at
        ).exists():
            return SendResult("already_done")  # refused after the decision; a rerun changes nothing

        composed = email_compose(approval=approval)
        ctx = SendContext(
            approval=approval, tenant=approval.tenant, invoice=approval.invoice,
            customer=approval.invoice.customer, recipient=composed.recipient,
            subject=composed.subject, body=composed.body, link=composed.link,
            full_body=composed.full_body, html_body=composed.html_body, now=now,
        )
        gate = gates_run(ctx)
        if gate is not None:
            _suppress(approval=approval, gate_name=gate.name, reason=gate.reason,
                      dry_run=gate.dry_run, existing=existing)
            return SendResult("dry_run" if gate.dry_run else "suppressed", reason=gate.reason,
                              gate=gate.name)

    send = _claim(approval=approval, existing=existing, composed=composed)
    if send is None or not _hand_off(send=send, approval=approval):
        return SendResult("duplicate")
    try:
        message_id = email_deliver(composed=composed, send_id=send.pk)
    except DeliveryError as error:
        outcome = _record_failure(send=send, approval=approval, error=error, now=now)
        return SendResult(outcome, reason=error.code, send=send)
    sent_at = timezone.now()
    try:
        _record_sent(send=send, approval=approval, message_id=message_id, sent_at=sent_at)
    except Exception:
        logger.exception("send %s accepted by the provider but not recorded; writing fallback", send.pk)
        _fallback_write(send=send, message_id=message_id, sent_at=sent_at)
        return SendResult("sent_unrecorded", send=send)
    with tenant_context(approval.tenant_id):
        send.refresh_from_db()
    return SendResult("sent", send=send)


def send_retry_due(*, tenant_id: int | None = None, now: datetime | None = None) -> list[int]:
    """Approval ids (of one tenant, or all) whose send waits for a retry that is now due."""
    now = now or timezone.now()
    due = EmailSend.objects.filter(status=EmailSend.Status.RETRYING, next_attempt_at__lte=now)
    if tenant_id is not None:
        due = due.filter(tenant_id=tenant_id)
    return list(due.values_list("approval_id", flat=True))


def send_missing(*, tenant_id: int | None = None, older_than: timedelta = timedelta(minutes=2),
                 now: datetime | None = None) -> list[int]:
    """Approved requests with no send and no refusal since the decision: their enqueue was
    lost (a crash between commit and enqueue). The tick sends them."""
    now = now or timezone.now()
    approved = ApprovalRequest.objects.filter(
        status=ApprovalRequest.Status.APPROVED, decided_at__lte=now - older_than,
        decided_at__gte=now - timedelta(hours=settings.PAYPILOT_APPROVAL_TTL_HOURS),
        send__isnull=True,
    )
    if tenant_id is not None:
        approved = approved.filter(tenant_id=tenant_id)
    ids = []
    for approval in approved.only("pk", "decided_at"):
        refused = SuppressedSend.objects.filter(approval_id=approval.pk,
                                                created_at__gte=approval.decided_at)
        if not refused.exists() and not fallback_path(approval.pk).exists():
            ids.append(approval.pk)
    return ids
