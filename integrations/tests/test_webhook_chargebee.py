"""POST /t/<tenant>/webhooks/chargebee/<url segment> with HTTP Basic auth."""

from __future__ import annotations

import time
from typing import Any

import pytest

from integrations.models import WebhookEvent
from integrations.tests.conftest import load_fixture
from ledger.models import Invoice, PaidBeforeFailure
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


def fresh(name: str) -> dict[str, Any]:
    """The fixture with `occurred_at` moved to now (older events are refused as replays)."""
    payload = load_fixture("chargebee", name)
    payload["occurred_at"] = int(time.time())
    return payload


def test_valid_failure(post_chargebee, recovery):
    response = post_chargebee(fresh("payment_failed"))

    assert response.status_code == 200
    event = WebhookEvent.objects.get()
    assert (event.event_key, event.outcome) == ("ev_16BPgETyVrQbiGhA", "draft_opened")
    assert (event.resource_key, event.resource_version) == ("invoice:inv_1042", 1780387200150)
    invoice = Invoice.objects.get()
    assert (invoice.provider, invoice.amount_minor, invoice.currency) == ("chargebee", 29900, "EUR")
    assert invoice.failure_code == "insufficient_funds" and invoice.subscription_id == "sub_brightleaf_pro"
    assert int(recovery.calls[0]["provider_retry_at"].timestamp()) == 1780646400


def test_exhausted_dunning_records_and_closes(post_chargebee, recovery):
    post_chargebee(fresh("payment_failed"))
    post_chargebee(fresh("payment_failed_exhausted"))

    assert Invoice.objects.get().state == "exhausted"
    assert WebhookEvent.objects.order_by("pk").last().outcome == "exhausted"
    assert len(recovery.calls) == 1


def test_exhausted_first_sight_is_recorded_then_exhausted(post_chargebee, recovery):
    post_chargebee(fresh("payment_failed_exhausted"))
    invoice = Invoice.objects.get()
    assert invoice.state == "exhausted" and invoice.transitions.count() == 2
    assert not recovery.calls


@pytest.mark.parametrize("kwargs,reason", [
    ({"password": "wrong"}, "signature_mismatch"),
    ({"username": "someone"}, "signature_mismatch"),
    ({"auth": False}, "signature_missing"),
])
def test_bad_credentials(post_chargebee, kwargs, reason):
    response = post_chargebee(fresh("payment_failed"), **kwargs)

    assert response.status_code == 400 and response.json()["error"] == reason
    assert not WebhookEvent.objects.exists()
    assert AuditEvent.objects.filter(event="integrations.webhook.rejected", detail__reason=reason).exists()


def test_wrong_or_missing_url_segment(post_chargebee, chargebee_url):
    base = chargebee_url.rsplit("/", 1)[0]
    assert post_chargebee(fresh("payment_failed"), url=base + "/guessed").status_code == 400
    assert post_chargebee(fresh("payment_failed"), url=base).status_code == 400
    assert not WebhookEvent.objects.exists()


def test_stale_event_is_refused_as_replay(post_chargebee):
    payload = load_fixture("chargebee", "payment_failed")
    payload["occurred_at"] = int(time.time()) - 5 * 24 * 3600
    response = post_chargebee(payload)
    assert response.status_code == 400 and response.json()["error"] == "timestamp_stale"


def test_missing_secret(tenant, client):
    response = client.post("/t/acme/webhooks/chargebee/anything", data=fresh("payment_failed"),
                           content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "secret_not_configured"


def test_duplicate(post_chargebee, recovery):
    payload = fresh("payment_failed")
    post_chargebee(payload)
    again = post_chargebee(payload)

    assert again.json()["duplicate"] is True and again.json()["outcome"] == "draft_opened"
    assert WebhookEvent.objects.count() == 1 and len(recovery.calls) == 1


def test_unhandled_type(post_chargebee, recovery):
    post_chargebee(fresh("card_expiry_reminder"))
    event = WebhookEvent.objects.get()
    assert (event.status, event.outcome) == ("ignored", "unhandled_event_type")


def test_out_of_order_by_resource_version(post_chargebee, recovery):
    """payment_succeeded (newer invoice version) arrives first; the older failure is a no-op."""
    post_chargebee(fresh("payment_succeeded"))
    post_chargebee(fresh("payment_failed"))

    paid, failed = WebhookEvent.objects.order_by("pk")
    assert paid.outcome == "paid_before_failure"
    assert (failed.status, failed.outcome) == ("processed", "noop_out_of_order")
    assert PaidBeforeFailure.objects.count() == 1 and not Invoice.objects.exists()
    assert not recovery.calls


def test_failure_then_success_recovers(post_chargebee, recovery):
    post_chargebee(fresh("payment_failed"))
    post_chargebee(fresh("payment_succeeded"))
    assert Invoice.objects.get().state == "recovered"


def test_subscription_cancelled_churns(post_chargebee, recovery):
    post_chargebee(fresh("payment_failed"))
    post_chargebee(fresh("subscription_cancelled"))
    assert Invoice.objects.get().state == "churned"
