"""OpenAPI shapes of the decisions app's answers (documentation only: the views build plain dicts)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, inline_serializer
from rest_framework import serializers

_INPUT = inline_serializer("DecisionInputEcho", {
    "failure_code": serializers.CharField(), "attempt": serializers.IntegerField(),
    "prior_failures": serializers.IntegerField(),
})
_STRATEGY = inline_serializer("DecisionStrategy", {
    "action": serializers.CharField(help_text="retry, retry_and_verify, update_payment_method, ..."),
    "retry_in_days": serializers.IntegerField(), "offer": serializers.CharField(allow_blank=True),
    "escalated": serializers.BooleanField(),
})
_SCHEDULE = inline_serializer("DecisionSchedule", {
    "retry_at": serializers.CharField(allow_null=True, help_text="ISO 8601 UTC, or null when no retry"),
    "source": serializers.CharField(),
})
_IMPACT = inline_serializer("DecisionImpact", {
    "recovery_likelihood": serializers.FloatField(),
    "expected_recovered_minor": serializers.IntegerField(allow_null=True),
    "annual_value_at_risk_minor": serializers.IntegerField(allow_null=True),
})
_DECISION_FIELDS: dict[str, Any] = {
    "invoice_id": serializers.CharField(), "rule_fired": serializers.CharField(), "matched": serializers.BooleanField(),
    "input": _INPUT, "churn_risk": serializers.ChoiceField(choices=["low", "medium", "high"]),
    "strategy": _STRATEGY, "schedule": _SCHEDULE, "impact": _IMPACT, "rules_version": serializers.CharField(),
    "rule_version_id": serializers.IntegerField(allow_null=True,
                                                help_text="the tenant rule version used; null: the built-in table"),
    "decided_at": serializers.CharField(), "tenant": serializers.CharField(),
}
DECISION = inline_serializer("Decision", {**_DECISION_FIELDS, "audit_id": serializers.IntegerField()})
DECISION_HISTORY = inline_serializer("DecisionHistory", {
    "invoice_id": serializers.CharField(), "tenant": serializers.CharField(),
    "outcome": serializers.ChoiceField(choices=["paid", "not_paid", "unknown"], help_text="latest reported"),
    "decisions": inline_serializer("StoredDecision", _DECISION_FIELDS, many=True),
})
OUTCOME = inline_serializer("OutcomeRecorded", {
    "invoice_id": serializers.CharField(), "outcome": serializers.ChoiceField(choices=["paid", "not_paid"]),
    "report_key": serializers.CharField(), "reported_at": serializers.CharField(),
    "outcome_id": serializers.IntegerField(), "replayed": serializers.BooleanField(),
})
OUTCOME_SUMMARY = inline_serializer("OutcomeSummary", {
    "tenant": serializers.CharField(), "paid": serializers.IntegerField(), "not_paid": serializers.IntegerField(),
    "unknown": serializers.IntegerField(), "decided_invoices": serializers.IntegerField(),
    "reports": serializers.IntegerField(),
})

DECIDE_EXAMPLES = [
    OpenApiExample("card expired", request_only=True,
                   value={"invoice_id": "in_1001", "failure_code": "card_expired"}),
    OpenApiExample("third attempt after two failures", request_only=True,
                   value={"invoice_id": "in_1002", "failure_code": "insufficient_funds", "attempt": 3,
                          "prior_failures": 2}),
]
OUTCOME_EXAMPLES = [
    OpenApiExample("paid after the retry", request_only=True,
                   value={"outcome": "paid", "report_key": "billing-sync:evt_1"}),
]

_DECISION_EXAMPLE = {
    "invoice_id": "in_1001", "rule_fired": "card_expired", "matched": True,
    "input": {"failure_code": "card_expired", "attempt": 1, "prior_failures": 0}, "churn_risk": "low",
    "strategy": {"action": "request_card_update", "retry_in_days": 1,
                 "offer": "Update the card on file in a minute from the secure link; nothing else changes.",
                 "escalated": False},
    "schedule": {"retry_at": "2026-12-02T09:00:00.000Z", "source": "paypilot_suggestion"},
    "impact": {"recovery_likelihood": 0.7, "expected_recovered_minor": None, "annual_value_at_risk_minor": None},
    "rules_version": "r-e0ac1bfb2f0b", "rule_version_id": None, "decided_at": "2026-12-01T09:00:00.000Z",
    "tenant": "acme",
}
DECISION_RESPONSE_EXAMPLES = [
    OpenApiExample("decided", response_only=True, value={**_DECISION_EXAMPLE, "audit_id": 41}),
]
HISTORY_EXAMPLES = [OpenApiExample("one decision, no outcome yet", response_only=True, value={
    "invoice_id": "in_1001", "tenant": "acme", "outcome": "unknown", "decisions": [_DECISION_EXAMPLE]})]
SUMMARY_EXAMPLES = [OpenApiExample("summary", response_only=True, value={
    "tenant": "acme", "paid": 12, "not_paid": 3, "unknown": 40, "decided_invoices": 55, "reports": 16})]
