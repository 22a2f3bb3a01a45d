"""POST /decide: the contract, status by status."""

from __future__ import annotations

import json
import re
from unittest import mock

import pytest
from django.db import DatabaseError, connection

from decisions.models import DecisionRecord, DecisionRefusal
from decisions.rules import RULES_VERSION

pytestmark = pytest.mark.django_db


def post(client, body, **extra):  # type: ignore[no-untyped-def]
    raw = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post("/decide", data=raw, content_type="application/json", **extra)


@pytest.fixture
def client(tenant, api_client_for):  # type: ignore[no-untyped-def]
    return api_client_for(tenant, "integrator")


def test_decision_answer_shape_and_audit_row(client, tenant):  # type: ignore[no-untyped-def]
    response = post(client, {"invoice_id": "in_1001", "failure_code": "insufficient_funds", "attempt": 3})
    assert response.status_code == 200
    body = response.json()
    assert body["invoice_id"] == "in_1001"
    assert body["rule_fired"] == "insufficient_funds" and body["matched"] is True
    assert body["input"] == {"failure_code": "insufficient_funds", "attempt": 3, "prior_failures": 0,
                             "card_brand": None, "network_advice_code": None, "network_decline_code": None}
    assert body["network_rules"] == []
    assert body["churn_risk"] == "high"
    assert body["strategy"]["action"] == "wait_and_retry"
    assert body["strategy"]["retry_in_days"] == 2 and body["strategy"]["escalated"] is True
    assert body["strategy"]["offer"]
    assert body["schedule"]["source"] == "paypilot_suggestion" and body["schedule"]["retry_at"].endswith("Z")
    assert body["impact"]["recovery_likelihood"] == 0.55
    assert body["rules_version"] == RULES_VERSION
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", body["decided_at"])
    assert body["tenant"] == tenant.slug
    record = DecisionRecord.objects.get(pk=body["audit_id"])
    assert record.tenant == tenant and record.invoice_ref == "in_1001" and record.source == "api"
    assert record.rule_fired == "insufficient_funds" and record.rules_version == RULES_VERSION


def test_defaults_and_unknown_code_fires_default(client):  # type: ignore[no-untyped-def]
    body = post(client, {"invoice_id": "in_1", "failure_code": "something_new"}).json()
    assert body["rule_fired"] == "default" and body["matched"] is False
    assert body["input"]["attempt"] == 1 and body["input"]["prior_failures"] == 0
    assert body["churn_risk"] == "low"


def test_no_retry_code_has_no_retry_time(client):  # type: ignore[no-untyped-def]
    body = post(client, {"invoice_id": "in_2", "failure_code": "retries_exhausted"}).json()
    assert body["schedule"] == {"retry_at": None, "source": "none"}
    assert body["strategy"]["retry_in_days"] == 0


def _refusal(response, status: int, code: str) -> DecisionRefusal:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == code
    refusal = DecisionRefusal.objects.get(refusal_id=body["refusal_id"])
    return refusal


def test_body_too_large_is_413_with_refusal(client, tenant):  # type: ignore[no-untyped-def]
    raw = json.dumps({"invoice_id": "in_1", "failure_code": "card_expired", "pad": "x" * 5000})
    refusal = _refusal(post(client, raw), 413, "body_too_large")
    assert (refusal.gate, refusal.reason, refusal.tenant) == ("size", "body_too_large", tenant)
    assert DecisionRecord.objects.count() == 0


def test_exactly_4096_bytes_is_read(client):  # type: ignore[no-untyped-def]
    base = {"invoice_id": "in_1", "failure_code": "card_expired"}
    raw = json.dumps(base)
    raw = raw[:-1] + " " * (4096 - len(raw)) + "}"
    assert len(raw) == 4096
    assert post(client, raw).status_code == 200


@pytest.mark.parametrize(("raw", "code"), [(b"not json", "invalid_body"), (b"[1, 2]", "invalid_body"),
                                         (b"\xff\xfe", "body_not_utf8"), (b"", "body_empty")])
def test_not_a_json_object_is_400(client, raw, code):  # type: ignore[no-untyped-def]
    refusal = _refusal(post(client, raw), 400, code)
    assert refusal.gate == "parse" and refusal.reason == code


