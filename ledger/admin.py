"""Ledger admin: invoices read-only with their transitions and refunds inline, refunds and
inconsistencies read-only, customers editable by tenant admins, and the recovery report page
with its charts."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from ledger.models import Customer, Invoice, InvoiceRefund, InvoiceTransition, LedgerInconsistency, PaidBeforeFailure
from ledger.money import format_minor
from ledger.selectors import report_build
from ledger.services import customer_update
from ledger.services.holdout import tenant_holdout_set
from ledger.views import report_context, report_csv_response
from paypilot.admin_perf import choices_filter, input_filter, pairs, upper
from paypilot.admin_tenancy import ReadOnlyAdminMixin, TenantScopedAdminMixin, admin_is_platform, admin_tenant_for
from paypilot.models import Tenant


def admin_tenants_for(user: Any) -> models.QuerySet[Tenant]:
    """Tenants `user` may see in the ledger admin: all for platform admins, their own for
    members, none otherwise (fail closed)."""
    if admin_is_platform(user):
        return Tenant.objects.order_by("slug")
    tenant = admin_tenant_for(user)
    return Tenant.objects.filter(pk=tenant.pk) if tenant else Tenant.objects.none()


class HoldoutForm(forms.Form):
    """The tenant's holdout: blank percentage = the default (PAYPILOT_HOLDOUT_PCT)."""

    pct = forms.IntegerField(label="Holdout %", min_value=0, max_value=100, required=False)
    start = forms.DateField(label="From (a Monday keeps whole cohorts)", required=False,
                            widget=forms.DateInput(attrs={"type": "date"}))


def holdout_may_change(user: Any) -> bool:
    return bool(user.is_active and (user.is_superuser or user.has_perm("paypilot.change_tenant")))


# The providers that write the ledger (Invoice.provider): a fixed table, so the filter runs
# no DISTINCT over a million invoices.
LEDGER_PROVIDERS = ("api", "chargebee", "recharge", "stripe")
ProviderFilter = choices_filter(title="provider", parameter="provider", lookup="provider",
                                choices=lambda: pairs(LEDGER_PROVIDERS))
# ISO 4217 has about 180 codes: a text box, not a list read from the rows.
CurrencyFilter = input_filter(title="currency", parameter="currency", lookup="currency", normalise=upper)


class InvoiceTransitionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = InvoiceTransition
    # occurred_at: the provider's event time; created_at: when PayPilot applied it. Shown in
    # event order, so a backlog processed late reads as it happened.
    fields = ("occurred_at", "created_at", "from_state", "to_state", "cause", "event_ref")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["occurred_at", "id"]


class InvoiceRefundInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = InvoiceRefund
    fields = ("occurred_at", "created_at", "amount_minor", "currency", "refund_ref", "event_ref")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["occurred_at", "id"]


@admin.register(Invoice)
class InvoiceAdmin(TenantScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only: the ledger changes only through its services (webhooks, sends, clicks)."""

    list_display = ["external_invoice_id", "tenant", "provider", "state", "arm", "amount",
                    "currency", "failure_code", "attempt_count", "failed_at", "recovered_at"]
    # Fixed values only (choices, a date range, a text box): no DISTINCT, and no
    # date_hierarchy, whose year/month links were a DISTINCT over every invoice's date.
    list_filter = ["state", "arm", CurrencyFilter, ProviderFilter, "failed_at", "tenant"]
    list_select_related = ["tenant"]
    # Each an index range (paypilot.admin_perf.Prefix), never a LIKE '%term%' scan.
    search_fields = ["external_invoice_id__prefix", "subscription_id__prefix",
                     "provider_customer_id__prefix"]
    search_help_text = ("Search matches the start (case-sensitive) of the provider's invoice id, "
                        "subscription id or customer id.")
    # Served by the index (tenant, failed_at); other columns do not sort (a sort of a million rows).
    ordering = ["-failed_at", "-id"]
    sortable_by = ["failed_at"]
    raw_id_fields = ["customer"]
    inlines = [InvoiceTransitionInline, InvoiceRefundInline]
    readonly_fields = ["tenant", "provider", "external_invoice_id", "customer", "amount_minor",
                       "currency", "state", "arm", "failure_code", "attempt_count",
                       "subscription_id", "provider_customer_id", "hosted_invoice_url",
                       "failed_at", "failed_recorded_at", "updated_at", "first_messaged_at",
                       "recovered_at", "recovered_recorded_at", "recovered_minor", "refunded_minor",
                       "closed_at", "inconsistencies"]

    @admin.display(description="inconsistencies")
    def inconsistencies(self, obj: Invoice) -> str:
        """How many events the ledger refused or capped for this invoice, linked to them."""
        count = LedgerInconsistency.objects.filter(tenant_id=obj.tenant_id, invoice=obj).count()
        if not count:
            return "none"
        url = reverse("admin:ledger_ledgerinconsistency_changelist")
        return format_html('<a href="{}?invoice__id__exact={}">{} recorded</a>', url, obj.pk, count)

    @admin.display(description="amount", ordering="amount_minor")
    def amount(self, obj: Invoice) -> str:
        return format_minor(obj.amount_minor, obj.currency)

    def get_urls(self) -> list[URLPattern]:
        report = path("report/", self.admin_site.admin_view(self.report_view), name="ledger_report")
        return [report, *super().get_urls()]

    def report_view(self, request: HttpRequest) -> HttpResponse:
        """The recovery report with its charts, for one tenant the user may see; `?format=csv`
        downloads it; a POST sets the tenant's holdout (audited)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        tenants = admin_tenants_for(request.user)
        wanted = request.GET.get("tenant", "") or request.POST.get("tenant", "")
        tenant = (tenants.filter(slug=wanted).first() if wanted else None) or tenants.first()
        if request.method == "POST":
            return self._holdout_post(request, tenant)
        report = report_build(tenant=tenant) if tenant is not None else None
        if tenant is not None and report is not None and request.GET.get("format") == "csv":
            return report_csv_response(report, filename=f"recovery-report-{tenant.slug}.csv")
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "title": "Recovery report",
            "tenants": list(tenants),
            "tenant": tenant,
            "holdout_form": HoldoutForm(initial={"pct": tenant.holdout_pct, "start": tenant.holdout_start})
            if tenant is not None and holdout_may_change(request.user) else None,
        }
        if report is not None:
            context.update(report_context(report))
        return TemplateResponse(request, "admin/ledger/report.html", context)

    def _holdout_post(self, request: HttpRequest, tenant: Tenant | None) -> HttpResponse:
        if tenant is None or not holdout_may_change(request.user):
            raise PermissionDenied
        form = HoldoutForm(request.POST)
        if not form.is_valid():
            errors = "; ".join(f"{name}: {' '.join(str(e) for e in errs)}" for name, errs in form.errors.items())
            self.message_user(request, f"Holdout not changed: {errors}", level=messages.ERROR)
        elif tenant_holdout_set(tenant=tenant, pct=form.cleaned_data["pct"], start=form.cleaned_data["start"],
                                actor=f"user:{request.user.pk}"):
            self.message_user(request, "Holdout changed: it applies to invoices first seen from now on; "
                                       "stored arms never move.", level=messages.SUCCESS)
        else:
            self.message_user(request, "Holdout unchanged.", level=messages.INFO)
        return HttpResponseRedirect(f"{reverse('admin:ledger_report')}?tenant={tenant.slug}")


