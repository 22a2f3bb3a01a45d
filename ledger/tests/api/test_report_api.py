"""GET /report (JSON, HTML, CSV by negotiation; token), GET /report.csv and GET /report/sample
(public, invented data, the same code)."""

from __future__ import annotations

import csv
import io

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
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["tenant"] == "acme" and body["sample"] is False
    assert body["totals"]["amounts"]["KWD"]["failed"] == "1.234"
    assert set(body["arms"]) == {"holdout", "treatment", "treated", "untouched"}
    assert body["attribution"]["lift_pp"] is None and body["attribution"]["lift_ci95_pp"] is None
    assert body["maturing"]["count"] == 1 and body["window_days"] == 30


def test_report_negotiates_csv_and_html(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    InvoiceFactory(tenant=tenant, amount_minor=1500, currency="JPY")
    client = api_client_for(tenant, "viewer")
    as_csv = client.get("/report", HTTP_ACCEPT="text/csv")
    assert as_csv.status_code == 200 and as_csv["Content-Type"].startswith("text/csv")
    assert 'filename="recovery-report.csv"' in as_csv["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(as_csv.content.decode())))
    assert {r["section"] for r in rows} >= {"arm", "attribution", "cohort"}
    as_html = client.get("/report", HTTP_ACCEPT="text/html")
    assert as_html.status_code == 200 and as_html["Content-Type"].startswith("text/html")
    html = as_html.content.decode()
    assert "Recovery report: acme" in html and "<svg" in html and "withheld" in html
    assert client.get("/report?format=csv")["Content-Type"].startswith("text/csv")
    dot_csv = client.get("/report.csv", HTTP_ACCEPT="application/json")  # the suffix wins
    assert dot_csv.status_code == 200 and dot_csv["Content-Type"].startswith("text/csv")
    assert dot_csv.content == as_csv.content or dot_csv.content.startswith(b"section,")


def test_errors_stay_json_whatever_was_asked(client) -> None:  # type: ignore[no-untyped-def]
    for path, accept in (("/report", "text/csv"), ("/report", "text/html"), ("/report.csv", "text/csv")):
        response = client.get(path, HTTP_ACCEPT=accept)
        assert response.status_code == 401, path
        assert response.json()["error"] == "unauthorized"


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
    assert "Recovery rate within the window per arm" in html and "n=" in html
    assert "Lift per weekly cohort" in html and "95% interval" in html


def test_sample_json_is_fixed_marked_and_uses_the_report_code(client) -> None:  # type: ignore[no-untyped-def]
    first = client.get("/report/sample?format=json").json()
    second = client.get("/report/sample?format=json").json()
    assert first == second == report_sample()
    assert first["sample"] is True and first["tenant"] is None
    assert "Sample data" in first["label"]
    assert first["totals"]["count"] == 2400
    a = first["attribution"]
    assert a["baseline"] == "randomised_holdout" and a["method"] == "newcombe_hybrid_score"
    assert a["lift_ci95_pp"][0] < a["lift_pp"] < a["lift_ci95_pp"][1]
    assert first["maturing"]["count"] > 0  # the sample's last weeks are still maturing
    assert set(a["recovered_attributable"]) == {"USD", "EUR", "JPY"}
    sample_csv = client.get("/report/sample?format=csv")
    assert sample_csv["Content-Type"].startswith("text/csv") and b"cohort," in sample_csv.content


def test_an_unknown_format_is_a_422_naming_the_parameter(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    response = api_client_for(tenant, "viewer").get("/report?format=xml")
    assert response.status_code == 422
    body = response.json()
    assert (body["error"], body["field"]) == ("invalid_input", "format")
    assert "xml" not in response.content.decode()  # the value sent is never echoed
