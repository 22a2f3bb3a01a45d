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
from django.urls import path, reverse
from django.utils.html import format_html

from approvals import labels
from approvals.claims import NOT_DELIVERY_UNKNOWN, send_mark_sent, send_resend
from approvals.labels import code_html
from approvals.models import ApprovalRequest, DraftEdit, EmailSend, SuppressedSend
from approvals.refusals import Refusal, refusal_list
from approvals.services import APPROVE_PERMISSION, ApprovalError
from ledger.models import Invoice
from paypilot.admin_perf import input_filter
from paypilot.admin_tenancy import TenantScopedReadOnlyAdmin, admin_is_platform, admin_tenant_for

INVOICE_SEARCH_HELP = "Search matches the start (case-sensitive) of the provider's invoice id."


class ReadOnlyScopedAdmin(TenantScopedReadOnlyAdmin):
    """Append-only or machine-written rows: look, never touch."""

    list_select_related = ["tenant"]


@admin.register(SuppressedSend)
class SuppressedSendAdmin(ReadOnlyScopedAdmin):
    list_display = ["created_at", "gate_col", "reason_col", "dry_run", "draft_col", "invoice", "tenant"]
    # Text boxes, not a DISTINCT over every refusal.
    list_filter = [input_filter(title="gate", parameter="gate", lookup="gate"),
                   input_filter(title="reason", parameter="reason", lookup="reason"), "dry_run", "tenant"]
    search_fields = ["invoice__external_invoice_id__prefix"]
    search_help_text = INVOICE_SEARCH_HELP
    list_select_related = ["tenant", "invoice", "approval"]

    @admin.display(description="gate")
    def gate_col(self, obj: SuppressedSend) -> str:
        return code_html(labels.GATES, obj.gate)

    @admin.display(description="reason")
    def reason_col(self, obj: SuppressedSend) -> str:
        return code_html(labels.REASONS, obj.reason)

    @admin.display(description="draft")
    def draft_col(self, obj: SuppressedSend) -> str:
        return format_html('<a href="{}">draft #{}</a>',
                           reverse("admin:approvals_approvalrequest_change", args=[obj.approval_id]), obj.approval_id)

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
            "items": _refusal_rows(result["items"]),
            "sources": [(labels.label(labels.REFUSAL_SOURCES, name), name, info)
                        for name, info in result["sources"].items()],
        })


def _refusal_rows(items: list[Refusal]) -> list[dict[str, Any]]:
    """Each refusal in words, with links to its draft, invoice and customer (the invoices
    are read in one query for the whole page)."""
    invoice_ids = {item.ids["invoice_id"] for item in items if item.ids.get("invoice_id")}
    invoices = Invoice.objects.in_bulk(sorted(invoice_ids))
    draft_approvals = dict(ApprovalRequest.objects.filter(draft_id__in=[
        item.ids["draft"] for item in items if item.ids.get("draft")]).values_list("draft_id", "pk"))
    rows = []
    for item in items:
        links: list[tuple[str, str]] = []
        approval = item.ids.get("approval") or draft_approvals.get(item.ids.get("draft") or 0)
        if approval:
            links.append((f"draft #{approval}", reverse("admin:approvals_approvalrequest_change", args=[approval])))
        elif item.ids.get("draft"):
            links.append((f"draft {item.ids['draft']}",
                          reverse("admin:dunning_draft_change", args=[item.ids["draft"]])))
        invoice = invoices.get(item.ids.get("invoice_id"))
        if invoice is not None:
            links.append((f"invoice {invoice.external_invoice_id}",
                          reverse("admin:ledger_invoice_change", args=[invoice.pk])))
            if invoice.customer_id:
                links.append(("customer", reverse("admin:ledger_customer_change", args=[invoice.customer_id])))
        if item.ids.get("decision"):
            links.append((f"decision {item.ids['decision']}",
                          reverse("admin:decisions_decisionrecord_change", args=[item.ids["decision"]])))
        if item.ids.get("send"):
            links.append((f"send {item.ids['send']}",
                          reverse("admin:approvals_emailsend_change", args=[item.ids["send"]])))
        reasons = [code_html(labels.REASONS, code) for code in item.reason.split(",")]
        rows.append({
            "item": item, "source": labels.label(labels.REFUSAL_SOURCES, item.source),
            "gate": code_html(labels.GATES, item.gate), "reasons": reasons, "links": links,
            "dry_run": item.ids.get("dry_run", False),
            "other_ids": {k: v for k, v in item.ids.items()
                          if k in ("refusal_id", "field", "invoice_ref", "failure_code", "attempts")},
        })
    return rows


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
