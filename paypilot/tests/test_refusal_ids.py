"""Every refused request carries a refusal id (body, `X-Refusal-ID`) that finds its audit row."""

from __future__ import annotations

import json

import pytest
from django.db import DatabaseError
from django.test import override_settings

from decisions.models import DecisionRefusal
from decisions.tests.factories import DecisionRecordFactory
from paypilot import refusals
from paypilot.models import AuditEvent
from paypilot.refusals import REFUSED_EVENT, refusal_find

pytestmark = pytest.mark.django_db


def _refusal_id(response) -> str:  # type: ignore[no-untyped-def]
    refusal_id = response["X-Refusal-ID"]
    assert refusal_id.startswith("rf_") and len(refusal_id) == 23
    if response["Content-Type"].startswith("application/json"):
        assert response.json()["refusal_id"] == refusal_id
    return refusal_id


def test_401_carries_an_id_that_finds_the_auth_rejection(client):  # type: ignore[no-untyped-def]
    response = client.get("/tokens")
    assert response.status_code == 401
    event = refusal_find(refusal_id=_refusal_id(response))
    assert event is not None and event.event == "paypilot.auth.rejected"
    assert event.detail["reason"] == "missing_token"
    # One audit row per refusal: the auth rejection is it, the middleware adds none.
    assert AuditEvent.objects.filter(detail__refusal_id=event.detail["refusal_id"]).count() == 1


def test_403_wrong_role_carries_an_id(tenant, api_client_for):  # type: ignore[no-untyped-def]
    response = api_client_for(tenant, "viewer").get("/metrics")
    assert response.status_code == 403
    event = refusal_find(refusal_id=_refusal_id(response))
    assert (event.event, event.tenant, event.detail["reason"]) == ("paypilot.auth.rejected", tenant,
                                                                   "forbidden_role")


def test_outcome_422_carries_an_id_that_finds_its_row(tenant, api_client_for):  # type: ignore[no-untyped-def]
    DecisionRecordFactory(tenant=tenant, invoice_ref="in_out_1")
    response = api_client_for(tenant).post("/decisions/in_out_1/outcome", {"outcome": "nonsense"}, format="json")
    assert response.status_code == 422
    event = refusal_find(refusal_id=_refusal_id(response))
    assert event.event == REFUSED_EVENT and event.tenant == tenant
    assert event.detail["status"] == 422
    assert event.detail["route"] == "decisions/<str:invoice_id>/outcome"
    assert event.detail["reason"] == response.json()["reason"]
    assert event.actor.startswith("token:")
    assert "in_out_1" not in json.dumps(event.detail)  # the route, never the path's values


@pytest.mark.parametrize(("raw", "status"), [
    ("{not json", 400),
    (json.dumps({"invoice_id": "in_1", "failure_code": "x", "pad": "y" * 5000}), 413),
    (json.dumps({"invoice_id": "in_1", "failure_code": "card_expired", "attempt": 99}), 422),
])
def test_decide_refusal_row_and_audit_share_the_callers_id(tenant, api_client_for, raw, status):  # type: ignore[no-untyped-def]
    response = api_client_for(tenant).post("/decide", raw, content_type="application/json")
    assert response.status_code == status
    refusal_id = _refusal_id(response)
    assert DecisionRefusal.objects.get(refusal_id=refusal_id).tenant == tenant
    assert refusal_find(refusal_id=refusal_id).detail["status"] == status


def test_unknown_route_404_gets_an_id_and_a_row(client):  # type: ignore[no-untyped-def]
    response = client.get("/no/such/place/in_secret_1")
    assert response.status_code == 404
    event = refusal_find(refusal_id=_refusal_id(response))
    assert (event.event, event.tenant, event.actor) == (REFUSED_EVENT, None, "anonymous")
    assert event.detail["route"] == "unmatched"
    assert "in_secret_1" not in json.dumps(event.detail)


@pytest.mark.urls("paypilot.tests.refusal_urls")
@pytest.mark.parametrize(("path", "status", "reason"), [
    ("/t/gone", 410, "tenant_deactivated"),
    ("/t/unsupported", 415, "unsupported_media_type"),
    ("/t/html-forbidden", 403, ""),
])
def test_refusals_added_elsewhere_get_an_id_unchanged(client, path, status, reason):  # type: ignore[no-untyped-def]
    response = client.get(path)
    assert response.status_code == status
    event = refusal_find(refusal_id=_refusal_id(response))
    assert (event.detail["status"], event.detail["reason"]) == (status, reason)
    if status == 403:
        assert response.content == b"<h1>Forbidden</h1>"  # a non-JSON body is left as it is
    else:
        body = response.json()
        assert int(response["Content-Length"]) == len(response.content)
        assert body["error"] == reason


@pytest.mark.urls("paypilot.tests.refusal_urls")
@pytest.mark.parametrize(("path", "status"), [("/t/ok", 200), ("/t/broken", 500), ("/health", 200)])
def test_answers_that_are_not_refusals_are_untouched(client, path, status):  # type: ignore[no-untyped-def]
    before = AuditEvent.objects.count()
    response = client.get(path)
    assert response.status_code == status
    assert "X-Refusal-ID" not in response
    assert "refusal_id" not in response.json()
    assert AuditEvent.objects.count() == before


@override_settings(PAYPILOT_RATE_LIMIT_PER_TOKEN=0, PAYPILOT_RATE_LIMIT_PER_IP=1)
def test_429_carries_an_id_but_costs_no_database_write(client, django_assert_num_queries):  # type: ignore[no-untyped-def]
    assert client.get("/tokens", REMOTE_ADDR="198.51.100.9").status_code == 401
    with django_assert_num_queries(0):
        limited = client.get("/tokens", REMOTE_ADDR="198.51.100.9")
    assert limited.status_code == 429
    refusal_id = _refusal_id(limited)
    assert refusal_find(refusal_id=refusal_id) is None


def test_each_refusal_gets_its_own_id(client):  # type: ignore[no-untyped-def]
    ids = {client.get("/tokens")["X-Refusal-ID"] for _ in range(5)}
    assert len(ids) == 5


def test_the_access_log_line_names_the_refusal(client, caplog):  # type: ignore[no-untyped-def]
    with caplog.at_level("INFO", logger="paypilot.access"):
        response = client.get("/tokens")
    line = json.loads([r for r in caplog.records if r.name == "paypilot.access"][-1].getMessage())
    assert line["refusal_id"] == response["X-Refusal-ID"]


def test_an_audit_outage_still_answers_with_the_id(client, monkeypatch):  # type: ignore[no-untyped-def]
    def down(**kwargs):  # type: ignore[no-untyped-def]
        raise DatabaseError("audit table unavailable")

    monkeypatch.setattr(refusals, "audit_record", down)
    response = client.get("/no/such/place")
    assert response.status_code == 404
    assert response["X-Refusal-ID"].startswith("rf_")


@override_settings(PAYPILOT_MAX_BODY_BYTES=4096)
def test_the_outermost_413_gets_an_id_and_a_row(client):  # type: ignore[no-untyped-def]
    # Answered by the request-context middleware before any other middleware or view runs.
    response = client.post("/payment-failed", "x" * 5000, content_type="application/json")
    assert response.status_code == 413
    event = refusal_find(refusal_id=_refusal_id(response))
    assert (event.event, event.detail["status"], event.detail["reason"]) == (REFUSED_EVENT, 413, "body_too_large")
