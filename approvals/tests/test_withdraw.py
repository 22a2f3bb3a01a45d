"""pending -> withdrawn: a request leaves the queue when its invoice closes or a newer draft
replaces it, in the ledger move's transaction; decisions and the bulk action then refuse it
and say why (issue 16)."""

from __future__ import annotations

import pytest
from django.core import mail
from django.db import transaction
from django.urls import reverse

from approvals.models import ApprovalRequest
from approvals.services import (
    APPROVAL_WITHDRAWN,
    ApprovalError,
    approval_approve,
    approval_open,
    approval_reject,
    approvals_withdraw,
)
from approvals.tests.factories import DraftFactory
from ledger.models import Invoice
from ledger.services import IllegalTransition, invoice_mark_churned, invoice_transition
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db

Status = ApprovalRequest.Status
Reason = ApprovalRequest.WithdrawnReason
QUEUE = reverse("admin:approvals_approvalrequest_changelist")


def withdrawn_events() -> int:
    return AuditEvent.objects.filter(event="approvals.draft.withdrawn").count()


def test_withdraw_moves_pending_only_and_is_silent_when_repeated(tenant, make_approval, approver):
    pending, approved = make_approval(tenant), make_approval(tenant)
    approval_approve(approval=approved, user=approver)

    assert approvals_withdraw(invoice_ids=[pending.invoice_id, approved.invoice_id], reason=Reason.INVOICE_PAID) == 1
    assert approvals_withdraw(invoice_ids=[pending.invoice_id], reason=Reason.INVOICE_PAID) == 0  # redelivery
    pending.refresh_from_db()
    approved.refresh_from_db()
    assert (pending.status, pending.withdrawn_reason) == (Status.WITHDRAWN, "invoice_paid")
    assert approved.status == Status.APPROVED and approved.withdrawn_reason == ""
    assert withdrawn_events() == 1


def test_a_withdrawn_request_cannot_be_approved_or_rejected(tenant, make_approval, approver):
    approval = make_approval(tenant)
    approvals_withdraw(invoice_ids=[approval.invoice_id], reason=Reason.SUPERSEDED)
    for decide in (approval_approve, approval_reject):
        with pytest.raises(ApprovalError) as refused:
            decide(approval=approval, user=approver)
        assert refused.value.code == APPROVAL_WITHDRAWN
        assert "a newer draft replaced it" in refused.value.detail
    approval.refresh_from_db()
    assert approval.status == Status.WITHDRAWN and approval.decided_by_id is None


@pytest.mark.parametrize(("to", "reason"), [
    (Invoice.State.RECOVERED, Reason.INVOICE_PAID), (Invoice.State.CHURNED, Reason.INVOICE_CANCELLED),
    (Invoice.State.EXHAUSTED, Reason.INVOICE_EXHAUSTED), (Invoice.State.VOIDED, Reason.INVOICE_VOIDED),
])
def test_every_ledger_close_withdraws_with_its_reason(tenant, make_approval, to, reason):
    approval = make_approval(tenant)
    invoice_transition(invoice=approval.invoice, to=to, cause="test")
    approval.refresh_from_db()
    assert (approval.status, approval.withdrawn_reason) == (Status.WITHDRAWN, reason)


def test_moves_that_keep_the_invoice_open_leave_the_request_pending(tenant, make_approval):
    approval = make_approval(tenant)
    invoice_transition(invoice=approval.invoice, to=Invoice.State.MESSAGED, cause="test")
    approval.refresh_from_db()
    assert approval.status == Status.PENDING and withdrawn_events() == 0


def test_the_withdrawal_rolls_back_with_the_ledger_move(tenant, make_approval):
    approval = make_approval(tenant)
    with pytest.raises(RuntimeError), transaction.atomic():
        invoice_transition(invoice=approval.invoice, to=Invoice.State.RECOVERED, cause="test")
        assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.WITHDRAWN  # same transaction
        raise RuntimeError("the caller's transaction fails after the move")
    approval.refresh_from_db()
    assert approval.status == Status.PENDING and withdrawn_events() == 0
    assert Invoice.objects.get(pk=approval.invoice_id).state == Invoice.State.FAILED


def test_an_illegal_move_withdraws_nothing(tenant, make_approval):
    approval = make_approval(tenant)
    invoice_transition(invoice=approval.invoice, to=Invoice.State.RECOVERED, cause="test")
    again = approval_open(draft=DraftFactory(tenant=tenant, invoice=approval.invoice))  # opened by hand
    with pytest.raises(IllegalTransition):
        invoice_transition(invoice=approval.invoice, to=Invoice.State.CHURNED, cause="test")
    again.refresh_from_db()
    assert again.status == Status.PENDING  # nothing moved, so nothing withdrew it


