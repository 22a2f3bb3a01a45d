"""The webhook routes are lean (paypilot.lean_routes): no session, user or messages for a
signed delivery, yet the security headers, refusal ids and the failure rate limit stay."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import HttpRequest
from django.test import Client

from integrations import views
from integrations.models import WebhookEvent
from integrations.providers.stripe import sign
from integrations.tests.conftest import STRIPE_SECRET, body_of, load_fixture
from paypilot.models import Tenant
from paypilot.ratelimit import counters_clear

pytestmark = pytest.mark.django_db


def _post(client: Client, event_id: str, *, signed: bool = True, **extra: Any) -> Any:
    payload = load_fixture("stripe", "invoice_payment_failed")
    payload["id"] = event_id
    body = body_of(payload)
    headers = {"Stripe-Signature": sign(body=body, secret=STRIPE_SECRET if signed else "whsec_not_the_tenants")}
    return client.post("/t/acme/webhooks/stripe", data=body, content_type="application/json", headers=headers,
                       **extra)


def test_a_signed_delivery_gets_no_session_or_user_but_every_security_header(
    stripe_tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[bool, bool, bool]] = []
    address = views.client_address

    def spy(request: HttpRequest) -> str:
        seen.append((hasattr(request, "session"), hasattr(request, "user"), hasattr(request, "_messages")))
        return address(request)

    monkeypatch.setattr(views, "client_address", spy)
    client = Client(enforce_csrf_checks=True)
    client.cookies["sessionid"] = "not-a-session"  # a cookie sent along changes nothing
    response = _post(client, "evt_lean_route", HTTP_X_REQUEST_ID="lean-webhook-01")

    assert response.status_code == 200 and response.json()["duplicate"] is False
    assert seen == [(False, False, False)]
    assert response["X-Request-ID"] == "lean-webhook-01"
    assert (response["X-Content-Type-Options"], response["X-Frame-Options"]) == ("nosniff", "DENY")
    assert response["Referrer-Policy"] == "same-origin"
    assert "default-src 'self'" in response["Content-Security-Policy"]
    assert "Set-Cookie" not in response.headers
    assert WebhookEvent.objects.filter(event_key="evt_lean_route").count() == 1


def test_refusals_and_the_failure_limit_still_apply_on_the_lean_route(stripe_tenant: Tenant, settings: Any) -> None:
    counters_clear()
    settings.PAYPILOT_WEBHOOK_FAILURES_PER_IP = 2
    settings.PAYPILOT_WEBHOOK_FAILURES_PER_TENANT = 0
    client = Client()

    answers = [_post(client, f"evt_forged_{n}", signed=False, REMOTE_ADDR="192.0.2.77") for n in range(3)]

    assert [a.status_code for a in answers] == [400, 400, 429]
    assert answers[0].json()["error"] == "signature_mismatch"
    assert answers[0]["X-Refusal-ID"] and answers[2]["X-Refusal-ID"]  # reason-coded refusals keep their ids
    assert answers[2].json()["error"] == "rate_limited" and int(answers[2]["Retry-After"]) > 0
    assert answers[2]["X-Content-Type-Options"] == "nosniff"
    assert not WebhookEvent.objects.exists()
