"""The OpenAPI schema and the server agree where schemathesis' CLI (all checks, coverage
phase) found them apart: closed request bodies, the Idempotency-Key format, empty query
values, an unknown `format` on /report.csv, a null locale, an empty amount."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from dunning.validation import _IDEMPOTENCY_KEY

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema() -> dict:  # type: ignore[type-arg]
    return SchemaGenerator().get_schema(request=None, public=True)


def test_request_bodies_are_closed_and_the_header_pattern_is_the_servers(schema) -> None:
    parts = schema["components"]["schemas"]
    for name in ("DecideInput", "OutcomeInput", "PaymentFailedInput", "PaymentFailedBatchInput"):
        assert parts[name]["additionalProperties"] is False, name
    (header,) = schema["paths"]["/payment-failed"]["post"]["parameters"]
    pattern = re.compile(header["schema"]["pattern"])
    for key in ("a", "k-1:2/3", "~" * 255, "", " a", "x" * 256, "é"):
        assert bool(pattern.match(key)) == bool(_IDEMPOTENCY_KEY.match(key)), key
    event = parts["PaymentFailedInput"]["properties"]
    assert event["locale"].get("nullable") is True
    amount = re.compile(event["amount"]["pattern"])
    assert [a for a in ("", "0", "0.000", "-1", "1000000001", "1.2345") if amount.match(a)] == []
    assert all(amount.match(a) for a in ("1", "49.00", "0.5", "0.001", "1000000000", "999999999.999"))


def test_empty_or_unknown_query_values_are_refused(tenant, make_token) -> None:
    viewer = Client(headers={"Authorization": f"Bearer {make_token(tenant, role='tenant_admin')}"})
    assert viewer.get("/recon/review?as_of=").status_code == 422
    assert viewer.get("/recon/review?as_of=20261116").status_code == 422  # not RFC 3339 full-date
    assert viewer.get("/refusals?source=").status_code == 422
    assert viewer.get("/refusals?source=guard_swaps,,guard_swaps").status_code == 422
    assert viewer.get("/refusals?source=guard_swaps").status_code == 200
    assert viewer.get("/report.csv?format=AAA").status_code == 422
    assert viewer.get("/report.csv?format=json").status_code == 200


def test_the_currency_pattern_is_exactly_the_payable_codes_in_any_case(schema) -> None:
    from paypilot.money import ISO_4217, currency_known

    event = schema["components"]["schemas"]["PaymentFailedInput"]["properties"]
    pattern = re.compile(event["currency"]["pattern"])

    def matches(code: str) -> bool:  # as ECMA-262 reads it: "$" is the end, never before a last newline
        found = pattern.match(code)
        return found is not None and found.end() == len(code)

    for code in sorted(ISO_4217):
        assert matches(code) and matches(code.lower()) and matches(code.title()), code
    for code in ("AAA", "XXX", "QQQ", "XTS", "XAU", "usd ", " usd", "usdd", "us", "", "USD\n"):
        assert not matches(code), code
        assert not currency_known(code) or code.strip() != code, code


def test_a_schema_valid_currency_is_accepted_and_an_unknown_one_is_refused(tenant, make_token) -> None:
    client = Client(headers={"Authorization": f"Bearer {make_token(tenant, role='tenant_admin')}"})
    body = {"customer_id": "cus_1", "amount": "12.00", "failure_code": "insufficient_funds"}
    mixed_case = client.post("/payment-failed", {**body, "currency": "eUr"}, content_type="application/json")
    assert mixed_case.status_code == 200
    for refused in ("AAA", "usd\n"):
        answer = client.post("/payment-failed", {**body, "currency": refused}, content_type="application/json")
        assert answer.status_code == 422 and answer.json()["field"] == "currency", refused