def test_a_cancellation_withdraws_every_open_invoice_of_the_subscription(tenant, make_approval):
    first, second = make_approval(tenant), make_approval(tenant)
    Invoice.objects.filter(pk__in=[first.invoice_id, second.invoice_id]).update(subscription_id="sub_1")
    assert invoice_mark_churned(tenant=tenant, provider=first.invoice.provider, subscription_id="sub_1") == 2
    assert set(ApprovalRequest.objects.values_list("status", "withdrawn_reason")) == {
        (Status.WITHDRAWN, Reason.INVOICE_CANCELLED)}


def test_a_newer_draft_supersedes_the_pending_request(tenant, make_approval, approver):
    older = make_approval(tenant)
    newer = approval_open(draft=DraftFactory(tenant=tenant, invoice=older.invoice))
    older.refresh_from_db()
    assert (older.status, older.withdrawn_reason) == (Status.WITHDRAWN, Reason.SUPERSEDED)
    assert newer.status == Status.PENDING
    assert approval_open(draft=newer.draft).pk == newer.pk  # reopening the same draft withdraws nothing
    assert ApprovalRequest.objects.get(pk=newer.pk).status == Status.PENDING


def test_a_pending_request_left_on_a_closed_invoice_is_withdrawn_when_someone_decides(
        tenant, make_approval, approver):
    """Data older than the close hook: the invoice closed without touching the request."""
    approval = make_approval(tenant)
    Invoice.objects.filter(pk=approval.invoice_id).update(state=Invoice.State.RECOVERED)
    with pytest.raises(ApprovalError) as refused:
        approval_approve(approval=approval, user=approver)
    assert refused.value.code == APPROVAL_WITHDRAWN
    approval.refresh_from_db()
    assert (approval.status, approval.withdrawn_reason) == (Status.WITHDRAWN, Reason.INVOICE_PAID)


def test_bulk_approve_skips_what_cannot_be_approved_and_says_why(client, approver, tenant, make_approval,
                                                                 sending_on):
    ready, paid, legacy, approved, superseded = (make_approval(tenant) for _ in range(5))
    invoice_transition(invoice=paid.invoice, to=Invoice.State.RECOVERED, cause="test")  # withdrawn by the hook
    Invoice.objects.filter(pk=legacy.invoice_id).update(state=Invoice.State.CHURNED)  # closed, still pending
    approval_approve(approval=approved, user=approver)
    approval_open(draft=DraftFactory(tenant=tenant, invoice=superseded.invoice))
    mail.outbox.clear()
    client.force_login(approver)
    selected = [str(a.pk) for a in (ready, paid, legacy, approved, superseded)]
    data = {"action": "approve_selected", "_selected_action": selected}

    confirm = client.post(QUEUE + "?queue=all", data).content.decode()
    assert "Yes, approve 1 draft" in confirm
    for words in ("Invoice paid", "Subscription cancelled", "Already approved", "Replaced by a newer draft"):
        assert words in confirm

    done = client.post(QUEUE + "?queue=all", {**data, "post": "yes"}, follow=True)
    message = [str(m) for m in done.context["messages"]][0]
    assert message.startswith("Bulk approve: 1 approved. Skipped 4 that cannot be approved:")
    for words in ("1 invoice paid", "1 subscription cancelled", "1 already approved", "1 replaced by a newer draft"):
        assert words in message
    assert len(mail.outbox) == 1 and mail.outbox[0].to == [ready.invoice.customer.email]
    legacy.refresh_from_db()
    assert (legacy.status, legacy.withdrawn_reason) == (Status.WITHDRAWN, Reason.INVOICE_CANCELLED)
    assert not ApprovalRequest.objects.filter(status=Status.PENDING).exclude(
        draft__invoice=superseded.invoice).exists()


def test_the_queue_shows_the_live_invoice_state_and_drops_withdrawn_requests(client, approver, tenant,
                                                                           make_approval):
    open_one, paid = make_approval(tenant, subject="Still owed"), make_approval(tenant, subject="Paid since")
    invoice_transition(invoice=paid.invoice, to=Invoice.State.RECOVERED, cause="test")
    client.force_login(approver)
    queue = client.get(QUEUE).content.decode()
    assert "Still owed" in queue and "Paid since" not in queue
    assert 'title="' + str(open_one.invoice) + ' (failed)">Unpaid<' in queue
    withdrawn = client.get(QUEUE, {"queue": "withdrawn"}).content.decode()
    assert "Paid since" in withdrawn and ">Paid<" in withdrawn and ">Invoice paid<" in withdrawn
