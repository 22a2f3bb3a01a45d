"""paypilot.queue.OrmBroker: bulk take with one lock UPDATE, one-statement acknowledgement."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.conf import Conf
from django_q.models import OrmQ

from paypilot.queue import OrmBroker

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> OrmBroker:
    monkeypatch.setattr(Conf, "POLL", 0)
    monkeypatch.setattr(Conf, "BULK", 3)
    return OrmBroker(list_key="paypilot-test")


def queued(broker: OrmBroker, n: int, *, lock_delta: timedelta = timedelta(seconds=-1)) -> list[int]:
    return [OrmQ.objects.create(key=broker.list_key, payload=f"task-{i}", lock=timezone.now() + lock_delta).pk
            for i in range(n)]


def test_the_configured_orm_broker_is_this_one():
    if settings.REDIS_URL:
        pytest.skip("Redis broker configured")
    assert type(get_broker()) is OrmBroker


def test_takes_up_to_bulk_due_tasks_in_order_and_hides_them_until_retry(broker):
    ids = queued(broker, 5)
    before = timezone.now()

    with CaptureQueriesContext(connection) as queries:
        taken = broker.dequeue()

    assert taken == [(ids[0], "task-0"), (ids[1], "task-1"), (ids[2], "task-2")]
    locks = dict(OrmQ.objects.values_list("pk", "lock"))
    assert all(locks[pk] >= before + timedelta(seconds=Conf.RETRY - 1) for pk in ids[:3])
    assert all(locks[pk] < before for pk in ids[3:])
    # one read and one UPDATE of the queue, not an UPDATE per task; on PostgreSQL both in one
    # statement, after one set_config for the transaction (paypilot.queue.DEQUEUE_SETTINGS_SQL)
    statements = [q["sql"].split()[0] for q in queries if "django_q_ormq" in q["sql"]]
    assert statements == (["WITH"] if connection.vendor == "postgresql" else ["SELECT", "UPDATE"])
    assert broker.dequeue() == [(ids[3], "task-3"), (ids[4], "task-4")]
    assert broker.dequeue() is None  # nothing due any more


def test_tasks_not_yet_due_and_other_queues_are_left_alone(broker):
    queued(broker, 1, lock_delta=timedelta(minutes=5))
    OrmQ.objects.create(key="another-queue", payload="theirs", lock=timezone.now() - timedelta(seconds=1))

    assert broker.dequeue() is None


def test_a_task_never_acknowledged_is_handed_out_again_after_retry(broker):
    [pk] = queued(broker, 1)
    assert broker.dequeue() == [(pk, "task-0")]
    OrmQ.objects.filter(pk=pk).update(lock=timezone.now() - timedelta(seconds=1))  # retry time passed

    assert broker.dequeue() == [(pk, "task-0")]


def test_acknowledge_and_fail_delete_the_queue_row(broker):
    done, failed, other = queued(broker, 3)

    broker.acknowledge(done)
    broker.fail(failed)

    assert list(OrmQ.objects.values_list("pk", flat=True)) == [other]


@pytest.mark.django_db(transaction=True)  # the broker runs in autocommit, as in the monitor process
def test_acknowledge_retries_once_on_a_broken_connection(broker, monkeypatch):
    [pk] = queued(broker, 1)
    calls = []
    real = OrmBroker._delete

    def flaky(task_id):  # type: ignore[no-untyped-def]
        calls.append(task_id)
        if len(calls) == 1:
            raise DatabaseError("server closed the connection unexpectedly")
        real(task_id)

    monkeypatch.setattr(OrmBroker, "_delete", staticmethod(flaky))
    broker.acknowledge(pk)

    assert calls == [pk, pk] and not OrmQ.objects.exists()
