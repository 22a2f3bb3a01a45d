"""Read-only admin for the decision audit, outcomes and refusals (all append-only)."""

from __future__ import annotations

from django.contrib import admin

from decisions.models import DecisionOutcome, DecisionRecord, DecisionRefusal
from decisions.rules import CHURN_RISKS, RULES
from paypilot.admin_perf import choices_filter, input_filter, pairs
from paypilot.admin_tenancy import TenantScopedReadOnlyAdmin

# Fixed tables (the rules, the risk bands) or a text box: no DISTINCT over the audit.
RuleFilter = choices_filter(title="rule fired", parameter="rule_fired", lookup="rule_fired",
                            choices=lambda: pairs(sorted(RULES)))
RiskFilter = choices_filter(title="churn risk", parameter="churn_risk", lookup="churn_risk",
                            choices=lambda: pairs(CHURN_RISKS))
RulesVersionFilter = input_filter(title="rules version", parameter="rules_version", lookup="rules_version")
SEARCH_HELP = "Search matches the start (case-sensitive) of the invoice reference."


class _ReadOnly(TenantScopedReadOnlyAdmin):
    """The database refuses UPDATE and DELETE on these tables; the admin offers neither, and a
    tenant's staff see only their own tenant's rows."""

    list_select_related = ["tenant"]


@admin.register(DecisionRecord)
class DecisionRecordAdmin(_ReadOnly):
    list_display = ["decided_at", "tenant", "invoice_ref", "rule_fired", "matched", "churn_risk", "action",
                    "escalated", "source", "rules_version"]
    list_filter = ["tenant", RuleFilter, "matched", RiskFilter, "source", RulesVersionFilter]
    search_fields = ["invoice_ref__prefix"]
    search_help_text = SEARCH_HELP


@admin.register(DecisionOutcome)
class DecisionOutcomeAdmin(_ReadOnly):
    list_display = ["reported_at", "tenant", "invoice_ref", "outcome", "report_key"]
    list_filter = ["tenant", "outcome"]
    search_fields = ["invoice_ref__prefix"]
    search_help_text = SEARCH_HELP


@admin.register(DecisionRefusal)
class DecisionRefusalAdmin(_ReadOnly):
    list_display = ["created_at", "tenant", "gate", "reason", "field"]
    list_filter = ["tenant", "gate", input_filter(title="reason", parameter="reason", lookup="reason")]
