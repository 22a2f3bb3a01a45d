"""The acknowledgement's SQL (integrations.services.inbox_sql, paypilot.queue's enqueue): what
one delivery sends to the database, the queue row it leaves for the cluster, and that both
commit or neither does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management.color import no_style
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from integrations.models import WebhookEvent
from integrations.services import inbox_sql
from integrations.services.inbox import PROCESS_TASK
from integrations.services.inbox_sql import event_values_insert
from integrations.tests.conftest import Post, load_fixture
from paypilot.db import OVERRIDE_TABLE, append_only_override
from paypilot.models import Tenant
from paypilot.queue import OrmBroker

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """Enqueue for a cluster instead of running the task inline (the test settings' sync)."""
    monkeypatch.setattr(Conf, "SYNC", False)


@pytest.fixture
def committed(transactional_db: None) -> Iterator[None]:
    """Real commits. Teardown empties the append-only audit table first: pytest-django's
    flush is a DELETE on SQLite, which the append-only triggers refuse (as in
    approvals/tests/test_browser.py)."""
    yield
    if connection.vendor == "sqlite":
        tables = [t for t in connection.introspection.django_table_names(only_existing=True, include_views=False)
                  if t != OVERRIDE_TABLE]
        with append_only_override("retention_purge"), connection.cursor() as cursor:
            for sql in connection.ops.sql_flush(no_style(), tables):
                cursor.execute(sql)


def _delivery(event_id: str) -> dict[str, Any]:
    payload = load_fixture("stripe", "invoice_payment_failed")
    payload["id"] = event_id
    return payload


def _signed_post(client: Client, event_id: str) -> Any:
    """A delivery signed like Stripe's, through `client`."""
    from integrations.providers.stripe import sign
    from integrations.tests.conftest import STRIPE_SECRET, body_of

    body = body_of(_delivery(event_id))
    return client.post("/t/acme/webhooks/stripe", data=body, content_type="application/json",
                       headers={"Stripe-Signature": sign(body=body, secret=STRIPE_SECRET)})


def _statements(captured: CaptureQueriesContext) -> list[str]:
    return [" ".join(query["sql"].split("(")[0].split()) for query in captured.captured_queries]


def test_a_new_delivery_costs_two_inserts_and_nothing_else(
    stripe_tenant: Tenant, post_stripe: Post, queued: None
) -> None:
    assert post_stripe(_delivery("evt_warm_the_credential_cache")).status_code == 200
    with CaptureQueriesContext(connection) as captured:
        response = post_stripe(_delivery("evt_counted"))

    assert response.status_code == 200 and response.json()["duplicate"] is False
    # No URL-tenant lookup, no savepoint, no separate tenant binding (the event insert binds
    # it on PostgreSQL), no restore of a previous tenant.
    # On PostgreSQL the inbox opens the request's one transaction itself, after the signature
    # check (the middleware leaves webhook paths alone): inside the test's own transaction
    # that is no statement at all, in production a BEGIN/COMMIT around these two.
    assert _statements(captured) == ['INSERT INTO "integrations_webhookevent"', 'INSERT INTO "django_q_ormq"']


def test_the_queue_row_names_the_task_for_the_event(stripe_tenant: Tenant, post_stripe: Post, queued: None) -> None:
    event_id = post_stripe(_delivery("evt_queued")).json()["event"]

    row = OrmQ.objects.get()
    task = SignedPackage.loads(row.payload)
    assert (row.key, task["func"], task["args"]) == (Conf.CLUSTER_NAME, PROCESS_TASK, (event_id,))
    assert (task["ack_failure"], task["save"], task["name"]) == (True, False, f"webhook-{event_id}")
    assert row.lock is not None
    assert WebhookEvent.objects.get(pk=event_id).status == WebhookEvent.Status.RECEIVED


def test_a_duplicate_is_answered_from_the_stored_row_and_queues_nothing(
    stripe_tenant: Tenant, post_stripe: Post, queued: None
) -> None:
    first = post_stripe(_delivery("evt_twice")).json()
    again = post_stripe(_delivery("evt_twice"))

    assert again.status_code == 200
    assert again.json() == {"received": True, "duplicate": True, "event": first["event"],
                            "status": "received", "outcome": ""}
    assert WebhookEvent.objects.count() == 1 and OrmQ.objects.count() == 1


def test_event_insert_skips_the_tenants_duplicate_only(stripe_tenant: Tenant, other_tenant: Tenant) -> None:
    def event(tenant: Tenant) -> dict[str, Any]:
        return {"tenant_id": tenant.pk, "provider": "stripe", "event_key": "evt_1", "event_type": "invoice.paid",
                "body": b"{}", "headers": {"Stripe-Signature": "t=1,v1=x"}, "resource_key": "in_1"}

    first = event_values_insert(event(stripe_tenant))
    assert first is not None
    pk = first[0]
    assert event_values_insert(event(stripe_tenant)) is None
    assert event_values_insert(event(other_tenant)) is not None
    stored = WebhookEvent.objects.get(pk=pk)
    assert (bytes(stored.body), stored.headers, stored.status) == (b"{}", {"Stripe-Signature": "t=1,v1=x"}, "received")


def test_event_and_queue_row_commit_together(
    committed: None, stripe_tenant: Tenant, monkeypatch: pytest.MonkeyPatch, queued: None
) -> None:
    def broken(self: OrmBroker, task: str) -> int:
        raise RuntimeError("queue table unavailable")

    working = OrmBroker.enqueue
    monkeypatch.setattr(OrmBroker, "enqueue", broken)
    response = _signed_post(Client(raise_request_exception=False), "evt_lost")

    assert response.status_code == 500
    assert not WebhookEvent.objects.exists() and not OrmQ.objects.exists()
    monkeypatch.setattr(OrmBroker, "enqueue", working)  # redelivered: stored and queued
    retried = _signed_post(Client(), "evt_lost")
    assert retried.json()["duplicate"] is False
    assert WebhookEvent.objects.count() == 1 and OrmQ.objects.count() == 1


def test_the_orm_broker_is_built_once_and_others_left_to_django_q(monkeypatch: pytest.MonkeyPatch) -> None:
    class Other:
        list_key = "paypilot"

    monkeypatch.setattr(inbox_sql, "_broker", None)
    monkeypatch.setattr(inbox_sql, "get_broker", lambda: Other())
    assert inbox_sql.queue_broker() is None  # async_task then asks django-q2 for its broker

    monkeypatch.setattr(inbox_sql, "_broker", None)
    monkeypatch.setattr(inbox_sql, "get_broker", lambda: OrmBroker(list_key="paypilot"))
    broker = inbox_sql.queue_broker()
    assert isinstance(broker, OrmBroker) and inbox_sql.queue_broker() is broker


def test_the_acknowledgement_builds_no_model_instance_and_no_async_task_call(
    stripe_tenant: Tenant, post_stripe: Post, queued: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db.models.signals import pre_init

    from integrations.services import inbox

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("async_task called in cluster mode with the ORM broker")

    monkeypatch.setattr(inbox, "async_task", refuse)
    built: list[Any] = []

    def count(sender: Any, **kwargs: Any) -> None:
        built.append(sender)

    pre_init.connect(count, sender=WebhookEvent)
    try:
        response = post_stripe(_delivery("evt_lean"))
    finally:
        pre_init.disconnect(count, sender=WebhookEvent)

    assert response.status_code == 200 and response.json()["duplicate"] is False
    assert built == []  # the row went in from its values: no WebhookEvent was constructed
    assert WebhookEvent.objects.filter(pk=response.json()["event"]).exists() and OrmQ.objects.count() == 1


def test_the_package_is_the_one_async_task_builds(stripe_tenant: Tenant, post_stripe: Post, queued: None) -> None:
    from django_q.tasks import async_task

    class Recorder:
        list_key = Conf.CLUSTER_NAME
        packages: list[str] = []

        def enqueue(self, task: str) -> int:
            self.packages.append(task)
            return 1

    event_id = post_stripe(_delivery("evt_same_package")).json()["event"]
    ours = SignedPackage.loads(OrmQ.objects.get().payload)
    async_task(PROCESS_TASK, event_id, ack_failure=True, save=False, task_name=f"webhook-{event_id}",
               broker=Recorder())
    theirs = SignedPackage.loads(Recorder.packages[0])

    assert list(ours) == list(theirs)  # the same keys, in the same order
    assert {k: v for k, v in ours.items() if k not in ("id", "started")} == \
        {k: v for k, v in theirs.items() if k not in ("id", "started")}
    assert len(ours["id"]) == 32 and ours["id"] != theirs["id"] and ours["started"] <= theirs["started"]


def test_a_pre_enqueue_receiver_still_sees_the_task(stripe_tenant: Tenant, post_stripe: Post, queued: None) -> None:
    from django_q.signals import pre_enqueue

    seen: list[dict[str, Any]] = []

    def receiver(sender: Any, task: dict[str, Any], **kwargs: Any) -> None:
        seen.append(task)

    pre_enqueue.connect(receiver)
    try:
        event_id = post_stripe(_delivery("evt_signalled")).json()["event"]
    finally:
        pre_enqueue.disconnect(receiver)

    assert [(task["func"], task["args"]) for task in seen] == [(PROCESS_TASK, (event_id,))]
    assert OrmQ.objects.count() == 1  # queued once, by async_task


def test_a_failure_between_the_event_and_its_task_stores_neither(
    committed: None, stripe_tenant: Tenant, monkeypatch: pytest.MonkeyPatch, queued: None
) -> None:
    def broken(obj: Any, compressed: bool = False) -> str:
        raise RuntimeError("signing failed after the event's insert")

    monkeypatch.setattr(SignedPackage, "dumps", staticmethod(broken))
    response = _signed_post(Client(raise_request_exception=False), "evt_half")

    assert response.status_code == 500
    assert not WebhookEvent.objects.exists() and not OrmQ.objects.exists()


def test_a_queued_task_runs_in_the_clusters_worker(
    committed: None, stripe_tenant: Tenant, monkeypatch: pytest.MonkeyPatch, queued: None
) -> None:
    from django_q.tasks import _sync  # django-q2's own run of a package through worker() and monitor()

    from integrations import handoff
    from integrations.tests.conftest import HandoffRecorder

    recovery = HandoffRecorder()
    monkeypatch.setattr(handoff, "recovery_start", recovery)
    event_id = _signed_post(Client(), "evt_for_the_worker").json()["event"]
    assert WebhookEvent.objects.get(pk=event_id).status == WebhookEvent.Status.RECEIVED

    _sync(OrmQ.objects.get().payload)

    event = WebhookEvent.objects.get(pk=event_id)
    assert (event.status, event.attempts, event.error) == (WebhookEvent.Status.PROCESSED, 1, "")
    assert len(recovery.calls) == 1 and recovery.calls[0]["tenant"] == stripe_tenant
