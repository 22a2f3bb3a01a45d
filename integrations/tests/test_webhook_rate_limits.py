"""Webhook rate limits: a verified delivery is never throttled; failed verifications are
limited per client address and per tenant before anything is parsed or written."""

from __future__ import annotations

import copy
import time
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from integrations.models import WebhookEvent
from integrations.tests.conftest import load_fixture
from paypilot import ratelimit
from paypilot.models import AuditEvent
from paypilot.ratelimit import counters_clear

pytestmark = pytest.mark.django_db

ADDRESS = "192.0.2.10"  # one provider address for the whole burst


@pytest.fixture(autouse=True)
def _limits(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    counters_clear()
    # The windows are fixed: a burst that straddles a window's end is counted half in each
    # (CI once saw the 31st failure answered 400). The counters' clock is held mid-window.
    window = settings.PAYPILOT_RATE_LIMIT_WINDOW_SECONDS
    still = (time.time() // window) * window + window / 2
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: still))
    settings.PAYPILOT_RATE_LIMIT_PER_IP = 10  # far below the burst: webhooks must not count here
    settings.PAYPILOT_WEBHOOK_FAILURES_PER_IP = 20
    settings.PAYPILOT_WEBHOOK_FAILURES_PER_TENANT = 50


@pytest.fixture
def no_processing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliveries are stored and enqueued as usual; the (sync-mode) worker is not run, so
    the test measures the acknowledgement path only."""
    from integrations.services import inbox

    monkeypatch.setattr(inbox, "_enqueue", lambda event_id: None)


def _paid(n: int) -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("stripe", "invoice_paid"))
    payload["id"] = f"evt_burst_{n:04d}"
    return payload


def _post(client: Any, payload: dict[str, Any], *, signature: str | None, address: str = ADDRESS,
          tenant: str = "acme") -> Any:
    from integrations.tests.conftest import body_of

    headers = {"Stripe-Signature": signature} if signature is not None else {}
    return client.post(f"/t/{tenant}/webhooks/stripe", data=body_of(payload), content_type="application/json",
                       headers=headers, REMOTE_ADDR=address)


def _signed(payload: dict[str, Any]) -> str:
    from integrations.providers.stripe import sign
    from integrations.tests.conftest import STRIPE_SECRET, body_of

    return sign(body=body_of(payload), secret=STRIPE_SECRET)


def test_200_signed_deliveries_from_one_address_are_all_accepted(stripe_tenant, client, no_processing):
    statuses = [_post(client, payload, signature=_signed(payload)).status_code
                for payload in (_paid(n) for n in range(200))]

    assert statuses == [200] * 200
    assert WebhookEvent.objects.count() == 200


# On PostgreSQL, a transactional test: inside a test-case transaction the tenant binding's
# own transaction would be a SAVEPOINT, which production never sends. Not on SQLite, where
# the teardown's DELETE would meet the append-only triggers (and no transaction is opened).
ON_POSTGRES = "postgresql" in django_settings.DATABASES["default"]["ENGINE"]


@pytest.mark.django_db(transaction=ON_POSTGRES)
def test_200_unsigned_deliveries_are_refused_at_the_limit_without_touching_the_database(
    stripe_tenant, client, no_processing
):
    first = [_post(client, _paid(n), signature=None) for n in range(20)]
    assert {response.status_code for response in first} == {400}
    assert {response.json()["error"] for response in first} == {"signature_missing"}

    with CaptureQueriesContext(connection) as queries:
        refused = [_post(client, _paid(n), signature=None) for n in range(20, 200)]

    assert {response.status_code for response in refused} == {429}
    assert {response.json()["error"] for response in refused} == {"rate_limited"}
    assert all(1 <= int(response["Retry-After"]) <= 60 for response in refused)
    assert len(queries) == 0, [query["sql"] for query in queries.captured_queries]
    assert not WebhookEvent.objects.exists()
    # Only the deliveries under the limit were audited; the flood past it wrote nothing.
    assert AuditEvent.objects.filter(event="integrations.webhook.rejected").count() == 20


def test_a_signed_delivery_is_accepted_from_an_address_past_its_failure_limit(
    stripe_tenant, client, no_processing
):
    for n in range(30):
        _post(client, _paid(n), signature="t=1,v1=forged")
    assert _post(client, _paid(999), signature="t=1,v1=forged").status_code == 429

    genuine = _paid(1000)
    assert _post(client, genuine, signature=_signed(genuine)).status_code == 200
    assert WebhookEvent.objects.get().event_key == "evt_burst_1000"


def test_failures_are_limited_per_tenant_across_addresses(stripe_tenant, client, no_processing):
    statuses = [_post(client, _paid(n), signature=None, address=f"198.51.100.{n}").status_code
                for n in range(60)]
    assert statuses[:50] == [400] * 50  # no single address reached its own limit of 20
    assert statuses[50:] == [429] * 10


@pytest.mark.django_db(transaction=ON_POSTGRES)
def test_deliveries_to_an_unknown_tenant_are_limited_per_address_without_queries(stripe_tenant, client):
    for n in range(20):
        assert _post(client, _paid(n), signature=None, tenant="no-such-shop").status_code == 404
    with CaptureQueriesContext(connection) as queries:
        refused = [_post(client, _paid(n), signature=None, tenant="no-such-shop") for n in range(5)]
    assert {response.status_code for response in refused} == {429}
    assert len(queries) == 0


def test_per_ip_limit_still_applies_to_the_api(stripe_tenant, client):
    statuses = [client.get("/tokens", REMOTE_ADDR=ADDRESS).status_code for _ in range(11)]
    assert statuses == [401] * 10 + [429]
