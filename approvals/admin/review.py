"""Read-only admin over sends (but for resolving "delivery unknown"), suppressed sends and
edits, and the refusal review page."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path

from approvals.claims import NOT_DELIVERY_UNKNOWN, send_mark_sent, send_resend
from approvals.models import DraftEdit, EmailSend, SuppressedSend
from approvals.refusals import refusal_list
from approvals.services import APPROVE_PERMISSION, ApprovalError
from paypilot.admin_perf import input_filter
from paypilot.admin_tenancy import TenantScopedReadOnlyAdmin, admin_is_platform, admin_tenant_for

INVOICE_SEARCH_HELP = "Search matches the start (case-sensitive) of the provider's invoice id."


class ReadOnlyScopedAdmin(TenantScopedReadOnlyAdmin):
    """Append-only or machine-written rows: look, never touch."""

    list_select_related = ["tenant"]


@admin.register(SuppressedSend)
class SuppressedSendAdmin(ReadOnlyScopedAdmin):
    list_display = ["created_at", "gate", "reason", "dry_run", "approval", "invoice", "tenant"]
    # Text boxes, not a DISTINCT over every refusal.
    list_filter = [input_filter(title="gate", parameter="gate", lookup="gate"),
                   input_filter(title="reason", parameter="reason", lookup="reason"), "dry_run", "tenant"]
    search_fields = ["invoice__external_invoice_id__prefix"]
    search_help_text = INVOICE_SEARCH_HELP
    list_select_related = ["tenant", "invoice", "approval"]

    def get_urls(self) -> list[Any]:
        return [
            path("review/", self.admin_site.admin_view(self.review_view), name="approvals_refusal_review"),
            *super().get_urls(),
        ]

    def review_view(self, request: HttpRequest) -> HttpResponse:
        """Every refusal of the user's tenant (all tenants for platform admins), newest first."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        tenant = None if admin_is_platform(request.user) else admin_tenant_for(request.user)
        if tenant is None and not admin_is_platform(request.user):
            raise Http404("not found")
        result = refusal_list(tenant=tenant, limit=200)
        return TemplateResponse(request, "admin/approvals/refusal_review.html", {
            **self.admin_site.each_context(request),
            "opts": self.model._meta, "title": "Refusal review",
            "items": result["items"], "sources": result["sources"],
        })


@admin.register(EmailSend)
class EmailSendAdmin(ReadOnlyScopedAdmin):
    """Read-only, except the two ways out of "delivery unknown" (`approvals.claims`), for a
    person who checked the provider's log: mark sent, or resend."""

    list_display = ["created_at", "status", "attempts", "error_code", "sent_at", "delivered_at",
                    "bounced_at", "clicked_at", "approval", "invoice", "tenant"]
    list_filter = ["status", "tenant"]
    search_fields = ["message_id__prefix", "invoice__external_invoice_id__prefix"]
    search_help_text = "Search matches the start (case-sensitive) of the provider's message id or invoice id."
    list_select_related = ["tenant", "invoice", "approval"]
    exclude = ["recipient_hash"]
    actions = ["mark_sent_selected", "resend_selected"]

    def has_approve_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm(APPROVE_PERMISSION))

    def _resolve(self, request: HttpRequest, queryset: QuerySet[Any], *, resend: bool) -> HttpResponse | None:
        verb = "resend" if resend else "mark as sent"
        unknown = list(queryset.filter(status=EmailSend.Status.UNKNOWN).select_related("approval"))
        if request.POST.get("post") != "yes":  # confirm first, like delete_selected
            return TemplateResponse(request, "admin/approvals/emailsend/resolve_confirm.html", {
                **self.admin_site.each_context(request), "opts": self.model._meta,
                "title": f"Confirm: {verb} {len(unknown)} sends", "verb": verb,
                "action": "resend_selected" if resend else "mark_sent_selected",
                "rows": unknown, "queryset": queryset, "resend": resend,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            })
        outcomes: Counter[str] = Counter()
        for send in unknown:
            try:
                (send_resend if resend else send_mark_sent)(send=send, user=request.user)
                outcomes["resent" if resend else "marked_sent"] += 1
            except ApprovalError as error:
                outcomes[error.code] += 1
        skipped = queryset.count() - len(unknown)
        if skipped:
            outcomes[NOT_DELIVERY_UNKNOWN] += skipped
        summary = ", ".join(f"{n} {code.replace('_', ' ')}" for code, n in sorted(outcomes.items()))
        self.message_user(request, f"{verb.capitalize()}: {summary or 'nothing to do'}.", messages.SUCCESS)
        return None

    @admin.action(description="Delivery unknown: found at the provider, mark sent", permissions=["approve"])
    def mark_sent_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        return self._resolve(request, queryset, resend=False)

    @admin.action(description="Delivery unknown: not at the provider, resend", permissions=["approve"])
    def resend_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        return self._resolve(request, queryset, resend=True)


@admin.register(DraftEdit)
class DraftEditAdmin(ReadOnlyScopedAdmin):
    list_display = ["created_at", "approval", "editor", "subject_after", "tenant"]
    list_filter = ["tenant"]
    list_select_related = ["tenant", "approval"]
