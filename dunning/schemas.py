"""OpenAPI shapes of the dunning app's answers (documentation only: the pipeline builds dicts).
Money appears twice: `*_minor` integers are the record, the float beside each is for display."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, inline_serializer
from rest_framework import serializers


def _minor() -> serializers.IntegerField:
    return serializers.IntegerField(allow_null=True, help_text="integer minor units; null when no amount is known")


def _major() -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, help_text="the same amount in major units, for display only")


_IMPACT = inline_serializer("RecoveryImpact", {
    "currency": serializers.CharField(), "amount_at_risk": _major(),
    "amount_at_risk_minor": _minor(), "recovery_likelihood": serializers.FloatField(),
    "expected_recovered": _major(),
    "expected_recovered_minor": _minor(),
    "annual_value_at_risk": _major(),
    "annual_value_at_risk_minor": _minor(),
    "churn_risk": serializers.ChoiceField(choices=["low", "medium", "high"]),
})
RECOVERY_PLAN = inline_serializer("RecoveryPlan", {
    "diagnosis": serializers.CharField(),
    "risk": inline_serializer("RecoveryRisk", {
        "attempt": serializers.IntegerField(), "prior_failures": serializers.IntegerField(),
        "churn_risk": serializers.ChoiceField(choices=["low", "medium", "high"]),
        "escalate": serializers.BooleanField(),
    }),
    "strategy": inline_serializer("RecoveryStrategy", {
        "action": serializers.CharField(), "retry_in_days": serializers.IntegerField(),
        "offer": serializers.CharField(allow_blank=True), "escalated": serializers.BooleanField(),
        "tone": serializers.CharField(), "rule_fired": serializers.CharField(), "matched": serializers.BooleanField(),
        "rules_version": serializers.CharField(),
    }),
    "schedule": inline_serializer("RecoverySchedule", {
        "retry_in_days": serializers.IntegerField(), "next_retry_at": serializers.CharField(allow_null=True),
        "retry_on": serializers.DateField(allow_null=True), "timezone": serializers.CharField(),
        "source": serializers.CharField(),
    }),
    "subject": serializers.CharField(), "message": serializers.CharField(),
    "locale": serializers.CharField(), "locale_reason": serializers.CharField(),
    "impact": _IMPACT,
    "source": serializers.ChoiceField(choices=["template", "llm"], help_text="who wrote the copy"),
    "fallback_used": serializers.BooleanField(), "playbook": serializers.ListField(child=serializers.CharField()),
    "dropped_fields": serializers.ListField(
        child=inline_serializer("DroppedField", {"field": serializers.CharField(), "reason": serializers.CharField()}),
        help_text="customer or plan values left out of the copy (name, plan, business) and the reason code"),
})
_CURRENCY_ROLLUP = inline_serializer("ImpactByCurrency", {
    "count": serializers.IntegerField(), "high_risk_count": serializers.IntegerField(),
    "amount_at_risk": serializers.FloatField(), "amount_at_risk_minor": serializers.IntegerField(),
    "expected_recovered": serializers.FloatField(), "expected_recovered_minor": serializers.IntegerField(),
    "annual_value_at_risk": serializers.FloatField(), "annual_value_at_risk_minor": serializers.IntegerField(),
})
AGGREGATE = inline_serializer("ImpactAggregate", {
    "count": serializers.IntegerField(), "high_risk_count": serializers.IntegerField(),
    "primary_currency": serializers.CharField(allow_null=True),
    "total_at_risk": serializers.FloatField(help_text="in the primary currency only; never summed across"),
    "total_expected_recovered": serializers.FloatField(), "total_annual_value_at_risk": serializers.FloatField(),
    "by_currency": serializers.DictField(child=_CURRENCY_ROLLUP),
})
RECOVERY_PLANS = inline_serializer("RecoveryPlans", {
    "results": RECOVERY_PLAN.__class__(many=True), "aggregate": AGGREGATE,
})
PORTFOLIO = inline_serializer("PortfolioImpact", {
    "customers": serializers.IntegerField(), "failing": serializers.IntegerField(), "aggregate": AGGREGATE,
    "items": inline_serializer("PortfolioItem", {
        "customer_id": serializers.CharField(), "rule_fired": serializers.CharField(),
        "churn_risk": serializers.ChoiceField(choices=["low", "medium", "high"]), "currency": serializers.CharField(),
        "recovery_likelihood": serializers.FloatField(), "amount_at_risk": serializers.FloatField(),
        "amount_at_risk_minor": serializers.IntegerField(), "expected_recovered": serializers.FloatField(),
        "expected_recovered_minor": serializers.IntegerField(), "annual_value_at_risk": serializers.FloatField(),
        "annual_value_at_risk_minor": serializers.IntegerField(),
    }, many=True),
})
VALIDATION_ERROR = inline_serializer("PaymentFailedError", {
    "error": serializers.CharField(), "detail": serializers.CharField(),
    "field": serializers.CharField(required=False), "index": serializers.IntegerField(required=False),
})

PAYMENT_FAILED_EXAMPLES = [
    OpenApiExample("expired card, known customer", request_only=True, value={
        "customer_id": "cust_001", "amount": "49.00", "currency": "usd", "failure_code": "card_expired",
        "attempt": 1}),
    OpenApiExample("new customer in German", request_only=True, value={
        "customer_id": "cust_new_7", "amount": "299.00", "currency": "eur", "failure_code": "insufficient_funds",
        "attempt": 2, "customer_name": "Brightleaf Studios", "locale": "de-DE"}),
]
BATCH_EXAMPLES = [
    OpenApiExample("two failures", request_only=True, value={"events": [
        {"customer_id": "cust_001", "amount": "1499.00", "currency": "usd", "failure_code": "card_expired"},
        {"customer_id": "cust_002", "amount": "299.00", "currency": "eur", "failure_code": "insufficient_funds",
         "attempt": 2},
    ]}),
]

PORTFOLIO_EXAMPLES = [OpenApiExample("one failing customer", response_only=True, value={
    "customers": 6, "failing": 1,
    "aggregate": {"count": 1, "high_risk_count": 0, "primary_currency": "USD", "total_at_risk": 1499.0,
                  "total_expected_recovered": 1049.3, "total_annual_value_at_risk": 17988.0,
                  "by_currency": {"USD": {"count": 1, "high_risk_count": 0, "amount_at_risk": 1499.0,
                                          "amount_at_risk_minor": 149900, "expected_recovered": 1049.3,
                                          "expected_recovered_minor": 104930, "annual_value_at_risk": 17988.0,
                                          "annual_value_at_risk_minor": 1798800}}},
    "items": [{"customer_id": "cust_001", "rule_fired": "card_expired", "churn_risk": "low", "currency": "USD",
               "recovery_likelihood": 0.7, "amount_at_risk": 1499.0, "amount_at_risk_minor": 149900,
               "expected_recovered": 1049.3, "expected_recovered_minor": 104930, "annual_value_at_risk": 17988.0,
               "annual_value_at_risk_minor": 1798800}],
})]
