"""/payment-failed and the batch refuse currencies outside ISO 4217 (issue 18: XXX and QQQ
were accepted). XXX is ISO's "no currency" code, not something an invoice is paid in."""

from __future__ import annotations

import json

import pytest

from dunning.models import Draft
from ledger.models import Invoice

EVENT = {"customer_id": "cust_iso", "amount": 10, "currency": "usd", "failure_code": "card_expired"}


@pytest.mark.django_db
@pytest.mark.parametrize("currency", ["XXX", "xxx", "QQQ", "XTS", "XAU", "BOV"])
def test_unknown_currency_is_422_and_writes_nothing(tenant, api_client_for, currency) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    response = client.post("/payment-failed", data=json.dumps({**EVENT, "currency": currency}),
                           content_type="application/json")
    assert response.status_code == 422
    assert response.json()["refusal_id"] == response["X-Refusal-ID"]  # paypilot.refusals
    assert response.json() | {"detail": "", "refusal_id": ""} == {
        "error": "invalid_input", "field": "currency", "constraint": "currency_unknown", "detail": "",
        "refusal_id": ""}
    assert currency not in response.content.decode()  # the value is never echoed
    assert not Invoice.objects.exists() and not Draft.objects.exists()


@pytest.mark.django_db
def test_batch_names_the_event_with_the_unknown_currency(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    events = [EVENT, {**EVENT, "customer_id": "cust_2", "currency": "QQQ"}]
    response = api_client_for(tenant).post("/payment-failed/batch", data=json.dumps({"events": events}),
                                           content_type="application/json")
    assert response.status_code == 422
    assert response.json()["constraint"] == "currency_unknown"
    assert response.json()["field"] == "events[1].currency"
    assert not Invoice.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("currency", ["jpy", "KWD", "EUR", "XOF"])
def test_payable_currencies_still_pass(tenant, api_client_for, currency) -> None:  # type: ignore[no-untyped-def]
    response = api_client_for(tenant).post("/payment-failed", data=json.dumps({**EVENT, "currency": currency}),
                                           content_type="application/json")
    assert response.status_code == 200, response.content
