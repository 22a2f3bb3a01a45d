"""Sends whose sender died: the sweeper's three paths, the person's two actions, the flags."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from approvals import sending
from approvals.claims import (
    SENDER_DIED,
    SENDER_DIED_AFTER_HANDOFF,
    SENDER_DIED_AGAIN,
    SENDER_DIED_UNMARKED,
    send_claims_sweep,
)
from approvals.mailer import email_compose
from approvals.models import EmailSend
from approvals.refusals import refusal_list
from approvals.services import approval_approve
from approvals.tasks import approvals_tick
from approvals.tests.factories import UserFactory, finance_user
from ledger.models import Invoice
from paypilot.models import AuditEvent

SENDS = reverse("admin:approvals_emailsend_changelist")
QUEUE = reverse("admin:approvals_approvalrequest_changelist")


@pytest.fixture
def approved(tenant, approver, make_approval, sending_on, monkeypatch):  # type: ignore[no-untyped-def]
    approval = make_approval(tenant)
    with monkeypatch.context() as patch:
        patch.setattr("approvals.services.send_enqueue", lambda **kwargs: None)
        approval_approve(approval=approval, user=approver)
    approval.refresh_from_db()
    return approval


def _dead_claim(approval, *, handed: bool, age_seconds: int = 301, reclaimed: bool = False):  # type: ignore[no-untyped-def]
    """What a SIGKILLed worker leaves: a committed claim, hand-off marked or not, no acceptance."""
    send = sending._claim(approval=approval, existing=None, composed=email_compose(approval=approval))
    assert send is not None
    if handed:
        assert sending._hand_off(send=send, approval=approval)
    then = timezone.now() - timedelta(seconds=age_seconds)
    EmailSend.objects.filter(pk=send.pk).update(
        claimed_at=then, handed_at=then if handed else None, reclaimed=reclaimed
    )
    send.refresh_from_db()
    return send


def _status(send: EmailSend) -> tuple[str, str]:
    send.refresh_from_db()
    return send.status, send.error_code


def test_normal_send_marks_the_hand_off(approved):
    assert sending.send_approved(approval_id=approved.pk).outcome == "sent"
    send = EmailSend.objects.get(approval=approved)
    assert send.claimed_at is not None and send.handed_at is not None
    assert send.claimed_at <= send.handed_at <= send.sent_at


def test_dead_claim_never_handed_is_retried_once_and_sent_once(approved):
    send = _dead_claim(approved, handed=False)
    assert mail.outbox == []
    result = approvals_tick()  # sweep -> retrying, due now -> enqueued -> sent (sync tasks)
    assert result["enqueued"] == 1 and result["unknown"] == 0
    assert _status(send) == (EmailSend.Status.SENT, "")
    assert send.reclaimed is True and send.attempts == 2
    assert len(mail.outbox) == 1
    assert Invoice.objects.get(pk=approved.invoice_id).state == Invoice.State.MESSAGED
    reclaimed = AuditEvent.objects.get(event="approvals.send.reclaimed")
    assert reclaimed.detail["reason"] == SENDER_DIED and reclaimed.detail["send"] == send.pk
    assert approvals_tick()["enqueued"] == 0 and len(mail.outbox) == 1  # nothing left to do


def test_dead_claim_after_hand_off_is_delivery_unknown_and_never_resent(approved):
    send = _dead_claim(approved, handed=True)
    assert approvals_tick()["unknown"] == 1
    assert _status(send) == (EmailSend.Status.UNKNOWN, SENDER_DIED_AFTER_HANDOFF)
    for _ in range(3):  # ticks and redelivered send tasks change nothing
        approvals_tick()
        assert sending.send_approved(approval_id=approved.pk).outcome == "already_done"
    assert mail.outbox == []
    assert AuditEvent.objects.filter(event="approvals.send.delivery_unknown").count() == 1


def test_retry_that_dies_again_goes_to_a_person(approved):
    send = _dead_claim(approved, handed=False, reclaimed=True)
    result = send_claims_sweep(tenant_id=approved.tenant_id)
    assert result.unknown == [send.pk] and result.retried == []
    assert _status(send) == (EmailSend.Status.UNKNOWN, SENDER_DIED_AGAIN)


def test_claim_from_before_the_marker_is_delivery_unknown(approved):
    send = _dead_claim(approved, handed=False)
    EmailSend.objects.filter(pk=send.pk).update(claimed_at=None)  # a row from migration 0005
    EmailSend.objects.filter(pk=send.pk).update(created_at=timezone.now() - timedelta(hours=1))
    send_claims_sweep(tenant_id=approved.tenant_id)
    assert _status(send) == (EmailSend.Status.UNKNOWN, SENDER_DIED_UNMARKED)


def test_live_claim_is_left_alone(approved, settings):
    settings.PAYPILOT_SEND_CLAIM_TIMEOUT = 600
    send = _dead_claim(approved, handed=True, age_seconds=500)
    assert send_claims_sweep(tenant_id=approved.tenant_id).unknown == []
    assert _status(send) == (EmailSend.Status.SENDING, "")


def test_accepted_to_the_fallback_is_left_to_the_reconcile(approved):
    send = _dead_claim(approved, handed=True)
    sending._fallback_write(send=send, message_id="<m1@x>", sent_at=timezone.now())
    assert send_claims_sweep(tenant_id=approved.tenant_id).left_to_fallback == [send.pk]
    assert approvals_tick()["reconciled"] == 1
    assert _status(send) == (EmailSend.Status.SENT, "")
    assert send.message_id == "<m1@x>" and mail.outbox == []


def test_slow_sender_loses_its_claim_to_the_sweep_and_sends_nothing(approved):
    """The sweeper presumed the sender dead; when it wakes up its hand-off is refused, so the
    retry is the only one that reaches the backend."""
    send = _dead_claim(approved, handed=False)
    send_claims_sweep(tenant_id=approved.tenant_id)
    assert sending._hand_off(send=send, approval=approved) is False
    assert sending.send_approved(approval_id=approved.pk).outcome == "sent"
    assert sending._hand_off(send=send, approval=approved) is False  # the old claim still loses
    assert len(mail.outbox) == 1


def test_sweeper_moves_a_claim_once(approved):
    send = _dead_claim(approved, handed=False)
    assert send_claims_sweep(tenant_id=approved.tenant_id).retried == [approved.pk]
    assert send_claims_sweep(tenant_id=approved.tenant_id).retried == []  # now `retrying`
    assert AuditEvent.objects.filter(event="approvals.send.reclaimed", detail__send=send.pk).count() == 1


def test_delivery_unknown_shows_in_refusal_review_metrics_and_console(
    approved, client, approver, api_client_for, tenant,
):
    send = _dead_claim(approved, handed=True)
    send_claims_sweep(tenant_id=approved.tenant_id)

    listed = refusal_list(tenant=tenant)
    assert listed["sources"]["delivery_unknown"] == {"status": "read", "count": 1}
    item = next(i for i in listed["items"] if i.source == "delivery_unknown")
    assert (item.gate, item.reason, item.ids["send"]) == ("delivery", SENDER_DIED_AFTER_HANDOFF, send.pk)

    metrics = api_client_for(tenant, "tenant_admin").get("/metrics").content.decode()
    assert 'paypilot_email_sends{status="unknown"} 1.0' in metrics

    client.force_login(approver)
    queue = client.get(QUEUE, {"send": "unknown", "queue": "all"}).content.decode()
    assert approved.subject in queue
    assert approved.subject not in client.get(QUEUE, {"send": "unknown"}).content.decode()  # pending only
    review = client.get(reverse("admin:approvals_approvalrequest_change", args=[approved.pk]))
    assert 'id="pp-delivery-unknown"' in review.content.decode()
    assert f"paypilot_send={send.pk}" in review.content.decode()
    page = client.get(reverse("admin:approvals_refusal_review")).content.decode()
    assert SENDER_DIED_AFTER_HANDOFF in page


def test_admin_mark_sent_confirms_then_records(approved, client, approver):
    send = _dead_claim(approved, handed=True)
    send_claims_sweep(tenant_id=approved.tenant_id)
    client.force_login(approver)
    data = {"action": "mark_sent_selected", "_selected_action": [str(send.pk)]}
    page = client.post(SENDS, data)
    assert page.status_code == 200 and "Yes, mark as sent 1 send" in page.content.decode()
    assert _status(send)[0] == EmailSend.Status.UNKNOWN

    assert client.post(SENDS, {**data, "post": "yes"}).status_code == 302
    assert _status(send)[0] == EmailSend.Status.SENT
    assert send.sent_at == send.handed_at  # the moment it was handed over
    assert Invoice.objects.get(pk=approved.invoice_id).state == Invoice.State.MESSAGED
    marked = AuditEvent.objects.get(event="approvals.send.marked_sent")
    assert marked.actor == f"user:{approver.pk}" and marked.detail["send"] == send.pk
    assert mail.outbox == []


def test_admin_resend_sends_once_through_the_gates(approved, client, approver):
    send = _dead_claim(approved, handed=True)
    send_claims_sweep(tenant_id=approved.tenant_id)
    client.force_login(approver)
    data = {"action": "resend_selected", "_selected_action": [str(send.pk)], "post": "yes"}
    assert client.post(SENDS, data).status_code == 302
    assert _status(send)[0] == EmailSend.Status.SENT  # sync tasks: the enqueued send ran
    assert len(mail.outbox) == 1
    assert AuditEvent.objects.filter(event="approvals.send.resend_requested").count() == 1
    client.post(SENDS, data)  # a second click: the row is no longer unknown
    assert len(mail.outbox) == 1


def test_resend_still_runs_the_gates(approved, client, approver, settings):
    send = _dead_claim(approved, handed=True)
    send_claims_sweep(tenant_id=approved.tenant_id)
    settings.PAYPILOT_ALLOWED_RECIPIENTS = []  # a gate now refuses
    client.force_login(approver)
    client.post(SENDS, {"action": "resend_selected", "_selected_action": [str(send.pk)], "post": "yes"})
    assert _status(send) == (EmailSend.Status.FAILED, "recipient_not_allowlisted")
    assert mail.outbox == []


def test_actions_refuse_sends_that_are_not_unknown_and_other_tenants(
    approved, client, other_tenant, sending_on,
):
    sending.send_approved(approval_id=approved.pk)
    sent = EmailSend.objects.get(approval=approved)
    outsider = finance_user(tenant=other_tenant)
    client.force_login(outsider)
    client.post(SENDS, {"action": "resend_selected", "_selected_action": [str(sent.pk)], "post": "yes"})
    assert _status(sent)[0] == EmailSend.Status.SENT and len(mail.outbox) == 1
    client.force_login(finance_user(tenant=approved.tenant))
    response = client.post(SENDS, {"action": "resend_selected", "_selected_action": [str(sent.pk)],
                                   "post": "yes"}, follow=True)
    assert "1 not delivery unknown" in response.content.decode()
    assert len(mail.outbox) == 1


def test_viewer_gets_no_resolve_actions(approved, client):
    from django.contrib.auth.models import Permission

    from approvals.models import AdminMembership

    send = _dead_claim(approved, handed=True)
    send_claims_sweep(tenant_id=approved.tenant_id)
    viewer = UserFactory()
    viewer.user_permissions.add(Permission.objects.get(codename="view_emailsend"))
    AdminMembership.objects.create(user=viewer, tenant=approved.tenant)
    client.force_login(viewer)
    assert "mark sent" not in client.get(SENDS).content.decode()
    client.post(SENDS, {"action": "resend_selected", "_selected_action": [str(send.pk)], "post": "yes"})
    assert _status(send)[0] == EmailSend.Status.UNKNOWN and mail.outbox == []


def test_claim_timeout_must_exceed_the_task_timeout():
    """A timeout at or below PAYPILOT_Q_TIMEOUT could take a live sender's claim: refused at start."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PAYPILOT_Q_TIMEOUT": "60", "PAYPILOT_SEND_CLAIM_TIMEOUT": "60",
           "DJANGO_SETTINGS_MODULE": "paypilot.settings"}
    run = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env,
                         cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True)
    assert run.returncode != 0
    assert "PAYPILOT_SEND_CLAIM_TIMEOUT must be greater than PAYPILOT_Q_TIMEOUT" in run.stderr
