"""GET /recon/review: the stored run byte for byte, viewer and up, tenant-scoped, CSV neutralised."""

from __future__ import annotations

import csv
import io
from datetime import date

import pytest

from reconciliation.services.runs import run_create
from reconciliation.tests.factories import load, order

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(tenant):
    load(tenant, "orders", [order("M-1", 3000), order('=HYPERLINK("http://evil.example/","x")', 100)])
    run, _ = run_create(tenant=tenant, as_of=date(2026, 11, 16), actor="test")
    return run


@pytest.mark.parametrize("role", ["viewer", "approver", "integrator", "tenant_admin"])
def test_every_role_reads_the_stored_json_byte_for_byte(api_client_for, tenant, stored, role) -> None:
    response = api_client_for(tenant, role).get("/recon/review", {"as_of": "2026-11-16"})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response.content == stored.result_json.encode()
    assert response["X-Recon-Run"] == str(stored.pk) and response["X-Recon-Input-Digest"] == stored.input_digest


def test_without_as_of_the_newest_run(api_client_for, tenant, stored) -> None:
    assert api_client_for(tenant, "viewer").get("/recon/review").content == stored.result_json.encode()


def test_clear_json_errors(api_client_for, tenant, stored) -> None:
    client = api_client_for(tenant, "viewer")
    bad = client.get("/recon/review", {"as_of": "16/11/2026"})
    assert bad.status_code == 422 and bad.json()["error"] == "invalid_as_of" and bad.json()["field"] == "as_of"
    assert client.get("/recon/review", {"export": "xlsx"}).json()["error"] == "invalid_export"
    missing = client.get("/recon/review", {"as_of": "2026-01-01"})
    assert missing.status_code == 404 and missing.json()["error"] == "run_not_found"
    from rest_framework.test import APIClient

    assert APIClient().get("/recon/review").status_code == 401


def test_another_tenant_never_sees_the_run(api_client_for, other_tenant, stored) -> None:
    response = api_client_for(other_tenant, "tenant_admin").get("/recon/review", {"as_of": "2026-11-16"})
    assert response.status_code == 404 and response.json()["error"] == "run_not_found"


def test_csv_export_neutralises_formula_cells(api_client_for, tenant, stored) -> None:
    response = api_client_for(tenant, "viewer").get("/recon/review", {"export": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    cells = [c for row in rows[1:] for c in row]
    assert any("HYPERLINK" in c for c in cells)
    assert not any(c.startswith(("=", "+", "@")) for c in cells)
    assert "'=HYPERLINK(\"http://evil.example/\",\"x\")" in cells
