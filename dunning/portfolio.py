"""Per-currency roll-ups of recovery impact (batch aggregate and /portfolio-impact).

Amounts in different currencies are never added together. The primary currency is the one
with the most items; a tie goes to the alphabetically first code, so the answer does not
depend on the order events arrived in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from decisions.rules import decide, prior_failures_from_history
from dunning.selectors import CustomerRow, customer_rows_all
from ledger.money import to_major
from paypilot.models import Tenant


def _major(amount_minor: int, currency: str) -> float:
    return float(to_major(amount_minor, currency))


def aggregate(impacts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Roll up `impact` dicts as `finalize` builds them."""
    sums: dict[str, dict[str, int]] = {}
    high = 0
    for impact in impacts:
        row = sums.setdefault(impact["currency"], {"count": 0, "high_risk_count": 0, "at_risk": 0,
                                                   "expected": 0, "annual": 0})
        row["count"] += 1
        row["at_risk"] += impact["amount_at_risk_minor"] or 0
        row["expected"] += impact["expected_recovered_minor"] or 0
        row["annual"] += impact["annual_value_at_risk_minor"] or 0
        if impact["churn_risk"] == "high":
            row["high_risk_count"] += 1
            high += 1
    by_currency = {
        code: {
            "count": row["count"],
            "high_risk_count": row["high_risk_count"],
            "amount_at_risk": _major(row["at_risk"], code),
            "amount_at_risk_minor": row["at_risk"],
            "expected_recovered": _major(row["expected"], code),
            "expected_recovered_minor": row["expected"],
            "annual_value_at_risk": _major(row["annual"], code),
            "annual_value_at_risk_minor": row["annual"],
        }
        for code, row in sorted(sums.items())
    }
    primary = min(by_currency, key=lambda code: (-by_currency[code]["count"], code)) if by_currency else None
    top = by_currency.get(primary or "", {})
    return {
        "count": sum(r["count"] for r in sums.values()),
        "high_risk_count": high,
        "primary_currency": primary,
        "total_at_risk": top.get("amount_at_risk", 0.0),
        "total_expected_recovered": top.get("expected_recovered", 0.0),
        "total_annual_value_at_risk": top.get("annual_value_at_risk", 0.0),
        "by_currency": by_currency,
    }


def _customer_impact(row: CustomerRow) -> dict[str, Any] | None:
    """Impact for a customer whose latest payment failed, valued at one month's MRR."""
    history = [e for e in row.payment_history if isinstance(e, dict)]
    if not history or str(history[-1].get("status", "")).lower() != "failed":
        return None
    if not row.mrr_minor or len(row.currency or "") != 3:
        return None
    currency = row.currency.upper()
    decision = decide(
        failure_code=str(history[-1].get("failure_code") or "unrecognised"),
        prior_failures=prior_failures_from_history([str(e.get("status", "")) for e in history]),
        amount_minor=row.mrr_minor, mrr_minor=row.mrr_minor,
    )
    impact = decision.impact
    assert impact is not None
    return {
        "customer_id": row.external_id,
        "rule_fired": decision.rule_fired,
        "churn_risk": decision.churn_risk,
        "currency": currency,
        "recovery_likelihood": decision.likelihood,
        "amount_at_risk": _major(row.mrr_minor, currency),
        "amount_at_risk_minor": row.mrr_minor,
        "expected_recovered": _major(impact.expected_recovered_minor, currency),
        "expected_recovered_minor": impact.expected_recovered_minor,
        "annual_value_at_risk": _major(impact.annual_value_at_risk_minor, currency),
        "annual_value_at_risk_minor": impact.annual_value_at_risk_minor,
    }


def portfolio_impact(*, tenant: Tenant) -> dict[str, Any]:
    """Every customer of the tenant whose latest payment failed, and the roll-up."""
    rows = customer_rows_all(tenant_id=tenant.pk)
    items = [item for item in map(_customer_impact, rows) if item is not None]
    return {"customers": len(rows), "failing": len(items), "aggregate": aggregate(items), "items": items}
