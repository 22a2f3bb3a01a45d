"""The mailer: once per draft, retries with backoff, the durable fallback, link and disclosure."""

from __future__ import annotations

import json
import smtplib
from datetime import timedelta

import pytest
import requests
from anymail.exceptions import AnymailAPIError, AnymailRecipientsRefused
from django.core import mail
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from approvals import sending
from approvals.mailer import LINK_LEAD, delivery_error_classify, email_compose
from approvals.models import ApprovalRequest, EmailSend
from approvals.sending import fallback_path, send_approved, send_fallback_reconcile
from approvals.services import approval_approve
from approvals.tasks import approvals_tick
from approvals.tests import backends
from ledger.links import recovery_link_parse
from ledger.models import Invoice
from paypilot.models import AuditEvent


@pytest.fixture
def approved_unsent(tenant, approver, make_approval, sending_on, monkeypatch):  # type: ignore[no-untyped-def]
    approval = make_approval(tenant)
    with monkeypatch.context() as patch:
        patch.setattr("approvals.services.send_enqueue", lambda **kwargs: None)
        approval_approve(approval=approval, user=approver)
    approval.refresh_from_db()
    return approval


def _state(approval: ApprovalRequest) -> str:
    return Invoice.objects.get(pk=approval.invoice_id).state


def test_send_task_run_twice_sends_once(approved_unsent):
    assert send_approved(approval_id=approved_unsent.pk).outcome == "sent"
    assert send_approved(approval_id=approved_unsent.pk).outcome == "already_done"
    assert len(mail.outbox) == 1
    send = EmailSend.objects.get(approval=approved_unsent)
    assert send.status == EmailSend.Status.SENT and send.sent_at is not None and send.message_id
    assert _state(approved_unsent) == Invoice.State.MESSAGED
    assert AuditEvent.objects.filter(event="approvals.send.sent").count() == 1


def test_database_allows_one_send_per_draft(approved_unsent):
    send_approved(approval_id=approved_unsent.pk)
    first = EmailSend.objects.get(approval=approved_unsent)
    other = ApprovalRequest.objects.exclude(pk=approved_unsent.pk).first()
    assert other is None  # only one request per draft exists, so try the draft directly
    with pytest.raises(IntegrityError), transaction.atomic():
        EmailSend.objects.create(
            tenant=first.tenant, approval=first.approval, draft=first.draft,
            invoice=first.invoice, recipient_hash="x",
        )


def test_concurrent_claims_one_wins(approved_unsent):
    composed = email_compose(approval=approved_unsent)
    won = sending._claim(approval=approved_unsent, existing=None, composed=composed)
    lost = sending._claim(approval=approved_unsent, existing=None, composed=composed)
    assert won is not None and lost is None
    # A claimed slot (status "sending", e.g. a crash mid-call) is never sent blindly again.
    assert send_approved(approval_id=approved_unsent.pk).outcome == "already_done"
    assert mail.outbox == []


