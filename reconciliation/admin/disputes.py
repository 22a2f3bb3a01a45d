"""Disputes in the admin: each one triaged with its evidence-pack draft (Markdown export), and
the refund check. Read-only pages: nothing here submits evidence or refunds anything."""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone

from paypilot.admin_perf import choices_filter
from paypilot.admin_tenancy import TenantScopedReadOnlyAdmin, admin_tenant_for
from paypilot.models import Tenant
from paypilot.money import currency_normalise, to_minor
from paypilot.tenancy import tenant_context
from reconciliation.engine import money
from reconciliation.models import DisputeRow
from reconciliation.services.disputes import dispute_triage
from reconciliation.services.errors import ReconLookupError
from reconciliation.services.evidence import evidence_pack_draft
from reconciliation.services.facts import AWAITING_RESPONSE, CLOSED, UNDER_REVIEW
from reconciliation.services.refunds import refund_check


def _as_of(request: HttpRequest) -> date:
    try:
        return date.fromisoformat(request.GET.get("as_of", ""))
    except ValueError:
        return timezone.now().date()


class RefundCheckForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), required=False,
                                    help_text="platform admins only: whose data to check")
    order_id = forms.CharField(required=False, max_length=128)
    charge_id = forms.CharField(required=False, max_length=128)
    amount = forms.CharField(required=False, max_length=32,
                             help_text="major units, e.g. 65.00; empty: all that is left")
    currency = forms.CharField(required=False, max_length=3)
    as_of = forms.DateField(required=False, help_text="YYYY-MM-DD; empty: today")


def _status_choices() -> list[tuple[str, str]]:
    return [(word, word.replace("_", " ")) for word in sorted(AWAITING_RESPONSE | UNDER_REVIEW | CLOSED)]


@admin.register(DisputeRow)
class DisputeRowAdmin(TenantScopedReadOnlyAdmin):
    list_display = ("dispute_id", "amount_col", "reason", "status", "evidence_due_by", "source", "charge_id",
                    "tenant")
    # Status is the provider's own word (free text): a fixed list of the words we know, so
    # drawing the filter never runs a DISTINCT over the table.
    list_filter = ("source", choices_filter(title="status", parameter="status", lookup="status",
                                            choices=_status_choices), "tenant")
    search_fields = ("dispute_id", "charge_id")
    list_select_related = ("tenant",)

    @admin.display(description="amount")
    def amount_col(self, obj: DisputeRow) -> str:
        return money(obj.amount_minor, obj.currency)

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("refund-check/", wrap(self.refund_check_view), name="reconciliation_refund_check"),
            path("<path:object_id>/evidence.md", wrap(self.markdown_view), name="reconciliation_dispute_markdown"),
            *super().get_urls(),
        ]

    def _pack(self, request: HttpRequest, object_id: str) -> tuple[DisputeRow, dict[str, Any]]:
        if not self.has_view_permission(request):
            raise PermissionDenied
        row = self.get_object(request, unquote(object_id))  # None across tenants
        if row is None:
            raise Http404("no such dispute")
        with tenant_context(row.tenant):
            pack = evidence_pack_draft(tenant=row.tenant, dispute_id=row.dispute_id, as_of=_as_of(request))
        return row, pack

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        row, pack = self._pack(request, object_id)
        with tenant_context(row.tenant):
            triage = dispute_triage(tenant=row.tenant, dispute_id=row.dispute_id, as_of=_as_of(request))
        return TemplateResponse(request, "admin/reconciliation/disputerow/triage.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "original": row,
            "title": f"Dispute {row.dispute_id}", "row": row, "triage": triage, "pack": pack,
            "as_of": pack["as_of"],
        })

    def markdown_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        row, pack = self._pack(request, object_id)
        response = HttpResponse(pack["markdown"], content_type="text/markdown; charset=utf-8")
        safe = "".join(ch for ch in row.dispute_id if ch.isalnum() or ch in "-_")[:64] or "dispute"
        response["Content-Disposition"] = f'attachment; filename="evidence-pack-{safe}.md"'
        return response

    def refund_check_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        own = admin_tenant_for(request.user)
        form = RefundCheckForm(request.GET or None)
        tenant_field = form.fields["tenant"]
        assert isinstance(tenant_field, forms.ModelChoiceField)
        tenant_field.queryset = Tenant.objects.all() if own is None else Tenant.objects.none()
        answer: dict[str, Any] | None = None
        error = ""
        if form.is_bound and form.is_valid():
            data = form.cleaned_data
            tenant = own or data["tenant"]
            try:
                if tenant is None:
                    raise ReconLookupError("tenant_required", "choose the tenant")
                currency = currency_normalise(data["currency"]) if data["currency"] else None
                amount = None
                if data["amount"]:
                    if currency is None:
                        raise ReconLookupError("invalid_currency", "an amount needs its currency")
                    amount = to_minor(data["amount"], currency)
                with tenant_context(tenant):
                    answer = refund_check(tenant=tenant, order_id=data["order_id"] or None,
                                          charge_id=data["charge_id"] or None, amount_minor=amount,
                                          currency=currency, as_of=data["as_of"])
            except ReconLookupError as exc:
                error = f"{exc.reason}: {exc.detail}"
            except ValueError as exc:
                error = f"invalid_amount: {exc}"
        return TemplateResponse(request, "admin/reconciliation/disputerow/refund_check.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "title": "Refund check",
            "form": form, "answer": answer, "error": error,
        })
