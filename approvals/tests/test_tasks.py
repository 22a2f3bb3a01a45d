"""The scheduled tick and the send task."""

from __future__ import annotations

from datetime import timedelta

from django.core import mail
from django.utils import timezone
from django_q.models import Schedule

from approvals.models import ApprovalRequest
from approvals.tasks import approvals_tick, send_approval


def test_tick_is_scheduled_every_minute(db):
    schedule = Schedule.objects.get(name="approvals.tick")
    assert (schedule.func, schedule.schedule_type, schedule.minutes, schedule.repeats) == (
        "approvals.tasks.approvals_tick", Schedule.MINUTES, 1, -1)


def test_tick_expires_stale_requests_of_every_tenant(tenant, other_tenant, make_approval):
    stale = [make_approval(tenant), make_approval(other_tenant)]
    fresh = make_approval(tenant)
    ApprovalRequest.objects.filter(pk__in=[a.pk for a in stale]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert approvals_tick() == {"expired": 2, "enqueued": 0, "reconciled": 0, "unknown": 0}
    assert ApprovalRequest.objects.get(pk=fresh.pk).status == "pending"
    assert approvals_tick()["expired"] == 0


def test_send_task_takes_an_id_and_is_safe_twice(tenant, approver, make_approval, sending_on, monkeypatch):
    from approvals.services import approval_approve

    approval = make_approval(tenant)
    monkeypatch.setattr("approvals.services.send_enqueue", lambda **kwargs: None)
    approval_approve(approval=approval, user=approver)
    assert send_approval(approval.pk) == "sent"
    assert send_approval(approval.pk) == "already_done"
    assert len(mail.outbox) == 1