def test_transient_failure_is_retried_with_backoff(approved_unsent, settings):
    settings.EMAIL_BACKEND = "approvals.tests.backends.TransientFailureBackend"
    before = timezone.now()
    result = send_approved(approval_id=approved_unsent.pk)
    assert (result.outcome, result.reason) == ("retrying", "smtp_unavailable")
    send = EmailSend.objects.get(approval=approved_unsent)
    assert send.status == EmailSend.Status.RETRYING and send.attempts == 1
    assert before + timedelta(minutes=1) <= send.next_attempt_at <= timezone.now() + timedelta(minutes=1)
    assert _state(approved_unsent) == Invoice.State.FAILED
    assert sending.send_retry_due() == []  # not due yet

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    EmailSend.objects.filter(pk=send.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    assert approvals_tick()["enqueued"] == 1  # the tick sends it (sync task mode)
    send.refresh_from_db()
    assert (send.status, send.attempts) == (EmailSend.Status.SENT, 2)
    assert len(mail.outbox) == 1
    assert _state(approved_unsent) == Invoice.State.MESSAGED


def test_transient_failures_stop_after_max_attempts(approved_unsent, settings):
    settings.EMAIL_BACKEND = "approvals.tests.backends.TransientFailureBackend"
    outcomes = []
    for _ in range(sending.SEND_MAX_ATTEMPTS):
        outcomes.append(send_approved(approval_id=approved_unsent.pk).outcome)
        EmailSend.objects.filter(approval=approved_unsent).update(next_attempt_at=timezone.now())
    assert outcomes == ["retrying"] * (sending.SEND_MAX_ATTEMPTS - 1) + ["failed"]
    waits = sending.RETRY_BACKOFF_MINUTES
    assert list(waits) == sorted(waits)  # backoff grows
    assert send_approved(approval_id=approved_unsent.pk).outcome == "already_done"


def test_permanent_failure_is_not_retried(approved_unsent, settings):
    settings.EMAIL_BACKEND = "approvals.tests.backends.PermanentFailureBackend"
    backends.calls.clear()
    result = send_approved(approval_id=approved_unsent.pk)
    assert (result.outcome, result.reason) == ("failed", "smtp_refused")
    assert send_approved(approval_id=approved_unsent.pk).outcome == "already_done"
    assert backends.calls == ["permanent"]
    assert sending.send_retry_due(now=timezone.now() + timedelta(days=1)) == []
    assert _state(approved_unsent) == Invoice.State.FAILED


def test_accepted_but_unrecorded_goes_to_fallback_and_is_never_resent(approved_unsent, monkeypatch):
    def broken(**kwargs):  # type: ignore[no-untyped-def]
        raise DatabaseError("database went away")

    monkeypatch.setattr(sending, "_record_sent", broken)
    assert send_approved(approval_id=approved_unsent.pk).outcome == "sent_unrecorded"
    path = fallback_path(approved_unsent.pk)
    record = json.loads(path.read_text())
    assert record["approval"] == approved_unsent.pk and record["message_id"]
    assert len(mail.outbox) == 1

    # Even if the claimed row were gone, the file alone stops a second send.
    EmailSend.objects.filter(approval=approved_unsent).delete()
    assert send_approved(approval_id=approved_unsent.pk).outcome == "sent_unrecorded"
    assert len(mail.outbox) == 1
    assert sending.send_missing(now=timezone.now() + timedelta(minutes=5)) == []


def test_fallback_is_reconciled_into_the_database(approved_unsent, monkeypatch):
    real = sending._record_sent
    monkeypatch.setattr(sending, "_record_sent", lambda **kw: (_ for _ in ()).throw(DatabaseError("x")))
    send_approved(approval_id=approved_unsent.pk)
    monkeypatch.setattr(sending, "_record_sent", real)
    assert send_fallback_reconcile() == 1
    send = EmailSend.objects.get(approval=approved_unsent)
    assert send.status == EmailSend.Status.SENT
    assert _state(approved_unsent) == Invoice.State.MESSAGED
    assert not fallback_path(approved_unsent.pk).exists()
    assert send_fallback_reconcile() == 0


def test_link_added_at_send_time_and_disclosure_appended(approved_unsent, settings):
    settings.PAYPILOT_AI_DISCLOSURE = "This email was drafted with the help of AI and reviewed by a person."
    approved_unsent.draft.source = "llm"
    approved_unsent.draft.save(update_fields=["source"])
    send_approved(approval_id=approved_unsent.pk)
    body = mail.outbox[0].body
    assert body.startswith(approved_unsent.body.rstrip())
    assert body.rstrip().endswith(settings.PAYPILOT_AI_DISCLOSURE)
    link_line = body.split(LINK_LEAD, 1)[1].split()[0]
    assert link_line.startswith(settings.PAYPILOT_PUBLIC_BASE_URL.rstrip("/") + "/r/")
    assert recovery_link_parse(link_line.rsplit("/", 1)[1]) == approved_unsent.invoice_id
    assert mail.outbox[0].subject == approved_unsent.subject


def test_no_disclosure_when_unset(approved_unsent):
    send_approved(approval_id=approved_unsent.pk)
    assert mail.outbox[0].body.rstrip().rsplit("\n", 1)[1].startswith("http")


def test_no_disclosure_on_template_copy(approved_unsent, settings):
    settings.PAYPILOT_AI_DISCLOSURE = "Drafted with AI."
    send_approved(approval_id=approved_unsent.pk)
    assert "Drafted with AI." not in mail.outbox[0].body


def test_anymail_backend_message_id_and_metadata(approved_unsent, settings):
    settings.EMAIL_BACKEND = "anymail.backends.test.EmailBackend"
    send_approved(approval_id=approved_unsent.pk)
    send = EmailSend.objects.get(approval=approved_unsent)
    assert send.message_id == "0"  # the anymail test backend's id for the first message
    params = mail.outbox[0].anymail_test_params
    assert params["metadata"] == {"paypilot_send": str(send.pk)}
    assert params["tags"] == ["paypilot-dunning"]


def test_lost_enqueue_is_swept_by_the_tick(approved_unsent):
    ApprovalRequest.objects.filter(pk=approved_unsent.pk).update(
        decided_at=timezone.now() - timedelta(minutes=3)
    )
    assert approvals_tick()["enqueued"] == 1
    assert len(mail.outbox) == 1
    assert approvals_tick()["enqueued"] == 0


def _api_error(status):  # type: ignore[no-untyped-def]
    error = AnymailAPIError("provider said no")
    error.status_code = status
    return error


def _requests_error(kind):  # type: ignore[no-untyped-def]
    """What anymail raises for a requests failure: a subclass of both types."""
    from anymail.exceptions import AnymailRequestsAPIError

    return type("AnymailRequestsAPIError", (AnymailRequestsAPIError, kind), {})("Error posting")


@pytest.mark.parametrize(
    ("exc", "code", "transient"),
    [
        (smtplib.SMTPServerDisconnected("x"), "smtp_unavailable", True),
        (smtplib.SMTPResponseException(421, b"try later"), "smtp_temporary", True),
        (smtplib.SMTPResponseException(554, b"rejected"), "smtp_permanent", False),
        (smtplib.SMTPRecipientsRefused({}), "smtp_refused", False),
        (TimeoutError(), "connection_failed", True),
        (ConnectionResetError(), "connection_failed", True),
        (_api_error(503), "provider_unavailable", True),
        (_api_error(429), "provider_unavailable", True),
        (_api_error(None), "provider_unavailable", True),
        (_api_error(400), "provider_rejected", False),
        (_requests_error(requests.exceptions.ConnectTimeout), "provider_unavailable", True),
        (_requests_error(requests.exceptions.ConnectionError), "provider_unavailable", True),
        (_requests_error(requests.exceptions.ReadTimeout), "provider_timeout", False),
        (_api_error(200), "provider_answer_unreadable", False),
        (AnymailRecipientsRefused("all refused"), "provider_refused", False),
        (ValueError("bug"), "delivery_failed", False),
    ],
)
def test_delivery_error_classification(exc, code, transient):
    error = delivery_error_classify(exc)
    assert (error.code, error.transient) == (code, transient)
    assert error.ambiguous == (code in ("provider_timeout", "provider_answer_unreadable"))


def test_answer_lost_after_the_request_is_delivery_unknown_never_retried(approved_unsent, settings):
    settings.EMAIL_BACKEND = "approvals.tests.backends.ReadTimeoutAfterAcceptBackend"
    backends.calls.clear()
    result = send_approved(approval_id=approved_unsent.pk)
    assert (result.outcome, result.reason) == ("delivery_unknown", "provider_timeout")
    send = EmailSend.objects.get(approval=approved_unsent)
    assert (send.status, send.next_attempt_at) == (EmailSend.Status.UNKNOWN, None)
    assert approvals_tick()["enqueued"] == 0
    assert send_approved(approval_id=approved_unsent.pk).outcome == "already_done"
    assert backends.calls == ["accepted_then_timeout"]  # the backend was called once
    assert AuditEvent.objects.filter(event="approvals.send.delivery_unknown").count() == 1
    assert _state(approved_unsent) == Invoice.State.FAILED
