"""20 concurrent deliveries of one event on a real PostgreSQL: one row, one transition, one draft.

Runs only when DATABASE_URL points at PostgreSQL (SQLite serialises writers anyway), e.g.
DATABASE_URL=postgres://postgres@127.0.0.1:5432/pp_integrations .venv/bin/pytest integrations
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test import Client

from approvals.models import ApprovalRequest
from dunning.models import Draft
from integrations.models import WebhookEvent
from integrations.providers.stripe import sign
from integrations.services import credential_set
from integrations.tests.conftest import STRIPE_SECRET, body_of, load_fixture
from ledger.models import Invoice, InvoiceTransition
from paypilot.services import tenant_create

DELIVERIES = 20

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs DATABASE_URL pointing at PostgreSQL"
)


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_deliveries_of_one_event():
    tenant = tenant_create(slug="acme", name="Acme Ltd")
    credential_set(tenant=tenant, provider="stripe", secret=STRIPE_SECRET)
    body = body_of(load_fixture("stripe", "invoice_payment_failed"))
    barrier = threading.Barrier(DELIVERIES)
    statuses: list[int] = []
    duplicates: list[bool] = []
    errors: list[BaseException] = []

    def deliver() -> None:
        try:
            client = Client()
            header = sign(body=body, secret=STRIPE_SECRET)
            barrier.wait(timeout=30)
            response = client.post("/t/acme/webhooks/stripe", data=body, content_type="application/json",
                                   headers={"Stripe-Signature": header})
            statuses.append(response.status_code)
            duplicates.append(response.json().get("duplicate"))
        except BaseException as exc:  # reported below, so a thread failure fails the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=deliver) for _ in range(DELIVERIES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert not errors, errors
    assert statuses == [200] * DELIVERIES
    assert duplicates.count(False) == 1 and duplicates.count(True) == DELIVERIES - 1
    assert WebhookEvent.objects.count() == 1
    assert WebhookEvent.objects.get().status == "processed"
    assert Invoice.objects.count() == 1
    assert InvoiceTransition.objects.count() == 1
    assert Draft.objects.count() == 1
    assert ApprovalRequest.objects.count() == 1


WORKERS = 4
EVENTS = 60


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_take_disjoint_events_and_process_each_once():
    """Four workers start tasks at once on a full inbox: their batches skip each other's
    locked rows, and every event is applied once (no lost, doubled or deadlocked work)."""
    from integrations.services import webhook_event_process
    from integrations.tests.test_processing_batch import failed, store

    tenant = tenant_create(slug="acme", name="Acme Ltd")
    credential_set(tenant=tenant, provider="stripe", secret=STRIPE_SECRET)
    ids = store(tenant, [failed(n) for n in range(EVENTS)])
    barrier = threading.Barrier(WORKERS)
    errors: list[BaseException] = []

    def worker(mine: list[int]) -> None:
        try:
            barrier.wait(timeout=30)
            for event_id in mine:
                webhook_event_process(event_id=event_id)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    # each worker gets every fourth task, as a queue hands them out
    threads = [threading.Thread(target=worker, args=(ids[i::WORKERS],)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert not errors, errors
    assert list(WebhookEvent.objects.values_list("status", "attempts").distinct()) == [("processed", 1)]
    for model in (Invoice, InvoiceTransition, Draft, ApprovalRequest):
        assert model.objects.count() == EVENTS, model.__name__
