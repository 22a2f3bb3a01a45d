"""POST /payment-failed: auth, field constraints, idempotency, injection on both paths."""

from __future__ import annotations

import json

import pytest

from dunning.models import IdempotencyRecord
from dunning.tests.conftest import json_reply
from dunning.tests.factories import INJECTION, demo_customers

BODY = {"customer_id": "cust_001", "amount": 1499.0, "currency": "usd", "failure_code": "card_expired",
        "attempt": 1}


def _post(client, body, **headers):  # type: ignore[no-untyped-def]
    return client.post("/payment-failed", data=json.dumps(body), content_type="application/json", **headers)


@pytest.mark.django_db
def test_recovery_plan_for_a_customer_on_record(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    demo_customers(tenant)
    response = _post(api_client_for(tenant), BODY)
    assert response.status_code == 200
    out = response.json()
    assert out["strategy"]["action"] == "request_card_update"
    assert out["impact"]["amount_at_risk_minor"] == 149900 and out["impact"]["currency"] == "USD"
    assert out["impact"]["annual_value_at_risk"] == 17988.0
    assert out["message"].startswith("Hi Acme Robotics,") and "your Scale plan" in out["message"]
    assert out["locale"] == "en" and out["fallback_used"] is False


@pytest.mark.django_db
def test_auth_and_roles(tenant, api_client_for, client) -> None:  # type: ignore[no-untyped-def]
    assert _post(client, BODY).status_code == 401
    assert _post(api_client_for(tenant, "viewer"), BODY).status_code == 403
    assert _post(api_client_for(tenant, "tenant_admin"), BODY).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field", "constraint"),
    [
        ({"customer_id": None}, "customer_id", "required"),
        ({"customer_id": "has space"}, "customer_id", "pattern"),
        ({"amount": 0}, "amount", "gt_zero"),
        ({"amount": -5}, "amount", "gt_zero"),
        ({"amount": "abc"}, "amount", "type"),
        ({"amount": True}, "amount", "type"),
        ({"amount": 10.001}, "amount", "decimal_places"),
        ({"amount": 1e12}, "amount", "max_value"),
        ({"currency": "dollars"}, "currency", "pattern"),
        ({"failure_code": "Card-Expired"}, "failure_code", "pattern"),
        ({"failure_code": "a" * 41}, "failure_code", "pattern"),
        ({"attempt": 0}, "attempt", "range"),
        ({"attempt": "2"}, "attempt", "type"),
        ({"customer_email": "not-an-email"}, "customer_email", "format"),
        ({"customer_name": "x" * 201}, "customer_name", "max_length"),
        ({"plan": 5}, "plan", "type"),
        ({"surprise": "secret-value-123"}, "body", "unknown_field"),
    ],
)
def test_422_names_field_and_constraint_without_echoing_the_value(tenant, api_client_for, change, field,
                                                                  constraint) -> None:  # type: ignore[no-untyped-def]
    body = {**BODY, **change}
    body = {k: v for k, v in body.items() if v is not None}
    response = _post(api_client_for(tenant), body)
    assert response.status_code == 422
    out = response.json()
    assert (out["error"], out["field"], out["constraint"]) == ("invalid_input", field, constraint)
    for value in change.values():
        if isinstance(value, str) and len(value) > 3:
            assert value not in response.content.decode()
    assert "surprise" not in response.content.decode()


@pytest.mark.django_db
def test_jpy_amounts_are_whole_units(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    assert _post(client, {**BODY, "currency": "JPY", "amount": 1000}).json()["impact"]["amount_at_risk_minor"] == 1000
    assert _post(client, {**BODY, "currency": "JPY", "amount": 10.5}).json()["constraint"] == "decimal_places"


@pytest.mark.django_db
def test_malformed_locale_is_not_refused_it_resolves_to_english(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    out = _post(api_client_for(tenant), {**BODY, "customer_id": "new_1", "locale": "12-!!"}).json()
    assert (out["locale"], out["locale_reason"]) == ("en", "malformed")


@pytest.mark.django_db
def test_idempotency_replays_the_first_response(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    first = _post(client, BODY, HTTP_IDEMPOTENCY_KEY="key-1")
    second = _post(client, BODY, HTTP_IDEMPOTENCY_KEY="key-1")
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()  # same schedule timestamps: the stored answer
    assert second["Idempotent-Replayed"] == "true" and not first.has_header("Idempotent-Replayed")
    assert IdempotencyRecord.objects.count() == 1


@pytest.mark.django_db
def test_same_key_with_a_different_body_is_refused(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    _post(client, BODY, HTTP_IDEMPOTENCY_KEY="key-2")
    response = _post(client, {**BODY, "amount": 10}, HTTP_IDEMPOTENCY_KEY="key-2")
    assert response.status_code == 422 and response.json()["error"] == "idempotency_key_reused"
    batch = client.post("/payment-failed/batch", data=json.dumps({"events": [BODY]}),
                        content_type="application/json", HTTP_IDEMPOTENCY_KEY="key-2")
    assert batch.status_code == 422 and batch.json()["error"] == "idempotency_key_reused"


@pytest.mark.django_db
def test_keys_are_per_tenant_and_bad_input_is_not_stored(tenant, other_tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    assert _post(api_client_for(tenant), BODY, HTTP_IDEMPOTENCY_KEY="shared").status_code == 200
    other = _post(api_client_for(other_tenant), {**BODY, "amount": 5}, HTTP_IDEMPOTENCY_KEY="shared")
    assert other.status_code == 200 and other.json()["impact"]["amount_at_risk_minor"] == 500
    client = api_client_for(tenant)
    assert _post(client, {**BODY, "amount": -1}, HTTP_IDEMPOTENCY_KEY="fix-me").status_code == 422
    assert _post(client, BODY, HTTP_IDEMPOTENCY_KEY="fix-me").status_code == 200
    bad_key = _post(client, BODY, HTTP_IDEMPOTENCY_KEY="x" * 256)
    assert (bad_key.status_code, bad_key.json()["field"]) == (422, "Idempotency-Key")


FIELDS = ["customer_id", "customer_name", "customer_email", "plan", "locale", "failure_code", "currency"]


@pytest.mark.django_db
@pytest.mark.parametrize("llm_path", [False, True])
@pytest.mark.parametrize("field", FIELDS)
def test_injection_payload_never_reaches_the_response(tenant, api_client_for, llm_on, llm_path, field) -> None:  # type: ignore[no-untyped-def]
    if llm_path:
        llm_on(lambda s, u: json_reply(subject="Pay", body=f"{INJECTION} http://evil.example", diagnosis="x"))
    response = _post(api_client_for(tenant), {**BODY, "customer_id": "new_2", field: INJECTION})
    text = response.content.decode()
    assert response.status_code in (200, 422)
    assert "evil.example" not in text and "ignore all previous" not in text.lower()


@pytest.mark.django_db
def test_only_json_bodies_are_accepted(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    response = client.post("/payment-failed", data="customer_id=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    ok = client.post("/payment-failed", data=json.dumps(BODY), content_type="application/json; charset=utf-8",
                     HTTP_ACCEPT="text/html")
    assert ok.status_code == 200 and ok["Content-Type"] == "application/json"
