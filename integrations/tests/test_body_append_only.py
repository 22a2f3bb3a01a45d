"""The raw body of a stored webhook never changes; status and outcome do."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction

from integrations.models import WebhookEvent
from integrations.tests.factories import WebhookEventFactory
from paypilot.db import append_only_override

pytestmark = pytest.mark.django_db


def test_status_outcome_and_attempts_stay_updatable():
    event = WebhookEventFactory()
    WebhookEvent.objects.filter(pk=event.pk).update(status="processed", outcome="draft_opened", attempts=2)
    event.refresh_from_db()
    assert (event.status, event.outcome, event.attempts) == ("processed", "draft_opened", 2)


def test_full_row_save_with_the_same_body_is_allowed():
    event = WebhookEventFactory()
    event.refresh_from_db()
    event.status = "ignored"
    event.save()
    event.refresh_from_db()
    assert event.status == "ignored"


def test_changing_the_body_is_refused_by_the_database():
    event = WebhookEventFactory()
    with pytest.raises(DatabaseError), transaction.atomic():
        WebhookEvent.objects.filter(pk=event.pk).update(body=b'{"tampered": true}')
    event.refresh_from_db()
    assert b"tampered" not in bytes(event.body)


def test_deleting_is_refused_by_the_database():
    event = WebhookEventFactory()
    with pytest.raises(DatabaseError), transaction.atomic():
        WebhookEvent.objects.filter(pk=event.pk).delete()
    assert WebhookEvent.objects.filter(pk=event.pk).exists()


def test_named_override_lets_the_retention_purge_through():
    event = WebhookEventFactory()
    with append_only_override("retention_purge"):
        WebhookEvent.objects.filter(pk=event.pk).update(body=b"")
    event.refresh_from_db()
    assert bytes(event.body) == b""
