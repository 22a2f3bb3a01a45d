"""Admin of the decisions app: the append-only audit tables (read-only) and the tenant rule
versions (draft editing within the guard rails, four-eyes approval, shadow replay page)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from decisions import services, versions
from decisions.models import DecisionOutcome, DecisionRecord, DecisionRefusal, RuleVersion, RuleVersionRow
from decisions.rules import CHURN_RISKS, RULES
from decisions.selectors import rule_table_for_version
from decisions.shadow import shadow_replay
from decisions.tables import ESCALATION_LEVELS, TableRow
from paypilot.admin_perf import choices_filter, input_filter, pairs
from paypilot.admin_tenancy import (
    TenantScopedModelAdmin,
    TenantScopedReadOnlyAdmin,
    admin_is_platform,
    admin_tenant_for,
)

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
                    "escalated", "source", "rules_version", "rule_version_id", "network_rules_col"]

    @admin.display(description="network rules")
    def network_rules_col(self, obj: DecisionRecord) -> str:
        """The card-network rules that shaped the decision, each with where it comes from."""
        return format_html_join(
            ", ", '<a href="{}" title="{}">{}</a>',
            ((rule.get("source_url", ""), f'{rule.get("summary", "")} ({rule.get("source", "")})',
              rule.get("rule_id", "")) for rule in obj.network_rules or []),
        ) or "-"
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


class RuleVersionRowForm(forms.ModelForm):  # type: ignore[type-arg]
    """One row of a draft; the guard rails run here, and a refusal names the rule it breaks."""

    action = forms.ChoiceField(choices=[(a, a) for a in versions.ACTIONS])
    escalate_at = forms.ChoiceField(choices=[(e, e) for e in ESCALATION_LEVELS],
                                    help_text="churn risk from which the wait tightens to max(1, days - 1)")

    class Meta:
        model = RuleVersionRow
        fields = ["action", "retry_in_days", "max_attempts", "offer", "escalate_at"]
        widgets = {"offer": forms.Textarea(attrs={"rows": 2, "cols": 60})}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        row = TableRow(action=data["action"], retry_in_days=data["retry_in_days"], offer=data["offer"],
                       escalate_at=data["escalate_at"], max_attempts=data.get("max_attempts"))
        try:
            versions.row_check(failure_code=self.instance.failure_code, row=row)
        except versions.GuardRailError as exc:
            raise ValidationError({exc.field: str(exc)}, code=exc.reason) from exc
        return data


class RuleVersionRowInline(admin.TabularInline):  # type: ignore[type-arg]
    model = RuleVersionRow
    form = RuleVersionRowForm
    extra = 0
    can_delete = False
    readonly_fields = ["failure_code"]
    fields = ["failure_code", "action", "retry_in_days", "max_attempts", "offer", "escalate_at"]

    # The rows follow the version: the fixed set of codes, editable while it is a draft.
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm("decisions.view_ruleversion"))

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm("decisions.change_ruleversion")
                    and obj is not None and obj.status == RuleVersion.Status.DRAFT)


@admin.register(RuleVersion)
class RuleVersionAdmin(TenantScopedModelAdmin):
    list_display = ["number", "tenant", "status", "digest", "note", "created_at", "activated_at", "shadow_link"]
    list_filter = ["tenant", "status"]
    list_select_related = ["tenant"]
    actions = ["approve_versions", "copy_to_draft"]
    readonly_fields = ["number", "status", "digest", "created_by_id", "edited_by_id", "created_at",
                       "activated_at", "approval_round", "approvals_col", "shadow_link"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["tenant", "note"] if admin_is_platform(request.user) else ["note"]
        return ["tenant", "note", *self.readonly_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [] if obj is None else ["tenant", *self.readonly_fields]

    def get_inlines(self, request: HttpRequest, obj: Any) -> list[Any]:
        return [] if obj is None else [RuleVersionRowInline]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # decisions name versions; a version is retired, never deleted

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return bool(allowed and (obj is None or obj.status == RuleVersion.Status.DRAFT))

    def has_approve_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm(services.APPROVE_RULES_PERMISSION))

    def save_model(self, request: HttpRequest, obj: RuleVersion, form: Any, change: bool) -> None:
        if change:
            obj.edited_by_id = request.user.pk
            super().save_model(request, obj, form, change)
            return
        tenant = form.cleaned_data.get("tenant") if admin_is_platform(request.user) else admin_tenant_for(request.user)
        if tenant is None:
            raise PermissionDenied
        # A new version starts as a copy of the built-in table, written through the service
        # (rows and audit event in this transaction).
        created = services.rule_version_create(tenant=tenant, user_id=request.user.pk, note=obj.note)
        obj.__dict__.update({k: v for k, v in created.__dict__.items() if not k.startswith("_")})
        obj._state.adding = False

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        if change and any(fs.has_changed() for fs in formsets):
            try:
                services.rule_version_edited(version=form.instance, user_id=request.user.pk)
            except services.RuleVersionRefused as exc:
                raise PermissionDenied(str(exc)) from exc

    @admin.display(description="approvals this round")
    def approvals_col(self, obj: RuleVersion) -> str:
        ids = obj.approvals.filter(approval_round=obj.approval_round).values_list("user_id", flat=True)
        return ", ".join(f"user {i}" for i in ids) or "-"

    @admin.display(description="shadow replay")
    def shadow_link(self, obj: RuleVersion) -> str:
        if obj.pk is None:
            return "-"
        url = reverse("admin:decisions_ruleversion_shadow", args=[obj.pk])
        return format_html('<a href="{}?days=30">last 30 days</a>', url)

    @admin.action(description="Approve the selected versions (two different approvers activate one)",
                  permissions=["approve"])
    def approve_versions(self, request: HttpRequest, queryset: QuerySet[RuleVersion]) -> None:
        for version in queryset:
            try:
                result = services.rule_version_approve(version=version, user=request.user)
            except services.RuleVersionRefused as exc:
                self.message_user(request, f"v{version.number}: refused ({exc.reason}): {exc}", messages.ERROR)
                continue
            if result.activated:
                self.message_user(request, f"v{version.number} is now active ({result.version.digest})",
                                  messages.SUCCESS)
            else:
                self.message_user(request, f"v{version.number}: approval {result.approvals} of "
                                           f"{services.APPROVALS_NEEDED} recorded", messages.INFO)

    @admin.action(description="Copy the selected versions into new drafts", permissions=["add"])
    def copy_to_draft(self, request: HttpRequest, queryset: QuerySet[RuleVersion]) -> None:
        for version in queryset:
            draft = services.rule_version_create(tenant=version.tenant, user_id=request.user.pk,
                                                 based_on=version, note=f"copy of v{version.number}")
            self.message_user(request, f"v{draft.number} drafted from v{version.number}", messages.SUCCESS)

    def get_urls(self) -> list[Any]:
        return [path("<int:object_id>/shadow/", self.admin_site.admin_view(self.shadow_view),
                     name="decisions_ruleversion_shadow"), *super().get_urls()]

    def shadow_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """The shadow replay of one version over the tenant's last N days (reads only)."""
        version = self.get_object(request, str(object_id))  # 404 for another tenant's, audited
        if not self.has_view_permission(request, version):
            raise PermissionDenied
        try:
            days = int(request.GET.get("days", "30"))
            report = shadow_replay(tenant=version.tenant, candidate=rule_table_for_version(version=version),
                                   days=days).as_dict()
            error = ""
        except (ValueError, versions.GuardRailError) as exc:
            report, error = None, str(exc)
        return TemplateResponse(request, "admin/decisions/ruleversion_shadow.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "original": version,
            "title": f"Shadow replay of v{version.number}", "report": report, "error": error,
        })
