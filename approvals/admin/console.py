"""The approval console: the queue of drafts, the review page, approve / reject / edit.

Everything is tenant-scoped through `TenantScopedAdminMixin` (another tenant's draft is a
404), every decision goes through `approvals.services` (which re-checks the approver and
writes the audit event), bulk actions confirm on a page of their own before acting, and
after a single decision the reviewer lands on the next pending draft.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.text import Truncator
from django.views.decorators.http import require_POST

from approvals import labels
from approvals.admin.console_filters import (
    DeliveryUnknownFilter,
    ExpiresFilter,
    LocaleFilter,
    QueueFilter,
    RiskFilter,
    RuleFilter,
    SecondApproverFilter,
    SourceFilter,
)
from approvals.labels import code_html
from approvals.mailer import email_compose
from approvals.models import ApprovalRequest
from approvals.services import (
    APPROVE_PERMISSION,
    WITHDRAWN_BY_STATE,
    ApprovalError,
    approval_approve,
    approval_blocker,
    approval_edit,
    approval_reject,
    approvals_withdraw,
)
from ledger.models import Customer, Invoice
from ledger.money import format_minor
from paypilot.admin_tenancy import TenantScopedAdminMixin, admin_scope_queryset

Status = ApprovalRequest.Status
# The HTML preview's Content-Security-Policy (the review page itself keeps the admin's).
EMAIL_PREVIEW_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src https:; "
                     "base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox")

# How many invoices (and customers) one search may name: a prefix such as "in_" matches
# nearly everything, and the console then shows the requests of the first ones found.
SEARCH_MATCH_LIMIT = 1000
def _span(delta: timedelta) -> str:
    """A duration as a finance person reads it: 45 min, 7 h, 3 d."""
    minutes = max(0, int(delta.total_seconds() // 60))
    if minutes < 90:
        return f"{minutes} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h"
    return f"{minutes // 1440} d"


SEARCH_HELP = ("Search matches the start (case-sensitive) of an invoice id, a customer id, "
               "a customer email or a customer name.")


def _skip_summary(skipped: Counter[str]) -> str:
    return ", ".join(f"{n} {labels.label(labels.REASONS, code).lower()}" for code, n in skipped.most_common())


def _withdraw_closed(selected: list[ApprovalRequest], blockers: dict[int, str]) -> None:
    """Pending requests whose invoice closed before the close hook existed leave the queue now."""
    by_reason: dict[str, list[int]] = {}
    for approval in selected:
        if approval.status == Status.PENDING and blockers[approval.pk] in WITHDRAWN_BY_STATE.values():
            by_reason.setdefault(blockers[approval.pk], []).append(approval.invoice_id)
    for reason, invoice_ids in by_reason.items():
        approvals_withdraw(invoice_ids=invoice_ids, reason=reason)


def _review_labels(obj: ApprovalRequest) -> dict[str, Any]:
    """The review page's codes as words (each with its code in a tooltip)."""
    decision = obj.draft.decision
    return {
        "status": code_html(labels.APPROVAL_STATUSES, obj.status),
        "withdrawn": code_html(labels.WITHDRAWN_REASONS, obj.withdrawn_reason) if obj.withdrawn_reason else "",
        "invoice_state": code_html(labels.INVOICE_STATES, obj.invoice.state),
        "reason": code_html(labels.FAILURE_REASONS, decision.failure_code if decision else obj.invoice.failure_code),
        "action": code_html(labels.ACTIONS, decision.action) if decision else "-",
        "risk": code_html(labels.RISKS, decision.churn_risk) if decision else "-",
        "dropped": labels.dropped_html(obj.draft.dropped_fields),
        "suppressed": [(row, code_html(labels.REASONS, row.reason))
                       for row in obj.suppressed.order_by("-created_at")[:20]],
    }


class EditForm(forms.Form):
    subject = forms.CharField(max_length=300)
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 16, "cols": 90}))
    note = forms.CharField(max_length=1000, required=False)


class ApprovalRequestAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    # Sized for a 1400 px screen: short cells, codes as words with the code in a tooltip
    # (approvals.labels), the subject in the review link's tooltip. Template or LLM and the
    # locale are filters here and facts on the review page.
    list_display = [
        "draft_col", "customer_col", "amount_col", "reason_col", "risk_col", "invoice_col", "age_col",
        "expires_col",
    ]
    list_display_links = None
    list_select_related = ["tenant", "invoice__customer", "draft__decision"]
    list_filter = [
        QueueFilter, ExpiresFilter, SecondApproverFilter, SourceFilter, RiskFilter, RuleFilter, LocaleFilter,
        "high_value", DeliveryUnknownFilter, "tenant",
    ]
    # Answered by `get_search_results` over indexed prefixes (the names only make the admin
    # draw the search box; SEARCH_HELP says what is matched).
    search_fields = ["invoice__external_invoice_id", "invoice__customer__external_id",
                     "invoice__customer__email", "invoice__customer__name"]
    search_help_text = SEARCH_HELP
    # Served by the indexes (tenant, status, expires_at, id) and (tenant, expires_at, id), and
    # under the source filter by their (tenant, source, ...) twins; the other columns sort
    # nothing (a sort by customer name is a sort of every request).
    ordering = ["expires_at", "id"]
    sortable_by = ["expires_col"]
    list_per_page = 50
    actions = ["approve_selected", "reject_selected"]
    change_list_template = "admin/approvals/approvalrequest/change_list.html"

    def get_list_display(self, request: HttpRequest) -> list[Any]:
        """The status column only where the list mixes statuses (the queue is all pending)."""
        columns = list(self.list_display)
        if request.GET.get(QueueFilter.parameter_name, Status.PENDING) != Status.PENDING:
            columns.insert(columns.index("age_col"), "status_col")
        return columns

    # --- columns ---------------------------------------------------------------------------
    @admin.display(description="draft")
    def draft_col(self, obj: ApprovalRequest) -> str:
        url = reverse("admin:approvals_approvalrequest_change", args=[obj.pk])
        high = mark_safe(' <span class="pp-badge high" title="high value: needs two approvers">2&times;</span>') \
            if obj.high_value else ""  # constant markup
        return format_html('<a class="pp-review" href="{}" title="{}">#{} {}</a>{}', url, obj.subject, obj.pk,
                           Truncator(obj.subject).chars(20), high)

    @admin.display(description="customer")
    def customer_col(self, obj: ApprovalRequest) -> str:
        customer = obj.invoice.customer
        if customer is None:
            return "-"
        return format_html('<span title="{} &lt;{}&gt;">{}</span>', customer.name or customer.external_id,
                           customer.email or "no email", customer.name or customer.external_id)

    def customer_text(self, obj: ApprovalRequest) -> str:
        customer = obj.invoice.customer
        if customer is None:
            return "-"
        return f"{customer.name or customer.external_id} <{customer.email or 'no email'}>"

    @admin.display(description="amount", ordering="invoice__amount_minor")
    def amount_col(self, obj: ApprovalRequest) -> str:
        return f"{format_minor(obj.invoice.amount_minor, obj.invoice.currency)} {obj.invoice.currency}"

    @admin.display(description="reason")
    def reason_col(self, obj: ApprovalRequest) -> str:
        decision = obj.draft.decision
        code = decision.failure_code if decision is not None else obj.invoice.failure_code
        if decision is not None and not decision.matched:
            return format_html('{} <span class="pp-muted" title="rule fired: {}">(default rule)</span>',
                               code_html(labels.FAILURE_REASONS, code), decision.rule_fired)
        return code_html(labels.FAILURE_REASONS, code)

    @admin.display(description="risk")
    def risk_col(self, obj: ApprovalRequest) -> str:
        risk = obj.draft.decision.churn_risk if obj.draft.decision else ""
        if not risk:
            return "-"
        return format_html('<span class="pp-badge {}" title="churn risk: {}">{}</span>', risk, risk,
                           labels.label(labels.RISKS, risk))

    @admin.display(description="invoice now")
    def invoice_col(self, obj: ApprovalRequest) -> str:
        """The invoice's live state: a paid invoice is never shown as one to chase."""
        state = obj.invoice.state
        css = "pp-closed" if state in Invoice.TERMINAL_STATES else ""
        return format_html('<span class="{}" title="{} ({})">{}</span>', css, obj.invoice, state,
                           labels.label(labels.INVOICE_STATES, state))

    @admin.display(description="status")
    def status_col(self, obj: ApprovalRequest) -> str:
        text = code_html(labels.APPROVAL_STATUSES, obj.status)
        if obj.status == Status.WITHDRAWN and obj.withdrawn_reason:
            return format_html("{}: {}", text, code_html(labels.WITHDRAWN_REASONS, obj.withdrawn_reason))
        return text

    @admin.display(description="waiting")
    def age_col(self, obj: ApprovalRequest) -> str:
        return format_html('<span title="requested {}">{}</span>', obj.requested_at.isoformat(timespec="minutes"),
                           _span(timezone.now() - obj.requested_at))

    @admin.display(description="expires", ordering="expires_at")
    def expires_col(self, obj: ApprovalRequest) -> str:
        left = obj.expires_at - timezone.now()
        text = "expired" if left.total_seconds() <= 0 else f"in {_span(left)}"
        css = "pp-soon" if 0 < left.total_seconds() <= 86400 else ""
        return format_html('<span class="{}" title="{}">{}</span>', css, obj.expires_at.isoformat(timespec="minutes"),
                           text)

    @admin.display(description="copy")
    def copy_col(self, obj: ApprovalRequest) -> str:
        source = "LLM" if obj.draft.source == "llm" else "template"
        locale = obj.draft.locale or "-"
        if obj.draft.fallback_used:
            return format_html('<span title="the model copy was refused by the guard; the template was used">'
                               "{} {} (swapped)</span>", source, locale)
        return f"{source} {locale}"

    def source_text(self, obj: ApprovalRequest) -> str:
        source = "LLM" if obj.draft.source == "llm" else "template"
        return f"{source} (guard swapped)" if obj.draft.fallback_used else source

    # --- search --------------------------------------------------------------------------
    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Any],
                           search_term: str) -> tuple[QuerySet[Any], bool]:
        """Requests of the invoices whose id, or whose customer's id, email or name, starts
        with the term. Each is an index range (`prefix`); the matching invoice ids are read
        first (at most SEARCH_MATCH_LIMIT), so the queue query itself filters on a list."""
        term = search_term.strip()
        if not term:
            return queryset, False
        user = request.user
        invoices = admin_scope_queryset(Invoice.objects.all(), user=user)
        customers = admin_scope_queryset(Customer.objects.all(), user=user)
        matched = set(invoices.filter(external_invoice_id__prefix=term)
                      .values_list("pk", flat=True)[:SEARCH_MATCH_LIMIT])
        customer_ids: set[int] = set()
        for field in ("external_id", "email", "name"):
            customer_ids.update(customers.filter(**{f"{field}__prefix": term})
                                .values_list("pk", flat=True)[:SEARCH_MATCH_LIMIT])
        if customer_ids:
            matched.update(invoices.filter(customer_id__in=sorted(customer_ids)[:SEARCH_MATCH_LIMIT])
                           .values_list("pk", flat=True)[:SEARCH_MATCH_LIMIT])
        return queryset.filter(invoice_id__in=sorted(matched)), False

    # --- permissions -------------------------------------------------------------------------
    def has_approve_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm(APPROVE_PERMISSION))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # requests are opened by the pipeline, never by hand

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # decisions go through the review page's actions, not a model form

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # --- URLs and views ----------------------------------------------------------------------
    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/approve/", wrap(require_POST(self.approve_view)),
                 name="approvals_approvalrequest_approve"),
            path("<path:object_id>/reject/", wrap(require_POST(self.reject_view)),
                 name="approvals_approvalrequest_reject"),
            path("<path:object_id>/edit/", wrap(self.edit_view),
                 name="approvals_approvalrequest_edit"),
            path("<path:object_id>/email.html", wrap(self.email_html_view),
                 name="approvals_approvalrequest_email_html"),
            *super().get_urls(),
        ]

    def _scoped_object(self, request: HttpRequest, object_id: str) -> ApprovalRequest:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return self.get_object(request, unquote(object_id))  # 404 across tenants

    def _next_url(self, request: HttpRequest, after: ApprovalRequest) -> str:
        """The next pending draft of the queue, or the queue itself when it is empty."""
        following = (
            self.get_queryset(request).filter(status=Status.PENDING).exclude(pk=after.pk)
            .order_by("expires_at", "id").first()
        )
        if following is not None:
            return reverse("admin:approvals_approvalrequest_change", args=[following.pk])
        return reverse("admin:approvals_approvalrequest_changelist")

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        obj = self._scoped_object(request, object_id)
        return TemplateResponse(request, "admin/approvals/approvalrequest/review.html", {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Review draft #{obj.pk}",
            "original": obj,
            "approval": obj,
            "composed": email_compose(approval=obj),
            "amount": self.amount_col(obj),
            "customer": self.customer_text(obj),
            "decision": obj.draft.decision,
            "copy_source": self.source_text(obj),
            "labels": _review_labels(obj),
            "sending_on": settings.PAYPILOT_SEND_EMAIL,
            "send": getattr(obj, "send", None),
            "suppressed": list(obj.suppressed.order_by("-created_at")[:20]),
            "edits": list(obj.edits.order_by("-created_at")[:20]),
            "can_decide": self.has_approve_permission(request) and obj.status == Status.PENDING,
            "waiting_second": obj.high_value and obj.first_approver_id is not None,
        })

    def email_html_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The HTML part as it would leave, for the review page's sandboxed iframe. Its own
        policy: no scripts, no requests but https images (the tenant's logo) and inline
        styles, framed only by our own pages, and `sandbox` even when opened on its own."""
        obj = self._scoped_object(request, object_id)
        response = HttpResponse(email_compose(approval=obj).html_body, content_type="text/html; charset=utf-8")
        response["Content-Security-Policy"] = EMAIL_PREVIEW_CSP
        response["X-Frame-Options"] = "SAMEORIGIN"
        response["Referrer-Policy"] = "no-referrer"  # the logo's host learns nothing of the admin
        # admin_view already marks it never_cache (no-store): it holds a freshly minted link.
        return response

    def _decide(self, request: HttpRequest, object_id: str, approve: bool) -> HttpResponse:
        obj = self._scoped_object(request, object_id)
        if not self.has_approve_permission(request):
            raise PermissionDenied
        note = request.POST.get("note", "")[:1000]
        try:
            if approve:
                outcome = approval_approve(approval=obj, user=request.user, note=note)
            else:
                outcome = approval_reject(approval=obj, user=request.user, note=note)
        except ApprovalError as error:
            self.message_user(request, f"Draft #{obj.pk}: {error.detail} ({error.code}).", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:approvals_approvalrequest_change", args=[obj.pk]))
        self.message_user(request, f"Draft #{obj.pk}: {outcome.replace('_', ' ')}.", messages.SUCCESS)
        return HttpResponseRedirect(self._next_url(request, obj))

    def approve_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._decide(request, object_id, approve=True)

    def reject_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._decide(request, object_id, approve=False)

    def edit_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._scoped_object(request, object_id)
        if not self.has_approve_permission(request):
            raise PermissionDenied
        form = EditForm(request.POST or None, initial={"subject": obj.subject, "body": obj.body})
        refused: list[str] = []
        if request.method == "POST" and form.is_valid():
            try:
                approval_edit(approval=obj, user=request.user, subject=form.cleaned_data["subject"],
                              body=form.cleaned_data["body"])
                if "_approve" in request.POST:
                    outcome = approval_approve(approval=obj, user=request.user,
                                               note=form.cleaned_data["note"])
                    self.message_user(request, f"Draft #{obj.pk}: edited, {outcome.replace('_', ' ')}.",
                                      messages.SUCCESS)
                    return HttpResponseRedirect(self._next_url(request, obj))
                self.message_user(request, f"Draft #{obj.pk}: edit saved.", messages.SUCCESS)
                return HttpResponseRedirect(
                    reverse("admin:approvals_approvalrequest_change", args=[obj.pk])
                )
            except ApprovalError as error:
                refused = error.reasons or [error.code]
                form.add_error(None, f"{error.detail}: {', '.join(refused)}")
        return TemplateResponse(request, "admin/approvals/approvalrequest/edit.html", {
            **self.admin_site.each_context(request),
            "opts": self.model._meta, "title": f"Edit draft #{obj.pk}", "original": obj,
            "approval": obj, "form": form, "refused": refused,
        })

    # --- bulk actions (confirm first, like delete_selected) --------------------------------
    def _bulk(self, request: HttpRequest, queryset: QuerySet[Any], approve: bool) -> HttpResponse | None:
        """Decide the selected drafts that can still be decided; skip the rest and say how
        many and why (already decided, expired, withdrawn, or their invoice has closed)."""
        verb = "approve" if approve else "reject"
        selected = list(queryset)
        blockers = {a.pk: approval_blocker(approval=a) for a in selected}
        ready = [a for a in selected if not blockers[a.pk]]
        skipped = Counter(code for code in blockers.values() if code)
        if request.POST.get("post") != "yes":
            return TemplateResponse(request, "admin/approvals/approvalrequest/bulk_confirm.html", {
                **self.admin_site.each_context(request),
                "opts": self.model._meta, "title": f"Confirm: {verb} {len(ready)} drafts",
                "verb": verb, "action": f"{verb}_selected", "queryset": selected,
                "rows": [(a, self.customer_text(a), self.amount_col(a),
                          labels.label(labels.REASONS, blockers[a.pk]) if blockers[a.pk] else "")
                         for a in selected],
                "pending_count": len(ready), "skipped": _skip_summary(skipped),
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            })
        _withdraw_closed(selected, blockers)
        note = request.POST.get("note", "")[:1000]
        outcomes: Counter[str] = Counter()
        for approval in ready:
            try:
                if approve:
                    outcomes[approval_approve(approval=approval, user=request.user, note=note)] += 1
                else:
                    outcomes[approval_reject(approval=approval, user=request.user, note=note)] += 1
            except ApprovalError as error:  # decided or closed since the page was drawn
                skipped[error.code] += 1
        done = ", ".join(f"{n} {code.replace('_', ' ')}" for code, n in sorted(outcomes.items()))
        message = f"Bulk {verb}: {done or 'nothing decided'}."
        if skipped:
            message += f" Skipped {sum(skipped.values())} that cannot be {verb}d: {_skip_summary(skipped)}."
        self.message_user(request, message, messages.WARNING if skipped else messages.SUCCESS)
        return None

    @admin.action(description="Approve selected drafts", permissions=["approve"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        return self._bulk(request, queryset, approve=True)

    @admin.action(description="Reject selected drafts", permissions=["approve"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        return self._bulk(request, queryset, approve=False)
