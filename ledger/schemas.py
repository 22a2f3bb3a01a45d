"""OpenAPI shape of the recovery report (documentation only: the report is built as a dict by
`ledger.report`). Numbers that are withheld or undefined below their minimum counts are null;
money is integer minor units per currency, never summed across currencies."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, inline_serializer
from rest_framework import serializers

_AMOUNTS = serializers.DictField(
    child=inline_serializer("ReportAmounts", {
        "exponent": serializers.IntegerField(), "failed_minor": serializers.IntegerField(),
        "recovered_minor": serializers.IntegerField(help_text="net of refunds"),
        "recovered_gross_minor": serializers.IntegerField(), "refunded_minor": serializers.IntegerField(),
        "failed": serializers.CharField(), "recovered": serializers.CharField(),
    }), help_text="per ISO 4217 currency")
_ARM = inline_serializer("ReportArm", {
    "count": serializers.IntegerField(), "recovered": serializers.IntegerField(),
    "recovered_later": serializers.IntegerField(help_text="recovered after the maturity window"),
    "churned": serializers.IntegerField(), "exhausted": serializers.IntegerField(), "open": serializers.IntegerField(),
    "voided": serializers.IntegerField(), "recovery_rate": serializers.FloatField(allow_null=True),
    "median_hours_to_recovery": serializers.FloatField(allow_null=True),
    "p90_hours_to_recovery": serializers.FloatField(allow_null=True),
    "amounts": _AMOUNTS,
})
_ATTRIBUTION = inline_serializer("ReportAttribution", {
    "baseline": serializers.CharField(), "method": serializers.CharField(),
    "min_per_arm": serializers.IntegerField(),
    "treatment_count": serializers.IntegerField(), "holdout_count": serializers.IntegerField(),
    "lift_pp": serializers.FloatField(help_text="intention-to-treat lift in percentage points; null when withheld",
                                      allow_null=True),
    "lift_ci95_pp": serializers.ListField(
        child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2,
        help_text="Newcombe hybrid score interval, [low, high]"),
    "recovered_attributable": serializers.DictField(
        child=inline_serializer("ReportAttributable", {
            "minor": serializers.IntegerField(allow_null=True),
            "ci95_minor": serializers.ListField(child=serializers.IntegerField(), allow_null=True),
            "treatment_failed_minor": serializers.IntegerField(), "display": serializers.CharField(),
        }), allow_null=True, help_text="per currency: lift x the treatment arm's failed amount"),
    "secondary": serializers.JSONField(required=False, help_text="per-protocol and complier figures, labelled"),
    "note": serializers.CharField(required=False),
})
REPORT = inline_serializer("RecoveryReport", {
    "sample": serializers.BooleanField(), "generated_at": serializers.CharField(),
    "window_days": serializers.IntegerField(), "tenant": serializers.CharField(allow_null=True),
    "arms": serializers.DictField(child=_ARM, help_text="holdout, treatment (intention to treat), treated, untouched"),
    "maturing": serializers.JSONField(help_text="invoices younger than the window, left out of the lift"),
    "before_holdout": serializers.JSONField(), "totals": _ARM.__class__(), "attribution": _ATTRIBUTION,
    "time_to_recovery": serializers.JSONField(help_text="per arm: recovered, median_hours, p90_hours"),
    "holdout": serializers.JSONField(help_text="the holdout in force, what it costs and buys, weeks to +/- 5 pp"),
    "weekly": serializers.ListField(child=serializers.JSONField(),
                                    help_text="weekly failure cohorts: arms, lift with interval, amounts"),
})
REPORT_EXAMPLES = [OpenApiExample("a measured lift", response_only=True, value={
    "sample": False, "generated_at": "2026-12-01T09:00:00+00:00", "window_days": 30, "tenant": "acme",
    "arms": {"holdout": {"count": 400, "recovered": 120, "recovered_later": 4, "churned": 90, "exhausted": 150,
                         "open": 36, "voided": 3, "recovery_rate": 0.3, "median_hours_to_recovery": 70.5,
                         "p90_hours_to_recovery": 390.0,
                         "amounts": {"USD": {"exponent": 2, "failed_minor": 1960000, "recovered_minor": 588000,
                                             "recovered_gross_minor": 592900, "refunded_minor": 4900,
                                             "failed": "19,600.00", "recovered": "5,880.00"}}}},
    "maturing": {"count": 55, "by_arm": {"holdout": 11, "treatment": 44}},
    "before_holdout": {"count": 0},
    "totals": {"count": 2000, "recovered": 780, "recovered_later": 12, "churned": 400, "exhausted": 600,
               "open": 200, "voided": 20, "recovery_rate": 0.39, "median_hours_to_recovery": 80.0,
               "p90_hours_to_recovery": 400.0, "amounts": {}},
    "attribution": {"baseline": "randomised_holdout", "method": "newcombe_hybrid_score", "min_per_arm": 30,
                    "treatment_count": 1600, "holdout_count": 400, "lift_pp": 12.0, "lift_ci95_pp": [9.0, 14.9],
                    "recovered_attributable": {"USD": {"minor": 940800, "ci95_minor": [705600, 1168160],
                                                       "treatment_failed_minor": 7840000, "display": "9,408.00"}}},
    "time_to_recovery": {"holdout": {"recovered": 120, "median_hours": 70.5, "p90_hours": 390.0}},
    "holdout": {"pct": 20, "start": "2026-08-01"},
    "weekly": [],
})]