@admin.register(Customer)
class CustomerAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Editable by tenant admins only: platform admins (superusers), or a tenant's staff member
    (approvals.AdminMembership) holding `ledger.change_customer`, e.g. through a "tenant
    admins" group; scoped to their own tenant by the mixin. Customers are created by the
    ledger services, never by hand, and never deleted here."""

    list_display = ["external_id", "tenant", "name", "plan", "currency", "locale", "updated_at"]
    list_filter = ["tenant", input_filter(title="plan", parameter="plan", lookup="plan"), CurrencyFilter]
    list_select_related = ["tenant"]
    search_fields = ["external_id__prefix", "name__prefix", "email__prefix"]
    search_help_text = "Search matches the start (case-sensitive) of the customer id, name or email."
    # The unique index (tenant, external_id) serves it, and it is a total order.
    ordering = ["tenant_id", "external_id"]
    sortable_by = ["external_id"]
    readonly_fields = ["tenant", "external_id", "created_at", "updated_at"]
    fields = ["tenant", "external_id", "name", "email", "plan", "mrr_minor", "currency",
              "locale", "payment_history", "created_at", "updated_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        user = request.user
        return bool(user.is_active and (user.is_superuser or user.has_perm("ledger.change_customer")))

    def save_model(self, request: HttpRequest, obj: Customer, form: Any, change: bool) -> None:
        changed = {name: form.cleaned_data[name] for name in form.changed_data}
        customer_update(customer=obj, actor=f"user:{request.user.pk}", fields=changed)


@admin.register(PaidBeforeFailure)
class PaidBeforeFailureAdmin(TenantScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["external_invoice_id", "tenant", "provider", "amount_paid_minor", "currency",
                    "created_at"]
    list_filter = [ProviderFilter, CurrencyFilter, "tenant"]
    list_select_related = ["tenant"]
    search_fields = ["external_invoice_id__prefix"]
    search_help_text = "Search matches the start (case-sensitive) of the provider's invoice id."


@admin.register(InvoiceRefund)
class InvoiceRefundAdmin(TenantScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Append-only refunds as the providers reported them; their sum per invoice is
    `Invoice.refunded_minor`."""

    list_display = ["refund_ref", "invoice", "tenant", "provider", "amount", "occurred_at", "created_at"]
    list_filter = ["tenant"]
    list_select_related = ["tenant", "invoice"]
    search_fields = ["refund_ref__prefix", "invoice__external_invoice_id__prefix"]
    search_help_text = "Search matches the start (case-sensitive) of the refund id or the invoice id."
    raw_id_fields = ["invoice"]
    show_full_result_count = False

    @admin.display(description="amount", ordering="amount_minor")
    def amount(self, obj: InvoiceRefund) -> str:
        return format_minor(obj.amount_minor, obj.currency)


@admin.register(LedgerInconsistency)
class LedgerInconsistencyAdmin(TenantScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Append-only: events the ledger refused (a payment in another currency) or capped (a
    refund above the recovered amount), for a person to reconcile with the provider."""

    list_display = ["kind", "external_invoice_id", "tenant", "provider", "expected_currency",
                    "received_currency", "amount_minor", "occurred_at", "created_at"]
    list_filter = ["kind", "tenant"]
    list_select_related = ["tenant"]
    search_fields = ["external_invoice_id__prefix", "event_ref__prefix"]
    search_help_text = "Search matches the start (case-sensitive) of the invoice id or the event reference."
    raw_id_fields = ["invoice"]
    show_full_result_count = False
