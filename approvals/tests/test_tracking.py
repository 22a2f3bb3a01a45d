"""anymail tracking webhooks: delivered, bounced, clicked update the send and the ledger."""

from __future__ import annotations

import base64
import json

import pytest
from anymail.signals import AnymailTrackingEvent, tracking

from approvals.models import EmailSend
from approvals.services import approval_approve
from approvals.tracking import send_tracking_apply
from ledger.models import Invoice
from paypilot.models import AuditEvent


@pytest.fixture
def sent(tenant, approver, make_approval, sending_on):  # type: ignore[no-untyped-def]
    approval = make_approval(tenant)
    approval_approve(approval=approval, user=approver)
    return EmailSend.objects.get(approval=approval)


def _fire(event_type: str, send: EmailSend) -> None:
    event = AnymailTrackingEvent(event_type=event_type, message_id=send.message_id,
                                 metadata={"paypilot_send": str(send.pk)})
    tracking.send(sender=object, event=event, esp_name="Test")


def test_delivered_then_clicked_moves_the_invoice(sent):
    _fire("delivered", sent)
    sent.refresh_from_db()
    assert sent.status == EmailSend.Status.DELIVERED and sent.delivered_at is not None
    _fire("clicked", sent)
    sent.refresh_from_db()
    assert sent.clicked_at is not None
    assert Invoice.objects.get(pk=sent.invoice_id).state == Invoice.State.CLICKED
    events = set(AuditEvent.objects.filter(event__startswith="approvals.send.").values_list("event", flat=True))
    assert {"approvals.send.delivered", "approvals.send.clicked"} <= events


def test_bounce_is_final_and_still_a_touch(sent):
    _fire("bounced", sent)
    _fire("delivered", sent)  # a late delivery report does not undo the bounce
    sent.refresh_from_db()
    assert sent.status == EmailSend.Status.BOUNCED and sent.bounced_at is not None
    assert sent.status in EmailSend.TOUCH_STATUSES
    assert Invoice.objects.get(pk=sent.invoice_id).state == Invoice.State.MESSAGED


def test_redelivered_event_is_a_noop(sent):
    _fire("delivered", sent)
    _fire("delivered", sent)
    assert AuditEvent.objects.filter(event="approvals.send.delivered").count() == 1


def test_unknown_message_and_untracked_events_are_ignored(sent):
    assert send_tracking_apply(event_type="delivered", message_id="nobody-sent-this") is False
    assert send_tracking_apply(event_type="opened", message_id=sent.message_id) is False
    sent.refresh_from_db()
    assert sent.status == EmailSend.Status.SENT


def test_found_by_message_id_without_metadata(sent):
    assert send_tracking_apply(event_type="delivered", message_id=sent.message_id) is True


def _postmark(client, payload, auth="hook:s3cret"):  # type: ignore[no-untyped-def]
    headers = {}
    if auth:
        headers["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(auth.encode()).decode()
    return client.post("/anymail/postmark/tracking/", data=json.dumps(payload),
                       content_type="application/json", **headers)


def test_postmark_webhook_end_to_end(client, sent, settings):
    settings.ANYMAIL = {"WEBHOOK_SECRET": "hook:s3cret"}
    delivery = {"RecordType": "Delivery", "MessageID": sent.message_id, "Recipient": "x@example.com",
                "DeliveredAt": "2026-05-01T10:00:00Z", "Metadata": {"paypilot_send": str(sent.pk)}}
    assert _postmark(client, delivery).status_code == 200
    click = {"RecordType": "Click", "MessageID": sent.message_id, "Recipient": "x@example.com",
             "ReceivedAt": "2026-05-01T10:05:00Z", "OriginalLink": "http://127.0.0.1:8000/r/abc",
             "Metadata": {"paypilot_send": str(sent.pk)}}
    assert _postmark(client, click).status_code == 200
    sent.refresh_from_db()
    assert sent.status == EmailSend.Status.DELIVERED and sent.clicked_at is not None
    assert Invoice.objects.get(pk=sent.invoice_id).state == Invoice.State.CLICKED


def test_postmark_webhook_wrong_secret_is_refused(client, sent, settings):
    settings.ANYMAIL = {"WEBHOOK_SECRET": "hook:s3cret"}
    payload = {"RecordType": "Bounce", "Type": "HardBounce", "MessageID": sent.message_id,
               "Email": "x@example.com", "BouncedAt": "2026-05-01T10:00:00Z"}
    assert _postmark(client, payload, auth="hook:wrong").status_code == 400
    sent.refresh_from_db()
    assert sent.status == EmailSend.Status.SENT


def test_tracking_routes_refuse_without_a_configured_secret(client, sent, settings):
    settings.ANYMAIL = {}
    payload = {"RecordType": "Bounce", "Type": "HardBounce", "MessageID": sent.message_id,
               "Email": "x@example.com", "BouncedAt": "2026-05-01T10:00:00Z"}
    response = _postmark(client, payload, auth="")
    assert response.status_code == 403
    assert response.json()["error"] == "webhook_auth_not_configured"
    sent.refresh_from_db()
    assert sent.status == EmailSend.Status.SENT
