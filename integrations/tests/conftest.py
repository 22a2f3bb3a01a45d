"""Fixtures for integrations tests: payload fixtures, signed deliveries, configured tenants,
and the seams (the Stripe API, the recovery hand-off) replaced so nothing leaves the process."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from integrations import handoff, stripe_api
from integrations.providers import chargebee as chargebee_adapter
from integrations.providers import recharge as recharge_adapter
from integrations.providers import stripe as stripe_adapter
from integrations.services import credential_set
from paypilot.models import Tenant

FIXTURES = Path(__file__).resolve().parent / "fixtures"
STRIPE_SECRET = "whsec_test_5WbX5kEWLlfzsGNjH64I8lOOqUB6e8FH"
RECHARGE_SECRET = "rc_client_secret_b4d1e3f0a9"
CHARGEBEE_USER = "paypilot"
CHARGEBEE_PASSWORD = "cb-shared-secret-7Yq2"


def load_fixture(provider: str, name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / provider / f"{name}.json").read_text())


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


@pytest.fixture(autouse=True)
def _no_stripe_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Stripe API seam answers 'unavailable' unless a test installs a fake."""

    def refuse(**kwargs: Any) -> Any:
        raise stripe_api.StripeUnavailable("network disabled in tests")

    monkeypatch.setattr(stripe_api, "billing_portal_session_url", refuse)
    monkeypatch.setattr(stripe_api, "invoice_payment_error", lambda **kwargs: None)


@dataclass
class HandoffRecorder:
    calls: list[dict[str, Any]] = field(default_factory=list)
    fail_with: Exception | None = None

    def __call__(self, *, tenant: Tenant, requests: list[Any]) -> list[str]:
        """One recorded call per invoice handed off (batches are unpacked)."""
        if self.fail_with is not None:
            raise self.fail_with
        for request in requests:
            self.calls.append({"tenant": tenant, "invoice": request.invoice,
                               "provider_retry_at": request.provider_retry_at,
                               "provider_retry_source": request.provider_retry_source})
        return [handoff.OUTCOME_DRAFT_OPENED] * len(requests)


@pytest.fixture
def recovery(monkeypatch: pytest.MonkeyPatch) -> HandoffRecorder:
    """Replace the dunning/approvals hand-off with a recorder (tests of the inbox itself)."""
    recorder = HandoffRecorder()
    monkeypatch.setattr(handoff, "recovery_start", recorder)
    return recorder


@pytest.fixture
def stripe_tenant(tenant: Tenant) -> Tenant:
    credential_set(tenant=tenant, provider="stripe", secret=STRIPE_SECRET)
    return tenant


@pytest.fixture
def recharge_tenant(tenant: Tenant) -> Tenant:
    credential_set(tenant=tenant, provider="recharge", secret=RECHARGE_SECRET, default_currency="USD")
    return tenant


@pytest.fixture
def chargebee_url(tenant: Tenant) -> str:
    change = credential_set(tenant=tenant, provider="chargebee", secret=CHARGEBEE_PASSWORD, username=CHARGEBEE_USER)
    return f"/t/{tenant.slug}/webhooks/chargebee/{change.url_key}"


Post = Callable[..., Any]


@pytest.fixture
def post_stripe(client: Client) -> Post:
    def _post(payload: dict[str, Any] | bytes, *, tenant: str = "acme", secret: str = STRIPE_SECRET,
              timestamp: int | None = None, header: str | None = None) -> Any:
        body = payload if isinstance(payload, bytes) else body_of(payload)
        signature = header if header is not None else stripe_adapter.sign(body=body, secret=secret, timestamp=timestamp)
        return client.post(f"/t/{tenant}/webhooks/stripe", data=body, content_type="application/json",
                           headers={"Stripe-Signature": signature})

    return _post


@pytest.fixture
def post_recharge(client: Client) -> Post:
    def _post(payload: dict[str, Any] | bytes, *, tenant: str = "acme", secret: str = RECHARGE_SECRET,
              scheme: str = "timestamped", timestamp: int | None = None, topic: str = "") -> Any:
        body = payload if isinstance(payload, bytes) else body_of(payload)
        if scheme == "timestamped":
            headers = recharge_adapter.sign_timestamped(body=body, secret=secret, timestamp=timestamp)
        elif scheme == "legacy":
            headers = recharge_adapter.sign_legacy(body=body, secret=secret)
        else:
            headers = {}
        if topic:
            headers["X-Recharge-Topic"] = topic
        return client.post(f"/t/{tenant}/webhooks/recharge", data=body, content_type="application/json",
                           headers=headers)

    return _post


@pytest.fixture
def post_chargebee(client: Client, chargebee_url: str) -> Post:
    def _post(payload: dict[str, Any] | bytes, *, url: str | None = None, username: str = CHARGEBEE_USER,
              password: str = CHARGEBEE_PASSWORD, auth: bool = True) -> Any:
        body = payload if isinstance(payload, bytes) else body_of(payload)
        headers = {}
        if auth:
            headers["Authorization"] = chargebee_adapter.basic_auth_header(username=username, password=password)
        return client.post(url or chargebee_url, data=body, content_type="application/json", headers=headers)

    return _post
