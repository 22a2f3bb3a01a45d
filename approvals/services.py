"""Approval lifecycle: open, approve (two people when high value), reject, edit, expire,
withdraw.

State table: pending -> approved | rejected | expired | withdrawn, nothing else. Each decision locks
the request row, treats a repeat of the same decision as a silent no-op (a double click),
refuses anything else with an `ApprovalError` reason code, and writes its audit event in
the same transaction. An approval enqueues the send after its transaction has committed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from approvals.models import ApprovalRequest, DraftEdit
from dunning.guards import guard_check
from dunning.models import Draft
from dunning.services import StoredDraft
from ledger.models import Invoice
from ledger.money import to_minor
from paypilot.admin_tenancy import admin_tenant_for
from paypilot.bulk import values_insert
from paypilot.keyed import rows_locked_by_keys
from paypilot.models import Tenant
from paypilot.services import audit_record, audit_record_many, audit_values, pii_hash, rows_insert
from paypilot.tenancy import tenant_context

logger = logging.getLogger("paypilot.approvals")

Status = ApprovalRequest.Status

APPROVE_PERMISSION = "approvals.approve_approvalrequest"

# The one table of allowed moves; same-state moves are answered before it is read.
ALLOWED_MOVES: dict[str, frozenset[str]] = {
    Status.PENDING: frozenset({Status.APPROVED, Status.REJECTED, Status.EXPIRED, Status.WITHDRAWN}),
    Status.APPROVED: frozenset(),
    Status.REJECTED: frozenset(),
    Status.EXPIRED: frozenset(),
    Status.WITHDRAWN: frozenset(),
}

Withdrawn = ApprovalRequest.WithdrawnReason
# Why a closing invoice withdraws its pending request, by the state it closed into.
WITHDRAWN_BY_STATE: dict[str, str] = {
    Invoice.State.RECOVERED: Withdrawn.INVOICE_PAID,
    Invoice.State.CHURNED: Withdrawn.INVOICE_CANCELLED,
    Invoice.State.EXHAUSTED: Withdrawn.INVOICE_EXHAUSTED,
    Invoice.State.VOIDED: Withdrawn.INVOICE_VOIDED,
}

# Reason codes an ApprovalError carries (shown in the console, never a stack trace).
FORBIDDEN = "forbidden"  # not an approver of this tenant
NOT_PENDING = "not_pending"  # already decided the other way
APPROVAL_EXPIRED = "approval_expired"  # the TTL passed before anyone decided
SECOND_APPROVER_REQUIRED = "second_approver_required"  # high value: a different person must agree
GUARD_REFUSED = "guard_refused"  # an edit the output guards refuse
DRAFT_WITHOUT_INVOICE = "draft_without_invoice"  # only ledger invoices can be sent to
APPROVAL_WITHDRAWN = "approval_withdrawn"  # the invoice closed or a newer draft replaced it


class ApprovalError(Exception):
    def __init__(self, code: str, detail: str = "", reasons: list[str] | None = None) -> None:
        super().__init__(detail or code)
        self.code = code
        self.detail = detail or code
        self.reasons = reasons or []


def _actor(user: Any) -> str:
    return f"user:{user.pk}" if user is not None else "system"


def approver_may_act(*, user: Any, approval: ApprovalRequest) -> bool:
    """Platform admins act everywhere; others need the approve permission and membership
    of the request's tenant."""
    if user is None or not user.is_active:
        return False
    if user.is_superuser:
        return True
    if not user.has_perm(APPROVE_PERMISSION):
        return False
    tenant = admin_tenant_for(user)
    return tenant is not None and tenant.pk == approval.tenant_id


def annual_value_minor(*, draft: Draft, invoice: Invoice) -> int:
    """12 x MRR, or the invoice amount when MRR is unknown (the decisions impact rule);
    the decision's own figure wins when the pipeline recorded one."""
    decision = getattr(draft, "decision", None)
    recorded = getattr(decision, "annual_value_at_risk_minor", None) if decision else None
    return _annual_minor(recorded=recorded, invoice=invoice)


def _annual_minor(*, recorded: int | None, invoice: Invoice) -> int:
    if recorded is not None:
        return int(recorded)
    customer = invoice.customer
    if customer is not None and customer.mrr_minor:
        return 12 * int(customer.mrr_minor)
    return int(invoice.amount_minor)


