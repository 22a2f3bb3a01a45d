"""A batch deletes the queue rows of the events it applied under another event's task, in its
own transaction, so those tasks never reach a worker; the row of an event it did not finish
stays (no event loses its task). PostgreSQL with the ORM broker: the event insert takes the
queue row's id from the queue's own sequence (`WebhookEvent.task_row`)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ

from integrations.models import WebhookEvent
from integrations.services import processing, webhook_event_process
from integrations.tests.test_processing_batch import failed
from paypilot.queue import OrmBroker, queue_row_id, queue_rows_delete

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _queued_for_real(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliveries enqueue into the ORM broker's table instead of running inline (test mode)."""
    if settings.REDIS_URL:
        pytest.skip("Redis broker configured")
    monkeypatch.setattr(Conf, "SYNC", False)
    monkeypatch.setattr(processing, "_processed_here", {})


def test_an_enqueue_takes_the_row_id_it_was_given_once():
    broker = OrmBroker(list_key="paypilot-row-id-test")
    given = OrmQ.objects.create(key="x", payload="p", lock=timezone.now()).pk + 1000
    with queue_row_id(given):
        assert broker.enqueue("first") == given
        assert broker.enqueue("second") != given  # used once
    assert broker.enqueue("third") not in (given,)
    assert OrmQ.objects.get(pk=given).payload == "first"


def test_deleting_queue_rows_deletes_only_those():
    rows = [OrmQ.objects.create(key="k", payload=f"t{i}", lock=timezone.now() - timedelta(seconds=1)).pk
            for i in range(4)]
    assert queue_rows_delete([rows[1], rows[3], 10**9]) == 2
    assert sorted(OrmQ.objects.values_list("pk", flat=True)) == [rows[0], rows[2]]
    assert queue_rows_delete([]) == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the queue row id comes from a PostgreSQL sequence")
def test_each_delivery_names_its_queue_row_and_a_batch_deletes_the_others(stripe_tenant, post_stripe):
    for n in range(1, 6):
        assert post_stripe(failed(n)).status_code == 200
    events = list(WebhookEvent.objects.order_by("pk"))
    queued = dict(OrmQ.objects.values_list("pk", "payload"))
    assert [event.task_row for event in events] == sorted(queued)  # one row each, the one it named

    assert webhook_event_process(event_id=events[0].pk) == "processed"

    assert set(WebhookEvent.objects.values_list("status", flat=True)) == {"processed"}
    # the running task's own row stays for the cluster to acknowledge; the others are gone
    assert list(OrmQ.objects.values_list("pk", flat=True)) == [events[0].task_row]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the queue row id comes from a PostgreSQL sequence")
def test_a_rolled_back_batch_keeps_every_queue_row(stripe_tenant, post_stripe, monkeypatch):
    for n in range(1, 4):
        assert post_stripe(failed(n, invoice="in_poison" if n == 2 else "")).status_code == 200
    events = list(WebhookEvent.objects.order_by("pk"))
    translate = processing._translate

    def poisoned(event, credentials):  # type: ignore[no-untyped-def]
        if b"in_poison" in bytes(event.body):
            raise RuntimeError("cannot translate")
        return translate(event, credentials)

    monkeypatch.setattr(processing, "_translate", poisoned)
    assert webhook_event_process(event_id=events[0].pk) == "processed"

    # applied one by one after the rollback: the failed event keeps its task (and the
    # sweeper), and the others' tasks run and find their events done
    assert list(WebhookEvent.objects.order_by("pk").values_list("status", flat=True)) == [
        "processed", "failed", "processed"]
    assert sorted(OrmQ.objects.values_list("pk", flat=True)) == [event.task_row for event in events]


def test_without_a_named_row_nothing_is_deleted(stripe_tenant, post_stripe):
    """SQLite (and any broker but the ORM one): events name no queue row; their tasks run and
    return from the memo, as before."""
    for n in range(1, 4):
        assert post_stripe(failed(n)).status_code == 200
    if connection.vendor == "postgresql":
        WebhookEvent.objects.update(task_row=None)
    rows = OrmQ.objects.count()
    first = WebhookEvent.objects.order_by("pk").first()
    assert first is not None
    assert webhook_event_process(event_id=first.pk) == "processed"
    assert OrmQ.objects.count() == rows == 3
