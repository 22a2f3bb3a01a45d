"""GET /decisions/<invoice_id>: this tenant's decisions, newest first, at most 50."""

from __future__ import annotations

import pytest

from decisions.tests.factories import DecisionOutcomeFactory, DecisionRecordFactory

pytestmark = pytest.mark.django_db


def test_newest_first_and_capped_at_50(tenant, api_client_for):  # type: ignore[no-untyped-def]
    client = api_client_for(tenant, "viewer")
    for _ in range(55):
        DecisionRecordFactory(tenant=tenant, invoice_ref="in_9")
    response = client.get("/decisions/in_9")
    assert response.status_code == 200
    body = response.json()
    assert body["invoice_id"] == "in_9" and body["tenant"] == tenant.slug and body["outcome"] == "unknown"
    ids = [d["audit_id"] for d in body["decisions"]]
    assert len(ids) == 50 and ids == sorted(ids, reverse=True)


def test_history_matches_what_decide_returned(tenant, api_client_for):  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    decided = client.post("/decide", {"invoice_id": "in_7", "failure_code": "card_expired", "attempt": 2},
                          format="json").json()
    listed = client.get("/decisions/in_7").json()["decisions"][0]
    assert {k: v for k, v in listed.items() if k != "source"} == decided
    assert listed["source"] == "api"


def test_latest_outcome_is_shown(tenant, api_client_for):  # type: ignore[no-untyped-def]
    DecisionRecordFactory(tenant=tenant, invoice_ref="in_3")
    DecisionOutcomeFactory(tenant=tenant, invoice_ref="in_3", outcome="not_paid")
    DecisionOutcomeFactory(tenant=tenant, invoice_ref="in_3", outcome="paid")
    assert api_client_for(tenant).get("/decisions/in_3").json()["outcome"] == "paid"


@pytest.mark.parametrize("invoice", ["in_missing", "bad!id"])
def test_none_is_404(tenant, api_client_for, invoice):  # type: ignore[no-untyped-def]
    response = api_client_for(tenant).get(f"/decisions/{invoice}")
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_other_tenants_invoice_is_404_not_empty(tenant, other_tenant, api_client_for):  # type: ignore[no-untyped-def]
    from paypilot.models import AuditEvent

    DecisionRecordFactory(tenant=other_tenant, invoice_ref="in_theirs")
    client = api_client_for(tenant)
    missing = client.get("/decisions/in_nobody")
    response = client.get("/decisions/in_theirs")
    assert response.status_code == missing.status_code == 404
    # Identical but for each answer's own refusal id (paypilot.refusals).
    theirs_body, missing_body = response.json(), missing.json()
    assert theirs_body.pop("refusal_id") != missing_body.pop("refusal_id")
    assert theirs_body == missing_body
    # The cross-tenant attempt is audited as one; the plain miss only as a refused request.
    rejected = AuditEvent.objects.filter(event="paypilot.auth.rejected", tenant=tenant)
    assert [e.detail["reason"] for e in rejected] == ["cross_tenant"]


def test_requires_a_token(db):  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    assert APIClient().get("/decisions/in_1").status_code == 401