def _is_high_value(annual_minor: int, currency: str) -> bool:
    threshold = settings.PAYPILOT_HIGH_VALUE_ANNUAL
    return threshold > 0 and annual_minor >= to_minor(threshold, currency)


def approval_open(*, draft: Draft, now: datetime | None = None) -> ApprovalRequest:
    """The request for `draft`, opened if there is none yet. Idempotent: a second call (a
    redelivered webhook) returns the existing request whatever its status. Raises
    ApprovalError(draft_without_invoice) for a draft not tied to a ledger invoice."""
    return approvals_open(drafts=[draft], now=now)[0]


def approvals_open(*, drafts: list[Draft], now: datetime | None = None) -> list[ApprovalRequest]:
    """`approval_open` for many drafts: the requests in the drafts' order, the missing ones
    created in one INSERT. A draft whose invoice (and its customer) is already loaded is
    not read again. Raises ApprovalError(draft_without_invoice) before storing anything."""
    if any(draft.invoice_id is None for draft in drafts):
        raise ApprovalError(DRAFT_WITHOUT_INVOICE, "only drafts for ledger invoices can be approved")
    existing = {row.draft_id: row for row in ApprovalRequest.objects.filter(draft__in=[d.pk for d in drafts])}
    missing = [draft for draft in drafts if draft.pk not in existing]
    if not missing:
        return [existing[draft.pk] for draft in drafts]
    invoices = _invoices_with_customers(missing)
    now = now or timezone.now()
    expires_at = now + timedelta(hours=settings.PAYPILOT_APPROVAL_TTL_HOURS)
    rows = []
    for draft in missing:
        invoice = invoices[draft.invoice_id]  # type: ignore[index]
        annual = annual_value_minor(draft=draft, invoice=invoice)
        rows.append(ApprovalRequest(
            tenant_id=draft.tenant_id, draft=draft, invoice=invoice, source=draft.source, subject=draft.subject,
            body=draft.body, requested_at=now, expires_at=expires_at,
            high_value=_is_high_value(annual, invoice.currency), annual_value_minor=annual,
        ))
    try:
        with transaction.atomic():
            # A newer draft replaces whatever still waits for the same invoice.
            approvals_withdraw(invoice_ids=[row.invoice_id for row in rows], reason=Withdrawn.SUPERSEDED,
                               now=now)
            rows_insert(rows)
    except IntegrityError:  # opened concurrently: the one that won is the answer
        if len(missing) > 1:  # find which one, each on its own
            rows = [approvals_open(drafts=[draft], now=now)[0] for draft in missing]
        else:
            rows = list(ApprovalRequest.objects.filter(draft=missing[0]))
    existing.update({row.draft_id: row for row in rows})
    return [existing[draft.pk] for draft in drafts]


def approvals_open_many(*, drafts: list[StoredDraft], invoices: Mapping[int, Invoice],
                        now: datetime | None = None) -> list[int]:
    """Open the approval request of each draft just stored in the caller's transaction
    (`dunning.services.drafts_for_invoices`), in one INSERT from plain rows (no model
    instance per request); returns the requests' ids in the drafts' order. `invoices`: the
    drafts' invoices by id, with their customers loaded (the annual value reads the MRR).
    A pending request of the same invoice is withdrawn as superseded first, as
    `approvals_open` does. New drafts have no request yet, so nothing is looked up; a
    request that exists anyway violates the draft's unique constraint and the transaction
    rolls back. Raises ApprovalError(draft_without_invoice) before storing anything."""
    if any(draft.invoice_id is None for draft in drafts):
        raise ApprovalError(DRAFT_WITHOUT_INVOICE, "only drafts for ledger invoices can be approved")
    if not drafts:
        return []
    now = now or timezone.now()
    expires_at = now + timedelta(hours=settings.PAYPILOT_APPROVAL_TTL_HOURS)
    rows: list[dict[str, Any]] = []
    for draft in drafts:
        invoice = invoices[draft.invoice_id]  # type: ignore[index]
        annual = _annual_minor(recorded=draft.annual_value_at_risk_minor, invoice=invoice)
        rows.append({
            "tenant_id": draft.tenant_id, "draft_id": draft.id, "invoice_id": invoice.pk, "source": draft.source,
            "subject": draft.subject, "body": draft.body, "requested_at": now, "expires_at": expires_at,
            "high_value": _is_high_value(annual, invoice.currency), "annual_value_minor": annual,
        })
    with transaction.atomic():
        approvals_withdraw(invoice_ids=[row["invoice_id"] for row in rows], reason=Withdrawn.SUPERSEDED, now=now)
        return values_insert(ApprovalRequest, rows)


