"""GET /report (JSON, token) and GET /report/sample (public, invented data)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ledger.selectors import report_sample
from ledger.tests.factories import InvoiceFactory
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("role", ["viewer", "approver", "integrator", "tenant_admin"])
def test_report_json_for_every_role(tenant, api_client_for, role) -> None:  # type: ignore[no-untyped-def]
    InvoiceFactory(tenant=tenant, amount_minor=1234, currency="KWD")
    response = api_client_for(tenant, role).get("/report")
    assert response.status_code == 200
    body = response.json()
    assert body["tenant"] == "acme" and body["sample"] is False
    assert body["totals"]["amounts"]["KWD"]["failed"] == "1.234"
    assert set(body["arms"]) == {"holdout", "treated", "untouched"}
    assert body["attribution"]["lift_pp"] is None


def test_report_never_shows_another_tenant(tenant, other_tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    InvoiceFactory(tenant=other_tenant, amount_minor=777)
    body = api_client_for(tenant, "viewer").get("/report").json()
    assert body["totals"]["count"] == 0 and body["totals"]["amounts"] == {}


def test_report_requires_a_token(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/report")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert AuditEvent.objects.filter(event="paypilot.auth.rejected").exists()


def test_suspended_tenant_is_refused(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant, "viewer")
    tenant.status = "suspended"
    tenant.save()
    assert client.get("/report").status_code == 403


def test_sample_page_is_public_labelled_and_reads_no_ledger(client, tenant) -> None:  # type: ignore[no-untyped-def]
    InvoiceFactory(tenant=tenant)
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/report/sample")
    # Middleware may open a transaction (savepoints on PostgreSQL); no query reads the ledger.
    assert not [q["sql"] for q in queries.captured_queries if "ledger_" in q["sql"]]
    assert response.status_code == 200
    html = response.content.decode()
    assert "Sample data" in html and "<svg" in html
    assert "Recovery rate per arm" in html and "n=" in html


def test_sample_json_is_fixed_and_marked(client) -> None:  # type: ignore[no-untyped-def]
    first = client.get("/report/sample?format=json").json()
    second = client.get("/report/sample?format=json").json()
    assert first == second == report_sample()
    assert first["sample"] is True and first["tenant"] is None
    assert "Sample data" in first["label"]
    assert first["totals"]["count"] == 124
    assert first["attribution"]["baseline"] == "randomised_holdout"
    assert first["attribution"]["lift_pp"] is not None  # 40 holdout, 72 treated
