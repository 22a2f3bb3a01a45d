"""GET /r/<token>: records the click, mints the destination on click, allowlisted only."""

from __future__ import annotations

import pytest
from django.core import signing

from integrations import stripe_api
from integrations.services import credential_set, link_settings_set
from ledger.links import LINK_SALT, recovery_link_token
from ledger.services import invoice_mark_messaged, invoice_record_failure

pytestmark = pytest.mark.django_db

HOSTED = "https://invoice.stripe.com/i/acct_1Test/test_YWNtZQ"


@pytest.fixture
def invoice(tenant):
    result = invoice_record_failure(
        tenant=tenant, provider="stripe", external_invoice_id="in_link1", amount_minor=4900, currency="USD",
        failure_code="card_expired", provider_customer_id="cus_link1", hosted_invoice_url=HOSTED,
    )
    invoice_mark_messaged(invoice=result.invoice, event_ref="send:1")
    return result.invoice


def test_click_records_clicked_and_redirects_to_hosted_invoice(client, invoice):
    response = client.get(f"/r/{recovery_link_token(invoice=invoice)}")

    assert response.status_code == 302 and response["Location"] == HOSTED
    assert response["Cache-Control"] == "no-store"
    invoice.refresh_from_db()
    assert invoice.state == "clicked"


def test_portal_session_minted_at_click_time_when_tenant_has_a_restricted_key(client, invoice, tenant, monkeypatch):
    credential_set(tenant=tenant, provider="stripe", secret="whsec_x", api_key="rk_test_portal")
    calls = []

    def portal(**kwargs):
        calls.append(kwargs)
        return f"https://billing.stripe.com/p/session/test_{len(calls)}"

    monkeypatch.setattr(stripe_api, "billing_portal_session_url", portal)
    token = recovery_link_token(invoice=invoice)
    first = client.get(f"/r/{token}")
    second = client.get(f"/r/{token}")

    assert first["Location"] == "https://billing.stripe.com/p/session/test_1"
    assert second["Location"] == "https://billing.stripe.com/p/session/test_2"  # fresh every click
    assert calls[0] == {"api_key": "rk_test_portal", "customer": "cus_link1", "return_url": HOSTED}


def test_stripe_outage_falls_back_to_hosted_invoice(client, invoice, tenant):
    credential_set(tenant=tenant, provider="stripe", secret="whsec_x", api_key="rk_test_portal")
    response = client.get(f"/r/{recovery_link_token(invoice=invoice)}")  # seam raises in tests
    assert response["Location"] == HOSTED


def test_candidates_off_the_allowlist_are_skipped(client, invoice, tenant, settings, monkeypatch):
    credential_set(tenant=tenant, provider="stripe", secret="whsec_x", api_key="rk_test_portal")
    monkeypatch.setattr(stripe_api, "billing_portal_session_url", lambda **kw: "https://evil.example/phish")
    link_settings_set(tenant=tenant, update_url="https://pay.stripe.com/update/acme")
    settings.PAYPILOT_LINK_ALLOWED_HOSTS = ["pay.stripe.com"]

    response = client.get(f"/r/{recovery_link_token(invoice=invoice)}")
    assert response["Location"] == "https://pay.stripe.com/update/acme"

    from paypilot.models import AuditEvent

    sources = {a.detail["source"] for a in AuditEvent.objects.filter(event="integrations.link.refused")}
    assert sources == {"stripe_billing_portal", "hosted_invoice_url"}


def test_no_allowed_destination_is_a_plain_page(client, invoice, settings):
    settings.PAYPILOT_LINK_ALLOWED_HOSTS = []
    response = client.get(f"/r/{recovery_link_token(invoice=invoice)}")
    assert response.status_code == 200 and "Location" not in response
    assert b"could not open the payment page" in response.content


@pytest.mark.parametrize("make", [
    lambda inv: recovery_link_token(invoice=inv)[:-2] + "xx",  # tampered
    lambda inv: signing.dumps(inv.pk, salt="another-salt"),  # forged with the wrong salt
    lambda inv: "not-a-token",
])
def test_tampered_or_forged_token_gets_a_plain_page(client, invoice, make):
    response = client.get(f"/r/{make(invoice)}")
    assert response.status_code == 404 and "Location" not in response
    assert b"no longer valid" in response.content
    invoice.refresh_from_db()
    assert invoice.state == "messaged"


def test_expired_token_gets_a_plain_page(client, invoice, settings):
    token = signing.dumps(invoice.pk, salt=LINK_SALT)
    settings.PAYPILOT_LINK_TTL_DAYS = -1
    response = client.get(f"/r/{token}")
    assert response.status_code == 404 and "Location" not in response


def test_never_messaged_invoice_still_gets_its_page(client, tenant):
    result = invoice_record_failure(
        tenant=tenant, provider="stripe", external_invoice_id="in_link2", amount_minor=100, currency="USD",
        failure_code="card_expired", hosted_invoice_url=HOSTED,
    )
    response = client.get(f"/r/{recovery_link_token(invoice=result.invoice)}")
    assert response.status_code == 302
    result.invoice.refresh_from_db()
    assert result.invoice.state == "failed"