def _invoices_with_customers(drafts: list[Draft]) -> dict[int, Invoice]:
    """The drafts' invoices with their customers, read only where not already in memory."""
    found: dict[int, Invoice] = {}
    draft_invoice, invoice_customer = Draft._meta.get_field("invoice"), Invoice._meta.get_field("customer")
    for draft in drafts:
        cached = cast(Invoice | None, draft_invoice.get_cached_value(draft, None))  # type: ignore[union-attr]
        if cached is not None and (cached.customer_id is None or invoice_customer.is_cached(cached)):  # type: ignore[union-attr]
            found[cached.pk] = cached
    unread = {draft.invoice_id for draft in drafts} - set(found)
    if unread:
        found.update(Invoice.objects.select_related("customer").in_bulk(unread))
    return found


def _detail(approval: ApprovalRequest, **extra: Any) -> dict[str, Any]:
    return {
        "approval": approval.pk,
        "draft": approval.draft_id,
        "invoice_id": approval.invoice_id,
        **extra,
    }


def _expire_locked(locked: ApprovalRequest, *, now: datetime) -> None:
    locked.status = Status.EXPIRED
    locked.decided_at = now
    locked.save(update_fields=["status", "decided_at"])
    audit_record(event="approvals.draft.expired", tenant=locked.tenant, detail=_detail(locked))


def _invoice_closed_into(approval: ApprovalRequest) -> str:
    """The terminal state the request's invoice is in, or "" while it is open."""
    state = Invoice.objects.filter(pk=approval.invoice_id).values_list("state", flat=True).first()
    return state if state in Invoice.TERMINAL_STATES else ""


def approval_blocker(*, approval: ApprovalRequest, now: datetime | None = None) -> str:
    """Why `approval` cannot be approved now, as a reason code ("" when it can): the bulk
    action skips these and says so. Reads the invoice as loaded with the request."""
    now = now or timezone.now()
    if approval.status == Status.WITHDRAWN:
        return approval.withdrawn_reason or APPROVAL_WITHDRAWN
    if approval.status != Status.PENDING:
        return f"already_{approval.status}"
    if approval.expires_at <= now:
        return APPROVAL_EXPIRED
    state = approval.invoice.state
    if state in Invoice.TERMINAL_STATES:
        return WITHDRAWN_BY_STATE[state]
    return ""


