"""The "Payments review" page (a stored run, its breaks, disputes due and to-do list) and breaks
with assign / resolve (both audited; resolving never touches imported rows)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from paypilot.admin_perf import choices_filter, pairs
from paypilot.admin_tenancy import TenantScopedAdminMixin, TenantScopedReadOnlyAdmin, admin_tenant_for
from paypilot.money import format_minor
from paypilot.tenancy import tenant_context
from reconciliation.engine import BREAK_KINDS
from reconciliation.models import Break, Run
from reconciliation.selectors import review_csv, run_latest
from reconciliation.services.disputes import dispute_list
from reconciliation.services.review import morning_review, todo_marked
from reconciliation.services.runs import break_assign, break_resolve, input_digest


def _actor(request: HttpRequest) -> str:
    return f"user:{request.user.pk}"


@admin.register(Run)
class RunAdmin(TenantScopedReadOnlyAdmin):
    list_display = ("as_of", "created_at", "match_rate", "breaks_count", "input_digest", "tenant")
    list_filter = ("tenant",)
    date_hierarchy = None

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("review/", wrap(self.latest_view), name="reconciliation_run_latest"),
            path("<path:object_id>/csv/", wrap(self.csv_view), name="reconciliation_run_csv"),
            path("<path:object_id>/refresh/", wrap(require_POST(self.refresh_view)), name="reconciliation_run_refresh"),
            path("<path:object_id>/break/<int:break_id>/", wrap(require_POST(self.break_view)),
                 name="reconciliation_run_break"),
            *super().get_urls(),
        ]

    def latest_view(self, request: HttpRequest) -> HttpResponse:
        tenant = admin_tenant_for(request.user)
        run = run_latest(tenant=tenant) if tenant else self.get_queryset(request).order_by("-created_at").first()
        if run is None:
            self.message_user(request, "No run yet: run `manage.py recon_run --tenant T --as-of DATE`.",
                              messages.WARNING)
            return HttpResponseRedirect(reverse("admin:reconciliation_run_changelist"))
        return HttpResponseRedirect(reverse("admin:reconciliation_run_change", args=[run.pk]))

    def _scoped(self, request: HttpRequest, object_id: str) -> Run:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return self.get_object(request, unquote(object_id))  # 404 across tenants

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        run = self._scoped(request, object_id)
        result = json.loads(run.result_json)
        breaks = list(run.breaks.select_related("assignee", "contract_version").order_by("position"))
        with tenant_context(run.tenant):
            # Disputes are read live (file rows and webhook rows), so a chargeback that
            # arrived after this run is on the page the next morning.
            open_disputes = dispute_list(tenant=run.tenant, as_of=run.as_of, status="open")
            stale = input_digest(tenant=run.tenant, as_of=run.as_of) != run.input_digest
        by_id = {d["dispute_id"]: d for d in open_disputes}
        due_ids = [d["dispute_id"] for d in result["disputes_due"]]
        by_charge = {d["charge_id"]: d for d in open_disputes if d["charge_id"]}
        return TemplateResponse(request, "admin/reconciliation/run/review.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "original": run,
            "title": f"Payments review as of {run.as_of}", "run": run, "result": result,
            "money": [f"{format_minor(v, c)} {c}" for c, v in result["money_in_breaks_minor"].items()],
            "rows": [{"b": b, "amount": f"{format_minor(b.amount_minor, b.currency)} {b.currency}"} for b in breaks],
            "can_act": request.user.has_perm("reconciliation.change_break"),
            "disputes_due": [by_id[i] for i in due_ids if i in by_id],
            "disputes_other": [d for d in open_disputes if d["dispute_id"] not in due_ids],
            "todo": todo_marked(result["todo"], by_charge), "stale": stale,
            "can_refresh": request.user.has_perm("reconciliation.add_run"),
        })

    def refresh_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Run again for the same as-of date with the current inputs (through the run service)."""
        run = self._scoped(request, object_id)
        if not request.user.has_perm("reconciliation.add_run"):
            raise PermissionDenied
        review = morning_review(tenant=run.tenant, as_of=run.as_of, store=True, actor=_actor(request))
        self.message_user(request, f"Review as of {run.as_of} is run {review['run']['id']}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:reconciliation_run_change", args=[review["run"]["id"]]))

    def csv_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        run = self._scoped(request, object_id)
        response = HttpResponse(review_csv(run=run), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="payments-review-{run.as_of}.csv"'
        return response

    def break_view(self, request: HttpRequest, object_id: str, break_id: int) -> HttpResponse:
        run = self._scoped(request, object_id)
        if not request.user.has_perm("reconciliation.change_break"):
            raise PermissionDenied
        brk = run.breaks.filter(pk=break_id).first()
        if brk is None:
            raise PermissionDenied
        back = HttpResponseRedirect(reverse("admin:reconciliation_run_change", args=[run.pk]))
        if "_assign" in request.POST:
            break_assign(brk=brk, user=request.user, actor=_actor(request))
            self.message_user(request, f"Break {brk.position + 1} assigned to you.", messages.SUCCESS)
        elif "_resolve" in request.POST:
            note = request.POST.get("note", "")[:2000]
            try:
                done = break_resolve(brk=brk, note=note, actor=_actor(request))
            except ValueError as exc:
                self.message_user(request, str(exc), messages.ERROR)
                return back
            self.message_user(request, f"Break {brk.position + 1} resolved." if done else "Already resolved.",
                              messages.SUCCESS)
        return back


class ResolveForm(forms.Form):
    note = forms.CharField(widget=forms.Textarea, max_length=2000, help_text="why this break is closed")


@admin.register(Break)
class BreakAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("kind", "amount_col", "status", "assignee", "run", "explanation")
    # The break kinds are the engine's fixed list, not the distinct values of the table.
    list_filter = ("status", choices_filter(title="kind", parameter="kind", lookup="kind",
                                            choices=lambda: pairs(BREAK_KINDS)), "tenant")
    list_select_related = ("run", "assignee")
    search_fields = ("explanation",)
    readonly_fields = ("tenant", "run", "position", "kind", "amount_minor", "currency", "refs", "explanation",
                       "contract_version", "status", "assignee", "resolution_note", "resolved_at", "resolved_by")
    actions = ["assign_to_me", "resolve_selected"]

    @admin.display(description="amount")
    def amount_col(self, obj: Break) -> str:
        return f"{format_minor(obj.amount_minor, obj.currency)} {obj.currency}"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # breaks come from runs

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Assign to me", permissions=["change"])
    def assign_to_me(self, request: HttpRequest, queryset: QuerySet[Break]) -> None:
        count = 0
        for brk in queryset:
            break_assign(brk=brk, user=request.user, actor=_actor(request))
            count += 1
        self.message_user(request, f"{count} break(s) assigned to you.", messages.SUCCESS)

    @admin.action(description="Resolve with a note", permissions=["change"])
    def resolve_selected(self, request: HttpRequest, queryset: QuerySet[Break]) -> HttpResponse | None:
        """Asks for the note first (like delete_selected's confirmation), then resolves."""
        form = ResolveForm(request.POST if "note" in request.POST else None)
        if form.is_bound and form.is_valid():
            done = sum(break_resolve(brk=b, note=form.cleaned_data["note"], actor=_actor(request)) for b in queryset)
            self.message_user(request, f"{done} break(s) resolved.", messages.SUCCESS)
            return None
        return TemplateResponse(request, "admin/reconciliation/break/resolve.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "title": "Resolve breaks",
            "breaks": queryset, "form": form, "action": "resolve_selected",
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        })
