"""POST /decisions/<invoice_id>/outcome and GET /decisions/outcomes/summary."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.db import connections

from decisions.models import DecisionOutcome
from decisions.services import decision_outcome_report
from decisions.tests.factories import DecisionOutcomeFactory, DecisionRecordFactory

pytestmark = pytest.mark.django_db


def report(client, invoice, body):  # type: ignore[no-untyped-def]
    return client.post(f"/decisions/{invoice}/outcome", body, format="json")


def test_report_then_replay_answers_the_first_result(tenant, api_client_for):  # type: ignore[no-untyped-def]
    DecisionRecordFactory(tenant=tenant, invoice_ref="in_1")
    client = api_client_for(tenant)
    first = report(client, "in_1", {"outcome": "paid", "report_key": "rk-1"})
    assert first.status_code == 201
    assert first.json()["replayed"] is False and first.json()["outcome"] == "paid"
    replay = report(client, "in_1", {"outcome": "not_paid", "report_key": "rk-1"})
    assert replay.status_code == 200
    assert replay.json()["replayed"] is True and replay.json()["outcome"] == "paid"
    assert replay.json()["outcome_id"] == first.json()["outcome_id"]
    assert DecisionOutcome.objects.count() == 1


def test_unknown_cannot_be_reported(tenant, api_client_for):  # type: ignore[no-untyped-def]
    DecisionRecordFactory(tenant=tenant, invoice_ref="in_1")
    response = report(api_client_for(tenant), "in_1", {"outcome": "unknown", "report_key": "rk-2"})
    assert response.status_code == 422
    assert response.json()["field"] == "outcome" and "unknown cannot be reported" in response.json()["constraint"]
    assert DecisionOutcome.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [({"outcome": "paid"}, "report_key"), ({"report_key": "k"}, "outcome"),
     ({"outcome": "paid", "report_key": "k", "tenant": "x"}, "tenant"),
     ({"outcome": "paid", "report_key": "bad key with spaces"}, "report_key")],
)
def test_bad_bodies_are_422(tenant, api_client_for, body, field):  # type: ignore[no-untyped-def]
    DecisionRecordFactory(tenant=tenant, invoice_ref="in_1")
    response = report(api_client_for(tenant), "in_1", body)
    assert response.status_code == 422 and response.json()["field"] == field


def test_undecided_or_other_tenants_invoice_is_404(tenant, other_tenant, api_client_for):  # type: ignore[no-untyped-def]
    DecisionRecordFactory(tenant=other_tenant, invoice_ref="in_theirs")
    client = api_client_for(tenant)
    for invoice in ("in_none", "in_theirs"):
        response = report(client, invoice, {"outcome": "paid", "report_key": f"k-{invoice}"})
        assert response.status_code == 404
    assert DecisionOutcome.objects.count() == 0


def test_viewer_cannot_report(tenant, api_client_for):  # type: ignore[no-untyped-def]
    DecisionRecordFactory(tenant=tenant, invoice_ref="in_1")
    assert report(api_client_for(tenant, "viewer"), "in_1", {"outcome": "paid", "report_key": "k"}).status_code == 403


def test_same_report_key_in_two_tenants_is_two_rows(tenant, other_tenant):  # type: ignore[no-untyped-def]
    decision_outcome_report(tenant=tenant, invoice_ref="in_1", outcome="paid", report_key="same")
    decision_outcome_report(tenant=other_tenant, invoice_ref="in_1", outcome="paid", report_key="same")
    assert DecisionOutcome.objects.count() == 2


def test_summary_counts_per_invoice(tenant, other_tenant, api_client_for):  # type: ignore[no-untyped-def]
    for ref in ("a", "b", "c", "d"):
        DecisionRecordFactory(tenant=tenant, invoice_ref=ref)
    DecisionRecordFactory(tenant=tenant, invoice_ref="a")  # decided twice, still one invoice
    DecisionOutcomeFactory(tenant=tenant, invoice_ref="a", outcome="paid")
    DecisionOutcomeFactory(tenant=tenant, invoice_ref="b", outcome="paid")
    DecisionOutcomeFactory(tenant=tenant, invoice_ref="c", outcome="paid")
    DecisionOutcomeFactory(tenant=tenant, invoice_ref="c", outcome="not_paid")  # latest wins
    DecisionRecordFactory(tenant=other_tenant, invoice_ref="z")
    DecisionOutcomeFactory(tenant=other_tenant, invoice_ref="z", outcome="paid")
    body = api_client_for(tenant, "viewer").get("/decisions/outcomes/summary").json()
    assert (body["paid"], body["not_paid"], body["unknown"]) == (2, 1, 1)
    assert body["decided_invoices"] == 4 and body["reports"] == 4 and body["tenant"] == tenant.slug


# Decided before any database is touched: a transactional test flushes tables at teardown,
# which SQLite does with DELETE, and the append-only triggers refuse that.
ON_POSTGRES = "postgresql" in settings.DATABASES["default"]["ENGINE"]


@pytest.mark.skipif(not ON_POSTGRES, reason="concurrent writers need PostgreSQL (DATABASE_URL=postgres://...)")
@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_identical_reports_store_one_row(tenant):  # type: ignore[no-untyped-def]
    DecisionRecordFactory(tenant=tenant, invoice_ref="in_c")
    barrier = threading.Barrier(10)
    results: list[int] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait(timeout=10)
            result = decision_outcome_report(tenant=tenant, invoice_ref="in_c", outcome="paid", report_key="rk-c")
            results.append(result.outcome.pk)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert DecisionOutcome.objects.filter(tenant=tenant, report_key="rk-c").count() == 1
    assert len(results) == 10 and len(set(results)) == 1