def _decide(
    *, approval: ApprovalRequest, user: Any, to: str, note: str, now: datetime | None
) -> str:
    """Shared body of approve and reject; returns the outcome code."""
    if not approver_may_act(user=user, approval=approval):
        raise ApprovalError(FORBIDDEN, "you may not decide on this draft")
    now = now or timezone.now()
    outcome = ""
    with transaction.atomic():
        locked = ApprovalRequest.objects.select_for_update().select_related("tenant").get(
            pk=approval.pk
        )
        if locked.status == Status.PENDING and locked.expires_at <= now:
            _expire_locked(locked, now=now)  # committed with this block; refused below
        closed_into = _invoice_closed_into(locked)
        if locked.status == Status.PENDING and closed_into:
            # Left pending by data older than the close hook: withdrawn now, refused below.
            approvals_withdraw(invoice_ids=[locked.invoice_id], reason=WITHDRAWN_BY_STATE[closed_into], now=now)
            locked.refresh_from_db()
        if locked.status == to:
            outcome = f"already_{to}"
        elif to not in ALLOWED_MOVES[locked.status]:
            refusals: dict[str, str] = {Status.EXPIRED: APPROVAL_EXPIRED, Status.WITHDRAWN: APPROVAL_WITHDRAWN}
            outcome = refusals.get(locked.status, NOT_PENDING)
        elif to == Status.APPROVED and locked.high_value and locked.first_approver_id is None:
            locked.first_approver = user
            locked.first_approved_at = now
            locked.save(update_fields=["first_approver", "first_approved_at"])
            audit_record(
                event="approvals.draft.first_approval", tenant=locked.tenant, actor=_actor(user),
                detail=_detail(locked, approvals=1),
            )
            outcome = "first_approval"
        elif to == Status.APPROVED and locked.high_value and locked.first_approver_id == user.pk:
            outcome = SECOND_APPROVER_REQUIRED
        else:
            locked.status = to
            locked.decided_by = user
            locked.decided_at = now
            locked.note = note[:1000]
            locked.save(update_fields=["status", "decided_by", "decided_at", "note"])
            extra: dict[str, Any] = {"edited": locked.edited}
            if note:
                extra["note_hash"] = pii_hash(note)
            if to == Status.APPROVED:
                extra["approvals"] = 2 if locked.high_value else 1
            audit_record(
                event=f"approvals.draft.{to}", tenant=locked.tenant, actor=_actor(user),
                detail=_detail(locked, **extra),
            )
            outcome = to
    approval.refresh_from_db()
    if outcome in (NOT_PENDING, APPROVAL_EXPIRED, APPROVAL_WITHDRAWN, SECOND_APPROVER_REQUIRED):
        messages = {
            NOT_PENDING: "this draft was already decided",
            APPROVAL_EXPIRED: "this approval request expired before anyone decided",
            APPROVAL_WITHDRAWN: "this draft was withdrawn: "
            + (Withdrawn(approval.withdrawn_reason).label if approval.withdrawn_reason else "its invoice closed"),
            SECOND_APPROVER_REQUIRED: "a high-value draft needs a second, different approver",
        }
        raise ApprovalError(outcome, messages[outcome])
    return outcome


def approval_approve(
    *, approval: ApprovalRequest, user: Any, note: str = "", now: datetime | None = None
) -> str:
    """Say yes. Returns "approved", "first_approval" (high value, one of two) or
    "already_approved". On "approved" the send task is enqueued after commit. Raises
    ApprovalError (forbidden, not_pending, approval_expired, second_approver_required)."""
    outcome = _decide(approval=approval, user=user, to=Status.APPROVED, note=note, now=now)
    if outcome == Status.APPROVED:
        send_enqueue(approval_id=approval.pk)
    return outcome


def approval_reject(
    *, approval: ApprovalRequest, user: Any, note: str = "", now: datetime | None = None
) -> str:
    """Say no: one person's no is enough, even for high value. Returns "rejected" or
    "already_rejected"; raises ApprovalError like approval_approve."""
    return _decide(approval=approval, user=user, to=Status.REJECTED, note=note, now=now)


def edit_refusals(*, subject: str, body: str) -> list[str]:
    """Why an edited subject/body may not be used: the dunning output guard (links,
    secret-shaped text, card-like digits, placeholders) and empty copy. Empty list: fine."""
    reasons = list(guard_check(subject=subject, body=body).reasons)
    if not subject.strip() or not body.strip():
        reasons.append("empty_copy")
    return sorted(set(reasons))


def approval_edit(
    *, approval: ApprovalRequest, user: Any, subject: str, body: str
) -> DraftEdit | None:
    """Change the copy of a pending request before approving it. Guards re-run on the new
    copy (ApprovalError guard_refused with the reasons); the edit is stored as a
    `DraftEdit` and audited. A high-value first approval is cleared: it was given to other
    words. Returns None when nothing changed."""
    if not approver_may_act(user=user, approval=approval):
        raise ApprovalError(FORBIDDEN, "you may not edit this draft")
    subject, body = subject.strip(), body.strip()
    reasons = edit_refusals(subject=subject, body=body)
    if reasons:
        raise ApprovalError(GUARD_REFUSED, "the edited copy was refused by the guards", reasons)
    with transaction.atomic():
        locked = ApprovalRequest.objects.select_for_update().select_related("tenant").get(
            pk=approval.pk
        )
        if locked.status != Status.PENDING or locked.expires_at <= timezone.now():
            raise ApprovalError(NOT_PENDING, "only a pending draft can be edited")
        if locked.subject == subject and locked.body == body:
            return None
        edit = DraftEdit.objects.create(
            tenant_id=locked.tenant_id, approval=locked, editor=_actor(user),
            subject_before=locked.subject, subject_after=subject,
            body_before=locked.body, body_after=body,
        )
        locked.subject, locked.body, locked.edited = subject, body, True
        locked.first_approver, locked.first_approved_at = None, None
        locked.save(update_fields=["subject", "body", "edited", "first_approver", "first_approved_at"])
        audit_record(
            event="approvals.draft.edited", tenant=locked.tenant, actor=_actor(user),
            detail=_detail(locked, edited=True, subject_hash=pii_hash(subject)),
        )
    approval.refresh_from_db()
    return edit


