"""Acceptance: five drafts pending, none sent; approve three, reject one, let one expire."""

from __future__ import annotations

from datetime import timedelta

from django.core import mail
from django.utils import timezone

from approvals.models import ApprovalRequest, EmailSend
from approvals.services import approval_approve, approval_expire_stale, approval_reject
from ledger.models import Invoice
from paypilot.models import AuditEvent


def test_three_approved_one_rejected_one_expired(tenant, approver, make_approval, sending_on):
    approvals = [make_approval(tenant) for _ in range(5)]
    assert all(a.status == ApprovalRequest.Status.PENDING for a in approvals)
    assert mail.outbox == []
    assert EmailSend.objects.count() == 0

    for approval in approvals[:3]:
        assert approval_approve(approval=approval, user=approver) == "approved"
    assert approval_reject(approval=approvals[3], user=approver, note="wrong customer") == "rejected"
    later = timezone.now() + timedelta(hours=sending_on.PAYPILOT_APPROVAL_TTL_HOURS, minutes=1)
    assert approval_expire_stale(now=later) == 1

    statuses = [ApprovalRequest.objects.get(pk=a.pk).status for a in approvals]
    assert statuses == ["approved", "approved", "approved", "rejected", "expired"]

    assert len(mail.outbox) == 3
    sent_to = sorted(m.to[0] for m in mail.outbox)
    assert sent_to == sorted(a.invoice.customer.email for a in approvals[:3])

    states = {a.invoice_id: Invoice.objects.get(pk=a.invoice_id).state for a in approvals}
    assert [states[a.invoice_id] for a in approvals] == [
        "messaged", "messaged", "messaged", "failed", "failed"
    ]
    assert Invoice.objects.filter(state=Invoice.State.MESSAGED).count() == 3

    decisions = AuditEvent.objects.filter(event__startswith="approvals.draft.").order_by("id")
    assert [e.event for e in decisions] == [
        "approvals.draft.approved", "approvals.draft.approved", "approvals.draft.approved",
        "approvals.draft.rejected", "approvals.draft.expired",
    ]
    assert [e.detail["approval"] for e in decisions] == [a.pk for a in approvals]
    assert decisions[3].actor == f"user:{approver.pk}" and decisions[4].actor == "system"
    # The audit row holds a hash of the note, never its text.
    assert "wrong customer" not in str(decisions[3].detail)
