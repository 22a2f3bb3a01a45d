"""POST /t/<tenant>/webhooks/recharge with both signature schemes and both API versions."""

from __future__ import annotations

import time

import pytest

from integrations.models import WebhookEvent
from integrations.tests.conftest import body_of, load_fixture
from ledger.models import Invoice, PaidBeforeFailure
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("scheme", ["timestamped", "legacy"])
def test_valid_card_expired_failure_is_recorded_and_drafted(recharge_tenant, post_recharge, recovery, scheme):
    response = post_recharge(load_fixture("recharge", "charge_failed_card_expired"), scheme=scheme,
                             topic="charge/failed")

    assert response.status_code == 200
    event = WebhookEvent.objects.get()
    assert event.event_key == "charge/failed:581120044:1"
    assert (event.status, event.outcome) == ("processed", "draft_opened")
    invoice = Invoice.objects.get()
    assert (invoice.provider, invoice.external_invoice_id) == ("recharge", "581120044")
    assert (invoice.amount_minor, invoice.currency, invoice.failure_code) == (5990, "EUR", "card_expired")
    assert invoice.subscription_id == "40500011"
    assert recovery.calls[0]["provider_retry_source"] == "recharge"


def test_retry_scheduled_by_recharge_writes_ledger_but_drafts_nothing(recharge_tenant, post_recharge, recovery):
    post_recharge(load_fixture("recharge", "charge_failed_2021_11"))

    event = WebhookEvent.objects.get()
    assert (event.event_type, event.outcome) == ("charge/failed", "recorded_retry_scheduled")
    assert Invoice.objects.get().failure_code == "generic_decline"
    assert not recovery.calls


def test_2021_01_shape_uses_store_currency_and_number_times_tried(recharge_tenant, post_recharge, recovery):
    post_recharge(load_fixture("recharge", "charge_failed_2021_01"), topic="charge/failed")

    invoice = Invoice.objects.get()
    assert (invoice.amount_minor, invoice.currency, invoice.attempt_count) == (12000, "USD", 2)
    assert invoice.failure_code == "insufficient_funds" and invoice.subscription_id == "30200019"
    assert invoice.customer.email == "orders@tidepoolsurf.example"
    assert WebhookEvent.objects.get().event_key == "charge/failed:581120052:2"


@pytest.mark.parametrize("name,reason", [("charge_failed_not_customer", "not_customer_error"),
                                         ("charge_failed_unknown_type", "unmapped_error_type")])
def test_not_the_customers_problem_is_acknowledged_never_emailed(
    recharge_tenant, post_recharge, recovery, name, reason
):
    assert post_recharge(load_fixture("recharge", name)).status_code == 200

    event = WebhookEvent.objects.get()
    assert (event.status, event.outcome) == ("ignored", reason)
    assert not Invoice.objects.exists() and not recovery.calls


def test_max_retries_reached_is_retries_exhausted(recharge_tenant, post_recharge, recovery):
    post_recharge(load_fixture("recharge", "charge_failed_2021_11"))
    post_recharge(load_fixture("recharge", "charge_max_retries_reached"), topic="charge/max_retries_reached")

    invoice = Invoice.objects.get()
    assert invoice.failure_code == "retries_exhausted" and invoice.attempt_count == 7
    assert WebhookEvent.objects.order_by("pk").last().outcome == "draft_opened"


def test_bad_signature(recharge_tenant, post_recharge):
    response = post_recharge(load_fixture("recharge", "charge_failed_2021_11"), secret="wrong")

    assert response.status_code == 400 and response.json()["error"] == "signature_mismatch"
    assert not WebhookEvent.objects.exists()
    assert AuditEvent.objects.filter(event="integrations.webhook.rejected", detail__provider="recharge").exists()


def test_bad_legacy_signature(recharge_tenant, post_recharge):
    response = post_recharge(load_fixture("recharge", "charge_failed_2021_11"), scheme="legacy", secret="wrong")
    assert response.status_code == 400 and response.json()["error"] == "signature_mismatch"


def test_timestamped_failure_does_not_fall_back_to_legacy(recharge_tenant, client):
    from integrations.providers import recharge
    from integrations.tests.conftest import RECHARGE_SECRET

    body = body_of(load_fixture("recharge", "charge_failed_2021_11"))
    headers = {**recharge.sign_legacy(body=body, secret=RECHARGE_SECRET),
               **recharge.sign_timestamped(body=body, secret="wrong")}
    response = client.post("/t/acme/webhooks/recharge", data=body, content_type="application/json", headers=headers)
    assert response.status_code == 400


def test_no_signature_header(recharge_tenant, post_recharge):
    response = post_recharge(load_fixture("recharge", "charge_failed_2021_11"), scheme="none")
    assert response.status_code == 400 and response.json()["error"] == "signature_missing"


def test_stale_timestamp(recharge_tenant, post_recharge):
    stale = int(time.time()) - 172_801
    response = post_recharge(load_fixture("recharge", "charge_failed_2021_11"), timestamp=stale)

    assert response.status_code == 400 and response.json()["error"] == "timestamp_stale"
    assert not WebhookEvent.objects.exists()


def test_missing_secret(tenant, post_recharge):
    response = post_recharge(load_fixture("recharge", "charge_failed_2021_11"))
    assert response.status_code == 400 and response.json()["error"] == "secret_not_configured"


def test_duplicate_same_charge_and_tries(recharge_tenant, post_recharge, recovery):
    payload = load_fixture("recharge", "charge_failed_card_expired")
    post_recharge(payload)
    again = post_recharge(payload)

    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["outcome"] == "draft_opened"
    assert WebhookEvent.objects.count() == 1 and len(recovery.calls) == 1


def test_next_try_of_the_same_charge_is_a_new_event(recharge_tenant, post_recharge, recovery):
    payload = load_fixture("recharge", "charge_failed_card_expired")
    post_recharge(payload)
    payload["charge"]["charge_attempts"] = 2
    assert post_recharge(payload).json()["duplicate"] is False
    assert Invoice.objects.get().attempt_count == 2


def test_unhandled_topic(recharge_tenant, post_recharge, recovery):
    post_recharge(load_fixture("recharge", "charge_upcoming"), topic="charge/upcoming")

    event = WebhookEvent.objects.get()
    assert (event.event_type, event.status, event.outcome) == ("charge/upcoming", "ignored", "unhandled_event_type")


def test_out_of_order_paid_before_failure(recharge_tenant, post_recharge, recovery):
    post_recharge(load_fixture("recharge", "charge_paid"), topic="charge/paid")
    post_recharge(load_fixture("recharge", "charge_failed_card_expired"), topic="charge/failed")

    paid, failed = WebhookEvent.objects.order_by("pk")
    assert paid.outcome == "paid_before_failure" and failed.outcome == "noop_already_paid"
    assert PaidBeforeFailure.objects.get().amount_paid_minor == 5990
    assert not Invoice.objects.exists() and not recovery.calls


def test_failure_then_paid_then_cancel(recharge_tenant, post_recharge, recovery):
    post_recharge(load_fixture("recharge", "charge_failed_card_expired"))
    post_recharge(load_fixture("recharge", "charge_paid"))
    assert Invoice.objects.get().state == "recovered"


def test_subscription_cancelled_churns(recharge_tenant, post_recharge, recovery):
    post_recharge(load_fixture("recharge", "charge_failed_2021_11"))
    post_recharge(load_fixture("recharge", "subscription_cancelled"), topic="subscription/cancelled")

    assert Invoice.objects.get().state == "churned"
