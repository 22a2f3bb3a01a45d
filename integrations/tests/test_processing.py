"""process_event: the full hand-off, all-or-nothing processing, retries and the sweeper."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from approvals.models import ApprovalRequest
from decisions.models import DecisionRecord
from dunning.models import Draft
from integrations import handoff
from integrations.models import WebhookEvent
from integrations.services import webhook_event_process, webhook_events_sweep
from integrations.services.processing import ProcessingFailed
from integrations.tests.conftest import load_fixture
from ledger.models import Customer, Invoice, InvoiceTransition
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_treated_failure_ends_as_draft_awaiting_approval(stripe_tenant, post_stripe):
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))

    invoice = Invoice.objects.get()
    draft = Draft.objects.get()
    assert draft.invoice == invoice
    assert DecisionRecord.objects.get().invoice_ref == "in_1RzQ4xAcmeRobotics"
    approval = ApprovalRequest.objects.get()
    assert approval.draft == draft and approval.invoice == invoice
    assert WebhookEvent.objects.get().outcome == "draft_opened"


def test_task_dying_after_the_ledger_write_leaves_nothing_and_succeeds_on_retry(
    stripe_tenant, post_stripe, monkeypatch
):
    def approval_crash(**kwargs):
        raise RuntimeError("worker died")

    monkeypatch.setattr(handoff, "approvals_open_many", approval_crash)
    audit_before = AuditEvent.objects.count()
    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"))

    assert response.status_code == 200  # stored and acknowledged; processing is the worker's
    event = WebhookEvent.objects.get()
    assert (event.status, event.attempts) == ("failed", 1)
    assert "RuntimeError: worker died" in event.error
    # nothing of the half-done work survives: no invoice, history, customer, decision or draft
    for model in (Invoice, InvoiceTransition, Customer, DecisionRecord, Draft, ApprovalRequest):
        assert not model.objects.exists(), model.__name__
    assert AuditEvent.objects.count() == audit_before

    monkeypatch.undo()
    assert webhook_event_process(event_id=event.pk) == "processed"
    event.refresh_from_db()
    assert (event.status, event.outcome, event.attempts, event.error) == ("processed", "draft_opened", 2, "")
    assert InvoiceTransition.objects.count() == 1
    assert Draft.objects.count() == 1 and ApprovalRequest.objects.count() == 1


def test_processing_twice_is_a_noop(stripe_tenant, post_stripe):
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    event = WebhookEvent.objects.get()

    assert webhook_event_process(event_id=event.pk) == "processed"
    assert InvoiceTransition.objects.count() == 1 and Draft.objects.count() == 1
    event.refresh_from_db()
    assert event.attempts == 1


def test_missing_event_is_reported_not_raised(db):
    assert webhook_event_process(event_id=987654) == "missing"


def test_failures_are_retried_by_the_sweeper_up_to_the_limit(settings, stripe_tenant, post_stripe, monkeypatch):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "max_attempts": 3}
    monkeypatch.setattr(handoff, "recovery_start", lambda **kw: (_ for _ in ()).throw(RuntimeError("down")))
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    event = WebhookEvent.objects.get()
    later = timezone.now()
    for _ in range(5):
        later += timedelta(minutes=settings.PAYPILOT_SWEEP_AFTER_MINUTES + 1)
        webhook_events_sweep(now=later)
    event.refresh_from_db()
    assert (event.status, event.attempts) == ("failed", 3)
    assert webhook_events_sweep(now=later + timedelta(hours=1)) == 0


def test_sweeper_reenqueues_events_left_received(stripe_tenant, recovery, settings):
    from integrations.tests.factories import WebhookEventFactory

    settings.PAYPILOT_WEBHOOK_BATCH = 1  # a batch would take the fresh event along

    stale = WebhookEventFactory(tenant=stripe_tenant, enqueued_at=timezone.now() - timedelta(minutes=30))
    fresh = WebhookEventFactory(tenant=stripe_tenant)

    assert webhook_events_sweep() == 1
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert stale.status == "ignored" and fresh.status == "received"


def test_process_event_task_raises_after_recording(stripe_tenant, post_stripe, monkeypatch):
    from integrations.tasks import process_event

    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    event = WebhookEvent.objects.get()
    WebhookEvent.objects.filter(pk=event.pk).update(status="received")
    monkeypatch.setattr(handoff, "recovery_start", lambda **kw: (_ for _ in ()).throw(ValueError("boom")))
    Invoice.objects.all()  # the earlier run's rows stay: this run rolls back only its own work
    with pytest.raises(ProcessingFailed):
        process_event(event.pk)


def test_sweeper_schedule_is_installed(db):
    schedule = Schedule.objects.get(name="integrations.sweep_webhook_events")
    assert schedule.func == "integrations.tasks.sweep_webhook_events"
    assert schedule.schedule_type == Schedule.MINUTES and schedule.repeats == -1
