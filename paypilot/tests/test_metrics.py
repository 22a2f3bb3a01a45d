"""GET /metrics: platform admins see every figure, tenant admins only their tenant's."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from integrations.tests.factories import WebhookEventFactory
from ledger.models import Invoice
from ledger.tests.factories import InvoiceFactory

pytestmark = pytest.mark.django_db


def _gauge(text: str, name: str, label: str, value: str) -> float | None:
    match = re.search(rf'^{name}{{{label}="{value}"}} ([0-9.e+]+)$', text, re.MULTILINE)
    return float(match.group(1)) if match else None


@pytest.fixture
def two_tenants(tenant, other_tenant):  # type: ignore[no-untyped-def]
    InvoiceFactory.create_batch(4, tenant=tenant)
    InvoiceFactory.create_batch(3, tenant=other_tenant)
    InvoiceFactory(tenant=other_tenant, state=Invoice.State.RECOVERED)
    WebhookEventFactory.create_batch(2, tenant=tenant)
    WebhookEventFactory.create_batch(5, tenant=other_tenant)
    return tenant, other_tenant


def test_tenant_admin_sees_only_their_tenants_figures(two_tenants, api_client_for):
    tenant, _ = two_tenants
    APIClient().get("/health")  # a request counted by the process-wide counters

    response = api_client_for(tenant, "tenant_admin").get("/metrics")

    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert _gauge(text, "paypilot_invoices", "state", "failed") == 4.0
    assert _gauge(text, "paypilot_invoices", "state", "recovered") is None  # the other tenant's
    assert _gauge(text, "paypilot_webhook_events", "status", "received") == 2.0
    # Process-wide counters mix every tenant's traffic: not shown to a tenant.
    assert "paypilot_http_requests_total" not in text
    assert "paypilot_http_request_seconds" not in text


def test_platform_admin_sees_every_tenant_and_the_http_counters(two_tenants, api_client_for):
    tenant, _ = two_tenants
    APIClient().get("/health")

    text = api_client_for(tenant, "platform_admin").get("/metrics").content.decode()

    assert _gauge(text, "paypilot_invoices", "state", "failed") == 7.0
    assert _gauge(text, "paypilot_invoices", "state", "recovered") == 1.0
    assert _gauge(text, "paypilot_webhook_events", "status", "received") == 7.0
    assert 'paypilot_http_requests_total{method="GET",route="health",status="200"}' in text


@pytest.mark.parametrize("role", ["viewer", "approver", "integrator"])
def test_other_roles_are_refused(tenant, api_client_for, role):
    response = api_client_for(tenant, role).get("/metrics")
    assert response.status_code == 403 and response.json()["error"] == "forbidden_role"
