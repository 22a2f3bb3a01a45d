"""Read-only admin for the decision audit, outcomes and refusals (all append-only)."""

from __future__ import annotations

from django.contrib import admin

from decisions.models import DecisionOutcome, DecisionRecord, DecisionRefusal
from paypilot.admin_tenancy import TenantScopedReadOnlyAdmin


class _ReadOnly(TenantScopedReadOnlyAdmin):
    """The database refuses UPDATE and DELETE on these tables; the admin offers neither, and a
    tenant's staff see only their own tenant's rows."""

    list_select_related = ["tenant"]


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