def approval_expire_stale(*, tenant_id: int | None = None, now: datetime | None = None) -> int:
    """Expire every pending request (of one tenant, or all) past its expiry; one audit event
    each. Returns how many."""
    now = now or timezone.now()
    if tenant_id is None:
        # Row-level security shows one tenant's requests at a time: go tenant by tenant.
        return sum(
            approval_expire_stale(tenant_id=pk, now=now)
            for pk in Tenant.objects.order_by("pk").values_list("pk", flat=True)
        )
    expired = 0
    due = ApprovalRequest.objects.filter(tenant_id=tenant_id, status=Status.PENDING, expires_at__lte=now)
    with tenant_context(tenant_id):
        pks = list(due.values_list("pk", flat=True))
    for pk in pks:
        with tenant_context(tenant_id):
            locked = ApprovalRequest.objects.select_for_update().select_related("tenant").get(pk=pk)
            if locked.status == Status.PENDING and locked.expires_at <= now:
                _expire_locked(locked, now=now)
                expired += 1
    return expired


def approvals_withdraw(*, invoice_ids: list[int], reason: str, now: datetime | None = None) -> int:
    """Withdraw every pending request of these invoices (pending -> withdrawn) with `reason`
    (an `ApprovalRequest.WithdrawnReason`), inside the caller's transaction: the rows are
    locked invoice by invoice (`rows_locked_by_keys`: an index probe each), moved, and
    audited (`approvals.draft.withdrawn`) in one INSERT. Returns how many moved; none
    pending is a silent no-op (a redelivered event)."""
    if not invoice_ids:
        return 0
    now = now or timezone.now()
    with transaction.atomic():
        locked = rows_locked_by_keys(ApprovalRequest, key_fields=("invoice_id",),
                                     keys=[(pk,) for pk in invoice_ids], filters={"status": Status.PENDING})
        if not locked:
            return 0
        ApprovalRequest.objects.filter(pk__in=[row.pk for row in locked]).update(
            status=Status.WITHDRAWN, withdrawn_reason=reason, decided_at=now,
        )
        audit_record_many([
            audit_values(event="approvals.draft.withdrawn", tenant=row.tenant_id,
                        detail=_detail(row, reason=reason, status_from=Status.PENDING))
            for row in locked
        ])
    return len(locked)


def approvals_withdraw_on_close(*, invoice: Invoice, to: str, now: datetime | None = None) -> int:
    """The ledger's close hook (registered in `ApprovalsConfig.ready`): runs inside the
    transaction that moved `invoice` into the closed state `to`, so the request leaves the
    queue with the ledger move or not at all."""
    return approvals_withdraw(invoice_ids=[invoice.pk], reason=WITHDRAWN_BY_STATE[to], now=now)


def send_enqueue(*, approval_id: int) -> None:
    """Queue the send task for a committed approval.

    With the ORM broker the queue row is written in the caller's transaction (a request on
    PostgreSQL runs in one), so it becomes visible with the approval or not at all. With
    Redis the task is pushed only on commit: a worker must never read the request as still
    pending. The periodic tick re-enqueues any approval left without a send attempt."""
    from django_q.tasks import async_task

    cluster = settings.Q_CLUSTER
    if cluster.get("redis") and not cluster.get("sync"):
        transaction.on_commit(lambda: async_task("approvals.tasks.send_approval", approval_id))
        return
    async_task("approvals.tasks.send_approval", approval_id)
