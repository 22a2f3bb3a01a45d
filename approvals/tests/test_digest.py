"""The approvers' digest: who gets it, what it lists, once per period, dry runs, suspension."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.test import Client
from django_q.models import Schedule

from approvals import digest as digest_module
from approvals.digest import digest_send_due, digest_send_one
from approvals.models import ApprovalRequest, DigestPreference, DigestSend
from approvals.services import approval_approve, approval_open
from approvals.tasks import approvals_digest
from approvals.tests.factories import DraftFactory, UserFactory, finance_user
from ledger.tests.factories import CustomerFactory, InvoiceFactory
from paypilot.models import AuditEvent, Tenant

# Mid-hour, after the daily hour (7 UTC by default).
NOW = datetime(2026, 12, 2, 9, 20, tzinfo=UTC)


# Approval requests expire by the wall clock: every test here runs at NOW, whatever the day.
pytestmark = pytest.mark.frozen_clock(NOW)


@pytest.fixture
def inbox_user(tenant):  # type: ignore[no-untyped-def]
    user = finance_user(tenant=tenant, username="ines")
    user.email = "ines@acme.example"
    user.save()
    DigestPreference.objects.create(user=user, frequency=DigestPreference.Frequency.HOURLY)
    return user


def _waiting(tenant: Tenant, *, hours_ago: float, amount: int, subject: str, currency: str = "USD",
             customer: str = "Ada Lovelace") -> ApprovalRequest:
    invoice = InvoiceFactory(tenant=tenant, amount_minor=amount, currency=currency,
                             customer=CustomerFactory(tenant=tenant, name=customer, email="ada@customer.example"))
    return approval_open(draft=DraftFactory(tenant=tenant, invoice=invoice, subject=subject),
                         now=NOW - timedelta(hours=hours_ago))


@pytest.fixture
def queue(tenant):  # type: ignore[no-untyped-def]
    return [
        _waiting(tenant, hours_ago=2, amount=500, subject="newer small"),
        _waiting(tenant, hours_ago=5, amount=900, subject="older large"),
        _waiting(tenant, hours_ago=5, amount=100, subject="older small"),
    ]


def test_digest_lists_what_waits_oldest_then_highest_with_review_links(queue, inbox_user, sending_on):
    sending_on.PAYPILOT_PUBLIC_BASE_URL = "https://pay.acme.example"
    [result] = digest_send_due(now=NOW)
    assert (result.outcome, result.items) == ("sent", 3)
    [message] = mail.outbox
    assert message.to == ["ines@acme.example"] and "3 drafts wait" in message.subject
    text = message.body
    order = [text.index(s) for s in ("older large", "older small", "newer small")]
    assert order == sorted(order)
    for approval in queue:
        assert f"https://pay.acme.example/admin/approvals/approvalrequest/{approval.pk}/change/" in text
    html, mimetype = message.alternatives[0]
    assert mimetype == "text/html" and html.count('href="https://pay.acme.example/admin/approvals/') == 3
    assert "9.00 USD" in text and "waiting 5 h" in text
    # No customer names or emails in an inbox outside the console's access control.
    assert "Ada" not in text + html and "customer.example" not in text + html
    row = DigestSend.objects.get()
    assert row.status == DigestSend.Status.SENT and row.items == 3 and row.message_id
    event = AuditEvent.objects.get(event="approvals.digest.sent")
    assert event.detail["approver"] == inbox_user.pk and event.detail["count"] == 3
    assert event.tenant_id == queue[0].tenant_id
    assert all(a.status == ApprovalRequest.Status.PENDING for a in ApprovalRequest.objects.all())  # approves nothing


def test_review_link_needs_a_login(queue, inbox_user, sending_on):
    digest_send_due(now=NOW)
    path = f"/admin/approvals/approvalrequest/{queue[0].pk}/change/"
    assert path in mail.outbox[0].body
    response = Client().get(path)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_never_twice_for_the_same_period(queue, inbox_user, sending_on):
    assert digest_send_due(now=NOW)[0].outcome == "sent"
    assert digest_send_due(now=NOW + timedelta(minutes=35))[0].outcome == "already_sent"
    assert digest_send_due(now=NOW + timedelta(minutes=39, seconds=59))[0].outcome == "already_sent"
    assert len(mail.outbox) == 1
    assert digest_send_due(now=NOW + timedelta(minutes=40))[0].outcome == "sent"  # 10:00, a new hour
    periods = list(DigestSend.objects.order_by("period_start").values_list("period_start", flat=True))
    assert periods == [NOW.replace(minute=0), NOW.replace(minute=0) + timedelta(hours=1)]


def test_the_task_run_twice_sends_once(tenant, inbox_user, sending_on):
    _waiting(tenant, hours_ago=0, amount=100, subject="just in")  # at the real clock's hour
    ApprovalRequest.objects.update(requested_at=datetime.now(UTC) - timedelta(minutes=1))
    assert approvals_digest() == {"sent": 1}
    assert approvals_digest() == {"already_sent": 1}
    assert len(mail.outbox) == 1


def test_a_second_worker_racing_for_the_period_sends_nothing(queue, inbox_user, sending_on, monkeypatch):
    real = digest_module.digest_lines
    raced: list[str] = []

    def other_worker_first(**kwargs):  # type: ignore[no-untyped-def]
        if not raced:  # another worker runs the whole digest between our check and our claim
            monkeypatch.setattr(digest_module, "digest_lines", real)
            raced.append(digest_send_one(user=inbox_user, frequency="hourly", now=NOW).outcome)
        return real(**kwargs)

    monkeypatch.setattr(digest_module, "digest_lines", other_worker_first)
    assert digest_send_one(user=inbox_user, frequency="hourly", now=NOW).outcome == "already_sent"
    assert raced == ["sent"] and len(mail.outbox) == 1 and DigestSend.objects.count() == 1


def test_nothing_waiting_sends_and_records_nothing(tenant, inbox_user, sending_on):
    other = Tenant.objects.create(slug="globex", name="Globex")
    _waiting(other, hours_ago=1, amount=100, subject="another tenant's")
    expired = _waiting(tenant, hours_ago=100, amount=100, subject="expired")
    assert expired.expires_at < NOW
    assert digest_send_due(now=NOW)[0].outcome == "nothing_waiting"
    assert mail.outbox == [] and DigestSend.objects.count() == 0


def test_first_approval_of_a_high_value_draft_waits_for_someone_else(tenant, inbox_user, sending_on, monkeypatch):
    sending_on.PAYPILOT_HIGH_VALUE_ANNUAL = 1
    monkeypatch.setattr("approvals.services.send_enqueue", lambda **kwargs: None)
    approval = _waiting(tenant, hours_ago=1, amount=100_000, subject="big one")
    assert approval.high_value
    assert approval_approve(approval=approval, user=inbox_user) != "approved"
    assert digest_send_one(user=inbox_user, frequency="hourly", now=NOW).outcome == "nothing_waiting"
    colleague = finance_user(tenant=tenant)
    colleague.email = "cole@acme.example"
    colleague.save()
    assert digest_send_one(user=colleague, frequency="hourly", now=NOW).outcome == "sent"
    assert "high value: two approvers" in mail.outbox[0].body


def test_sending_off_is_a_recorded_dry_run(queue, inbox_user, settings):
    settings.PAYPILOT_SEND_EMAIL = False
    assert digest_send_due(now=NOW)[0].outcome == "dry_run"
    assert mail.outbox == []
    assert DigestSend.objects.get().status == DigestSend.Status.DRY_RUN
    event = AuditEvent.objects.get(event="approvals.digest.dry_run")
    assert event.detail["dry_run"] is True and event.detail["count"] == 3
    assert digest_send_due(now=NOW)[0].outcome == "already_sent"


def test_suspended_tenant_gets_no_digest(queue, inbox_user, sending_on, tenant):
    Tenant.objects.filter(pk=tenant.pk).update(status=Tenant.Status.SUSPENDED)
    assert digest_send_due(now=NOW)[0].outcome == "nothing_waiting"
    assert mail.outbox == []


def test_off_daily_and_the_daily_hour(queue, inbox_user, sending_on):
    pref = inbox_user.digest_preference
    pref.frequency = DigestPreference.Frequency.OFF
    pref.save()
    assert digest_send_due(now=NOW) == []
    pref.frequency = DigestPreference.Frequency.DAILY
    pref.save()
    sending_on.PAYPILOT_DIGEST_DAILY_HOUR = 10
    assert digest_send_due(now=NOW)[0].outcome == "not_due"  # 09:20, due from 10:00
    assert digest_send_due(now=NOW + timedelta(hours=1))[0].outcome == "sent"
    assert digest_send_due(now=NOW + timedelta(hours=8))[0].outcome == "already_sent"
    assert digest_send_due(now=NOW + timedelta(hours=25))[0].outcome == "sent"  # the next day
    assert len(mail.outbox) == 2


def test_only_active_staff_approvers_with_an_email(tenant, queue, sending_on):
    viewer = UserFactory(email="view@acme.example")  # staff, no approve permission
    no_email = finance_user(tenant=tenant)
    for user in (viewer, no_email):
        DigestPreference.objects.create(user=user, frequency="hourly")
    assert {r.outcome for r in digest_send_due(now=NOW)} == {"not_eligible"}
    assert mail.outbox == []


def test_platform_admin_digest_spans_active_tenants(tenant, queue, sending_on):
    root = UserFactory(username="root", is_superuser=True, email="root@paypilot.example")
    DigestPreference.objects.create(user=root, frequency="hourly")
    other = Tenant.objects.create(slug="globex", name="Globex")
    _waiting(other, hours_ago=9, amount=100, subject="globex draft")
    paused = Tenant.objects.create(slug="initech", name="Initech", status=Tenant.Status.SUSPENDED)
    _waiting(paused, hours_ago=9, amount=100, subject="initech draft")
    [result] = digest_send_due(now=NOW)
    assert (result.outcome, result.items) == ("sent", 4)
    body = mail.outbox[0].body
    assert body.index("globex draft") < body.index("older large") and "initech draft" not in body
    assert AuditEvent.objects.get(event="approvals.digest.sent").tenant_id is None


def test_delivery_failure_is_recorded_and_not_resent_in_the_period(queue, inbox_user, sending_on):
    sending_on.EMAIL_BACKEND = "approvals.tests.backends.PermanentFailureBackend"
    assert digest_send_due(now=NOW)[0].outcome == "failed"
    row = DigestSend.objects.get()
    assert row.status == DigestSend.Status.FAILED and row.error_code == "smtp_refused"
    assert AuditEvent.objects.get(event="approvals.digest.failed").detail["reason"] == "smtp_refused"
    sending_on.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert digest_send_due(now=NOW)[0].outcome == "already_sent"


def test_a_subject_with_markup_is_withheld_from_the_html_part(tenant, inbox_user, sending_on):
    _waiting(tenant, hours_ago=1, amount=100, subject='<img src=x onerror="alert(1)">')
    digest_send_due(now=NOW)
    html = mail.outbox[0].alternatives[0][0]
    # Markup in a subject is not shown at all (dunning.slots); the line names the draft instead.
    assert "<img" not in html and "onerror" not in html and "(subject not shown: markup)" in html


def test_the_schedule_runs_the_digest_task(db):
    schedule = Schedule.objects.get(name="approvals.digest")
    assert (schedule.func, schedule.schedule_type, schedule.minutes, schedule.repeats) == (
        "approvals.tasks.approvals_digest", Schedule.MINUTES, 5, -1)


def test_approver_sets_their_own_preference_in_the_admin(tenant, inbox_user):
    colleague = finance_user(tenant=tenant)
    DigestPreference.objects.create(user=colleague, frequency="daily")
    inbox_user.digest_preference.delete()
    client = Client()
    client.force_login(inbox_user)
    form = client.get("/admin/approvals/digestpreference/add/")
    assert form.status_code == 200 and 'name="user"' not in form.content.decode()
    response = client.post("/admin/approvals/digestpreference/add/", {"frequency": "daily", "user": colleague.pk})
    assert response.status_code == 302
    mine = DigestPreference.objects.get(user=inbox_user)
    assert mine.frequency == "daily"
    assert DigestPreference.objects.get(user=colleague).frequency == "daily"  # untouched
    listing = client.get("/admin/approvals/digestpreference/").content.decode()
    assert f"/admin/approvals/digestpreference/{mine.pk}/change/" in listing
    theirs = DigestPreference.objects.get(user=colleague)
    assert f"/digestpreference/{theirs.pk}/change/" not in listing
    assert client.get(f"/admin/approvals/digestpreference/{theirs.pk}/change/").status_code in (302, 403, 404)
    assert client.get("/admin/approvals/digestsend/").status_code == 200
