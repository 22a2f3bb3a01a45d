"""Read-only admin for the decision audit, outcomes and refusals (all append-only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from decisions.models import DecisionOutcome, DecisionRecord, DecisionRefusal


class _ReadOnly(admin.ModelAdmin):
    """The database refuses UPDATE and DELETE on these tables; the admin offers neither."""

    list_select_related = ["tenant"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(DecisionRecord)
class DecisionRecordAdmin(_ReadOnly):
    list_display = ["decided_at", "tenant", "invoice_ref", "rule_fired", "matched", "churn_risk", "action",
                    "escalated", "source", "rules_version"]
    list_filter = ["tenant", "rule_fired", "matched", "churn_risk", "source", "rules_version"]
    search_fields = ["invoice_ref"]


@admin.register(DecisionOutcome)
class DecisionOutcomeAdmin(_ReadOnly):
    list_display = ["reported_at", "tenant", "invoice_ref", "outcome", "report_key"]
    list_filter = ["tenant", "outcome"]
    search_fields = ["invoice_ref", "report_key"]


@admin.register(DecisionRefusal)
class DecisionRefusalAdmin(_ReadOnly):
    list_display = ["created_at", "tenant", "gate", "reason", "field"]
    list_filter = ["tenant", "gate", "reason"]