@pytest.mark.parametrize(
    ("body", "field", "constraint_part"),
    [
        ({"failure_code": "card_expired"}, "invoice_id", "required"),
        ({"invoice_id": "in_1"}, "failure_code", "required"),
        ({"invoice_id": "bad id!", "failure_code": "card_expired"}, "invoice_id", "[A-Za-z0-9_-]{1,64}"),
        ({"invoice_id": "x" * 65, "failure_code": "card_expired"}, "invoice_id", "[A-Za-z0-9_-]{1,64}"),
        ({"invoice_id": "in_1\n", "failure_code": "card_expired"}, "invoice_id", "[A-Za-z0-9_-]{1,64}"),
        ({"invoice_id": 12, "failure_code": "card_expired"}, "invoice_id", "string"),
        ({"invoice_id": "in_1", "failure_code": "Card-Expired"}, "failure_code", "[a-z0-9_]{1,64}"),
        ({"invoice_id": "in_1", "failure_code": "card_expired", "attempt": 0}, "attempt", "between 1 and 50"),
        ({"invoice_id": "in_1", "failure_code": "card_expired", "attempt": 51}, "attempt", "between 1 and 50"),
        ({"invoice_id": "in_1", "failure_code": "card_expired", "attempt": True}, "attempt", "booleans refused"),
        ({"invoice_id": "in_1", "failure_code": "card_expired", "attempt": 2.5}, "attempt", "integer"),
        ({"invoice_id": "in_1", "failure_code": "card_expired", "attempt": "2"}, "attempt", "integer"),
        ({"invoice_id": "in_1", "failure_code": "card_expired", "prior_failures": -1}, "prior_failures", "0 and 50"),
        ({"invoice_id": "in_1", "failure_code": "card_expired", "prior_failures": 51}, "prior_failures", "0 and 50"),
        ({"invoice_id": "in_1", "failure_code": "card_expired", "prior_failures": False}, "prior_failures", "booleans"),
    ],
)
def test_bad_field_is_422_naming_field_and_constraint_never_value(client, body, field, constraint_part):  # type: ignore[no-untyped-def]
    response = post(client, body)
    refusal = _refusal(response, 422, "invalid_input")
    data = response.json()
    assert data["field"] == field and constraint_part in data["constraint"]
    assert refusal.gate == "fields" and refusal.field == field
    value = body.get(field)
    if isinstance(value, str) and len(value.strip()) >= 4:
        assert value.strip() not in response.content.decode()
    assert DecisionRecord.objects.count() == 0


@pytest.mark.parametrize("extra_field", ["client_id", "tenant", "amount"])
def test_unknown_fields_refused_by_name(client, extra_field):  # type: ignore[no-untyped-def]
    body = {"invoice_id": "in_1", "failure_code": "card_expired", extra_field: "secret-value-123"}
    response = post(client, body)
    refusal = _refusal(response, 422, "invalid_input")
    data = response.json()
    assert data["field"] == extra_field and data["fields"] == [extra_field]
    assert data["constraint"] == "unknown_field" and extra_field in data["detail"]
    assert "secret-value-123" not in response.content.decode()
    assert refusal.reason == "unknown_field" and refusal.field == ""


def test_refusal_row_holds_no_input(client):  # type: ignore[no-untyped-def]
    post(client, {"invoice_id": "in_secret_77", "failure_code": "card_expired", "attempt": 99})
    row = DecisionRefusal.objects.get()
    # Only these columns exist besides id, tenant and time; none can hold the input (the
    # refusal id is minted by the server: paypilot.refusals).
    assert {f.attname for f in DecisionRefusal._meta.fields} == {"id", "tenant_id", "gate", "reason", "field",
                                                                 "refusal_id", "created_at"}
    assert row.refusal_id.startswith("rf_")
    assert (row.gate, row.reason, row.field) == ("fields", "invalid_field", "attempt")


def _refuse_inserts() -> None:
    """Make the database itself refuse the audit INSERT (rolled back with the test)."""
    table = DecisionRecord._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("CREATE FUNCTION pp_test_refuse() RETURNS trigger AS $$ BEGIN "
                           "RAISE EXCEPTION 'audit store down'; END; $$ LANGUAGE plpgsql")
            cursor.execute(f'CREATE TRIGGER pp_test_refuse BEFORE INSERT ON "{table}" '
                           "FOR EACH ROW EXECUTE FUNCTION pp_test_refuse()")
        else:
            cursor.execute(f'CREATE TRIGGER pp_test_refuse BEFORE INSERT ON "{table}" '
                           "BEGIN SELECT RAISE(ABORT, 'audit store down'); END")


def test_audit_unavailable_is_503_and_no_decision_leaks(client):  # type: ignore[no-untyped-def]
    _refuse_inserts()
    response = post(client, {"invoice_id": "in_1", "failure_code": "card_expired"})
    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "audit_unavailable"
    assert set(body) == {"error", "detail"}
    assert "request_card_update" not in response.content.decode()
    assert DecisionRecord.objects.count() == 0


def test_audit_unavailable_when_the_connection_fails(client):  # type: ignore[no-untyped-def]
    with mock.patch("decisions.services._insert_sql", side_effect=DatabaseError("connection lost")):
        response = post(client, {"invoice_id": "in_1", "failure_code": "card_expired"})
    assert response.status_code == 503 and response.json()["error"] == "audit_unavailable"


def test_missing_token_is_401(db):  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    response = post(APIClient(), {"invoice_id": "in_1", "failure_code": "card_expired"})
    assert response.status_code == 401
    assert DecisionRecord.objects.count() == 0 and DecisionRefusal.objects.count() == 0


def test_viewer_role_is_403(tenant, api_client_for):  # type: ignore[no-untyped-def]
    response = post(api_client_for(tenant, "viewer"), {"invoice_id": "in_1", "failure_code": "card_expired"})
    assert response.status_code == 403
    assert DecisionRecord.objects.count() == 0


def test_tenant_comes_from_the_token(client, other_tenant, api_client_for):  # type: ignore[no-untyped-def]
    body = post(api_client_for(other_tenant), {"invoice_id": "in_1", "failure_code": "card_expired"}).json()
    assert body["tenant"] == other_tenant.slug
    assert DecisionRecord.objects.get(pk=body["audit_id"]).tenant == other_tenant
