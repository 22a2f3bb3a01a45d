"""POST /payment-failed/batch: 1..50 events, per-currency aggregate, order-independent primary."""

from __future__ import annotations

import itertools
import json

import pytest

from dunning.tests.factories import demo_customers


def _event(cid: str, amount: float, currency: str, code: str = "generic_decline", attempt: int = 1) -> dict:
    return {"customer_id": cid, "amount": amount, "currency": currency, "failure_code": code, "attempt": attempt}


def _post(client, events, **headers):  # type: ignore[no-untyped-def]
    return client.post("/payment-failed/batch", data=json.dumps({"events": events}),
                       content_type="application/json", **headers)


@pytest.mark.django_db
def test_results_in_order_and_aggregate_per_currency(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    demo_customers(tenant)
    events = [_event("cust_001", 1499, "usd", "card_expired"), _event("cust_002", 299, "eur", "insufficient_funds"),
              _event("cust_003", 4200, "usd", attempt=3), _event("nobody", 10.5, "gbp")]
    response = _post(api_client_for(tenant), events)
    assert response.status_code == 200
    out = response.json()
    assert [r["impact"]["amount_at_risk_minor"] for r in out["results"]] == [149900, 29900, 420000, 1050]
    assert out["results"][1]["risk"]["prior_failures"] == 1  # customer looked up in the batch query
    agg = out["aggregate"]
    assert agg["count"] == 4 and agg["high_risk_count"] == 1 and agg["primary_currency"] == "USD"
    assert set(agg["by_currency"]) == {"USD", "EUR", "GBP"}
    usd = agg["by_currency"]["USD"]
    assert usd["count"] == 2 and usd["amount_at_risk_minor"] == 569900 and usd["amount_at_risk"] == 5699.0
    assert usd["expected_recovered_minor"] == sum(
        r["impact"]["expected_recovered_minor"] for r in out["results"] if r["impact"]["currency"] == "USD")
    assert agg["total_at_risk"] == 5699.0


@pytest.mark.django_db
def test_primary_currency_is_by_count_whatever_the_order(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    events = [_event("a", 9999, "usd"), _event("b", 1, "eur"), _event("c", 2, "eur"), _event("d", 5000, "gbp")]
    primaries = {_post(client, list(p)).json()["aggregate"]["primary_currency"]
                 for p in itertools.permutations(events)}
    assert primaries == {"EUR"}
    tie = [_event("a", 1, "usd"), _event("b", 1, "eur")]
    assert {_post(client, list(p)).json()["aggregate"]["primary_currency"]
            for p in itertools.permutations(tie)} == {"EUR"}


@pytest.mark.django_db
def test_batch_limits_and_errors_name_the_item(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    assert _post(client, []).json()["constraint"] == "length"
    assert _post(client, [_event("a", 1, "usd")] * 51).json()["constraint"] == "length"
    assert _post(client, [_event("a", 1, "usd")] * 50).status_code == 200
    bad = _post(client, [_event("a", 1, "usd"), _event("b", -1, "usd")])
    assert bad.status_code == 422 and bad.json()["field"] == "events[1].amount"
    wrong_shape = client.post("/payment-failed/batch", data=json.dumps([_event("a", 1, "usd")]),
                              content_type="application/json")
    assert wrong_shape.status_code == 422


@pytest.mark.django_db
def test_batch_idempotency(tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    client = api_client_for(tenant)
    events = [_event("a", 1, "usd")]
    first = _post(client, events, HTTP_IDEMPOTENCY_KEY="batch-1")
    again = _post(client, events, HTTP_IDEMPOTENCY_KEY="batch-1")
    assert first.json() == again.json() and again["Idempotent-Replayed"] == "true"
