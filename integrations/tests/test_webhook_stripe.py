"""POST /t/<tenant>/webhooks/stripe and /webhooks/stripe, end to end with the fixtures."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from integrations.models import WebhookEvent
from integrations.tests.conftest import STRIPE_SECRET, load_fixture
from ledger.models import Invoice, InvoiceTransition, PaidBeforeFailure
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_valid_failure_is_stored_processed_and_handed_to_recovery(stripe_tenant, post_stripe, recovery):
    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"))

    assert response.status_code == 200
    assert response.json()["received"] is True and response.json()["duplicate"] is False
    event = WebhookEvent.objects.get()
    assert (event.event_key, event.event_type, event.status) == (
        "evt_1RzQ5pAcmeRobotics01", "invoice.payment_failed", "processed")
    assert event.outcome == "draft_opened" and event.attempts == 1
    assert "Stripe-Signature" in event.headers
    invoice = Invoice.objects.get()
    assert invoice.external_invoice_id == "in_1RzQ4xAcmeRobotics"
    assert (invoice.amount_minor, invoice.currency) == (149900, "USD")
    assert invoice.failure_code == "card_expired"
    assert invoice.subscription_id == "sub_1RAcmeScale"
    assert invoice.customer.email == "billing@acmerobotics.io"
    [call] = recovery.calls
    assert call["invoice"] == invoice and call["provider_retry_source"] == "stripe"
    assert int(call["provider_retry_at"].timestamp()) == 1781654405


def test_legacy_shape_before_basil(stripe_tenant, post_stripe, recovery):
    post_stripe(load_fixture("stripe", "invoice_payment_failed_legacy"))

    invoice = Invoice.objects.get()
    assert invoice.subscription_id == "sub_1PGlobexPro"
    assert invoice.currency == "GBP" and invoice.amount_minor == 25000 and invoice.attempt_count == 2
    # advice_code try_again_later does not override; the decline code insufficient_funds wins
    assert invoice.failure_code == "insufficient_funds"


def test_default_tenant_route(settings, stripe_tenant, client, recovery):
    from integrations.providers.stripe import sign
    from integrations.tests.conftest import body_of

    settings.PAYPILOT_DEFAULT_TENANT = "acme"
    body = body_of(load_fixture("stripe", "invoice_payment_failed"))
    response = client.post("/webhooks/stripe", data=body, content_type="application/json",
                           headers={"Stripe-Signature": sign(body=body, secret=STRIPE_SECRET)})
    assert response.status_code == 200
    assert WebhookEvent.objects.get().tenant == stripe_tenant


def test_several_v1_signatures_any_may_match(stripe_tenant, post_stripe, recovery):
    from integrations.providers.stripe import sign
    from integrations.tests.conftest import body_of

    body = body_of(load_fixture("stripe", "invoice_paid"))
    good = sign(body=body, secret=STRIPE_SECRET)
    stamp, v1 = good.split(",")
    header = f"{stamp},v1={'0' * 64},{v1},v0=ignored"
    assert post_stripe(body, header=header).status_code == 200


def test_bad_signature_is_400_audited_and_nothing_stored(stripe_tenant, post_stripe, recovery):
    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"), secret="whsec_wrong")

    assert response.status_code == 400
    assert response.json()["error"] == "signature_mismatch"
    assert not WebhookEvent.objects.exists() and not Invoice.objects.exists()
    audit = AuditEvent.objects.get(event="integrations.webhook.rejected")
    assert audit.detail == {"provider": "stripe", "reason": "signature_mismatch",
                            "refusal_id": response.json()["refusal_id"]}  # paypilot.refusals


def test_body_changed_after_signing_is_refused(stripe_tenant, post_stripe):
    from integrations.providers.stripe import sign
    from integrations.tests.conftest import body_of

    body = body_of(load_fixture("stripe", "invoice_payment_failed"))
    header = sign(body=body, secret=STRIPE_SECRET)
    response = post_stripe(body.replace(b"149900", b"1"), header=header)
    assert response.status_code == 400 and response.json()["error"] == "signature_mismatch"


@pytest.mark.parametrize("header,reason", [("", "signature_missing"), ("v1=abc", "signature_malformed"),
                                           ("t=123", "signature_malformed")])
def test_missing_or_malformed_header(stripe_tenant, post_stripe, header, reason):
    response = post_stripe(load_fixture("stripe", "invoice_paid"), header=header)
    assert response.status_code == 400 and response.json()["error"] == reason


def test_stale_timestamp_is_refused(stripe_tenant, post_stripe):
    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"), timestamp=int(time.time()) - 301)

    assert response.status_code == 400
    assert response.json()["error"] == "timestamp_stale"
    assert not WebhookEvent.objects.exists()


def test_timestamp_inside_tolerance_is_accepted(stripe_tenant, post_stripe, recovery):
    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"), timestamp=int(time.time()) - 240)
    assert response.status_code == 200


def test_missing_secret_is_refused(tenant, post_stripe):
    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"))

    assert response.status_code == 400
    assert response.json()["error"] == "secret_not_configured"
    assert not WebhookEvent.objects.exists()
    rejected = AuditEvent.objects.filter(event="integrations.webhook.rejected")
    assert rejected.filter(detail__reason="secret_not_configured").exists()


def test_unsigned_allowed_only_for_demo_tenant_with_the_switch(db, client, recovery):
    from paypilot.services import tenant_create

    tenant_create(slug="demo", name="Demo")
    tenant_create(slug="acme", name="Acme")
    body = load_fixture("stripe", "invoice_payment_failed")
    with override_settings(PAYPILOT_ALLOW_UNSIGNED_WEBHOOKS=True, PAYPILOT_DEMO_TENANT="demo"):
        assert client.post("/t/demo/webhooks/stripe", body, content_type="application/json").status_code == 200
        assert client.post("/t/acme/webhooks/stripe", body, content_type="application/json").status_code == 400
    body["id"] = "evt_second"
    with override_settings(PAYPILOT_ALLOW_UNSIGNED_WEBHOOKS=False, PAYPILOT_DEMO_TENANT="demo"):
        assert client.post("/t/demo/webhooks/stripe", body, content_type="application/json").status_code == 400
    assert WebhookEvent.objects.count() == 1


def test_duplicate_answers_200_with_stored_outcome_and_runs_once(stripe_tenant, post_stripe, recovery):
    payload = load_fixture("stripe", "invoice_payment_failed")
    post_stripe(payload)
    again = post_stripe(payload)

    assert again.status_code == 200
    assert again.json()["duplicate"] is True
    assert again.json()["status"] == "processed" and again.json()["outcome"] == "draft_opened"
    assert WebhookEvent.objects.count() == 1
    assert InvoiceTransition.objects.count() == 1
    assert len(recovery.calls) == 1


def test_same_event_id_for_another_tenant_is_not_a_duplicate(stripe_tenant, other_tenant, post_stripe, recovery):
    from integrations.services import credential_set

    credential_set(tenant=other_tenant, provider="stripe", secret=STRIPE_SECRET)
    payload = load_fixture("stripe", "invoice_payment_failed")
    assert post_stripe(payload).json()["duplicate"] is False
    assert post_stripe(payload, tenant="globex").json()["duplicate"] is False
    assert WebhookEvent.objects.count() == 2


def test_unhandled_type_is_acknowledged_as_ignored(stripe_tenant, post_stripe, recovery):
    response = post_stripe(load_fixture("stripe", "invoice_payment_action_required"))

    assert response.status_code == 200
    event = WebhookEvent.objects.get()
    assert (event.status, event.outcome) == ("ignored", "unhandled_event_type")
    assert not Invoice.objects.exists() and not recovery.calls


def test_out_of_order_paid_then_late_failure_is_a_recorded_noop(stripe_tenant, post_stripe, recovery):
    post_stripe(load_fixture("stripe", "invoice_paid"))
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))

    paid, failed = WebhookEvent.objects.order_by("pk")
    assert (paid.status, paid.outcome) == ("processed", "paid_before_failure")
    assert (failed.status, failed.outcome) == ("processed", "noop_already_paid")
    assert PaidBeforeFailure.objects.count() == 1
    assert not Invoice.objects.exists() and not recovery.calls


def test_failure_then_paid_recovers(stripe_tenant, post_stripe, recovery):
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    post_stripe(load_fixture("stripe", "invoice_paid"))

    invoice = Invoice.objects.get()
    assert invoice.state == "recovered" and invoice.recovered_minor == 149900
    assert WebhookEvent.objects.order_by("pk").last().outcome == "recovered"


def test_subscription_deleted_churns_open_invoices(stripe_tenant, post_stripe, recovery):
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    post_stripe(load_fixture("stripe", "customer_subscription_deleted"))

    assert Invoice.objects.get().state == "churned"
    assert WebhookEvent.objects.order_by("pk").last().outcome == "churned"


def test_marked_uncollectible_exhausts(stripe_tenant, post_stripe, recovery):
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    post_stripe(load_fixture("stripe", "invoice_marked_uncollectible"))

    assert Invoice.objects.get().state == "exhausted"


def test_holdout_invoice_is_recorded_and_left_alone(settings, stripe_tenant, post_stripe, recovery):
    settings.PAYPILOT_HOLDOUT_PCT = 100
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))

    invoice = Invoice.objects.get()
    assert invoice.arm == "holdout" and invoice.state == "failed"
    assert WebhookEvent.objects.get().outcome == "recorded_holdout"
    assert not recovery.calls


def test_unknown_tenant_and_deactivated_tenant(stripe_tenant, post_stripe):
    from paypilot.services import tenant_set_status

    assert post_stripe(load_fixture("stripe", "invoice_paid"), tenant="nope").status_code == 404
    tenant_set_status(tenant=stripe_tenant, status="deactivated")
    response = post_stripe(load_fixture("stripe", "invoice_paid"))
    assert response.status_code == 410 and response.json()["error"] == "tenant_deactivated"
    assert not WebhookEvent.objects.exists()


def test_verified_body_that_is_not_an_event_is_refused(stripe_tenant, post_stripe):
    response = post_stripe(b'{"hello": "world"}')
    assert response.status_code == 400 and response.json()["error"] == "invalid_payload"
    assert not WebhookEvent.objects.exists()


def test_get_is_not_allowed(stripe_tenant, client):
    assert client.get("/t/acme/webhooks/stripe").status_code == 405


def test_unknown_provider_is_404(stripe_tenant, client):
    assert client.post("/t/acme/webhooks/paddle", data=b"{}", content_type="application/json").status_code == 404
