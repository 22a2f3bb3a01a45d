"""GET /portfolio-impact over the tenant's customers."""

from __future__ import annotations

import pytest

from dunning.tests.factories import CustomerFactory, demo_customers


@pytest.mark.django_db
def test_portfolio_over_the_demo_customers(tenant, other_tenant, api_client_for) -> None:  # type: ignore[no-untyped-def]
    demo_customers(tenant)
    CustomerFactory(tenant=tenant, external_id="paid_up", payment_history=[{"status": "ok"}])
    CustomerFactory(tenant=other_tenant, external_id="elsewhere", payment_history=[{"status": "failed"}])
    response = api_client_for(tenant, "viewer").get("/portfolio-impact")
    assert response.status_code == 200
    out = response.json()
    assert (out["customers"], out["failing"]) == (7, 6)
    items = {i["customer_id"]: i for i in out["items"]}
    assert items["cust_001"]["expected_recovered_minor"] == 104930  # 1499.00 x 0.7
    assert items["cust_002"]["recovery_likelihood"] == round(0.55 * 0.82, 4)  # one prior failure
    agg = out["aggregate"]
    assert agg["primary_currency"] == "USD" and agg["by_currency"]["USD"]["count"] == 4
    assert agg["by_currency"]["USD"]["annual_value_at_risk_minor"] == 12 * (149900 + 420000 + 4900 + 34900)
    assert set(agg["by_currency"]) == {"USD", "EUR", "GBP"}


@pytest.mark.django_db
def test_portfolio_needs_a_token(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/portfolio-impact").status_code == 401
