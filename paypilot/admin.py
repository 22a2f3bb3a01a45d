"""Admin for tenants, tokens (metadata only) and the read-only audit log."""

from typing import Any

from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest

from paypilot.admin_login import LockoutAdminAuthenticationForm
from paypilot.admin_perf import input_filter
from paypilot.admin_tenancy import TenantScopedAdminMixin, TenantScopedReadOnlyAdmin, admin_is_platform
from paypilot.models import ApiToken, AuditEvent, Tenant
from paypilot.services import audit_record

BRANDING_FIELDS = ("display_name", "brand_colour", "logo_url")

# Failed logins lock the account and the address for a while (paypilot.lockout).
admin.site.login_form = LockoutAdminAuthenticationForm


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """A tenant's staff see their own tenant only; status changes go through `manage.py
    tenants` so each one is audited."""

    tenant_field = "pk"
    readonly_fields = ["status", "created_at", "holdout_pct", "holdout_start"]
    fieldsets = [
        (None, {"fields": ["slug", "name", "status", "created_at", "holdout_pct", "holdout_start"]}),
        ("Customer email branding", {
            "fields": list(BRANDING_FIELDS),
            "description": "How the HTML part of every dunning email shows this tenant "
                           "(docs/approvals.md, \"The email customers receive\").",
        }),
    ]
    list_display = ["slug", "name", "status", "created_at"]
    list_filter = ["status"]
    search_fields = ["slug", "name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return admin_is_platform(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Tenant | None = None) -> bool:
        return False  # tenants are deactivated, never deleted: their records must stay

    def save_model(self, request: HttpRequest, obj: Tenant, form: Any, change: bool) -> None:
        """The branding reaches every customer email: its change is audited with the save."""
        branding = sorted(set(form.changed_data) & set(BRANDING_FIELDS))
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if change and branding:
                audit_record(event="paypilot.tenant.branding_changed", tenant=obj,
                             actor=f"user:{request.user.pk}", detail={"fields": branding})


@admin.register(ApiToken)
class ApiTokenAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Tokens are issued with `manage.py tokens issue`; here they can only be inspected."""

    list_display = ["prefix", "tenant", "role", "label", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["role", "tenant"]
    list_select_related = ["tenant"]
    exclude = ["secret_hash"]
    readonly_fields = ["tenant", "role", "label", "prefix", "created_at", "last_used_at", "revoked_at"]

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(TenantScopedReadOnlyAdmin):
    """Tenant staff see their tenant's events; platform events (no tenant) only platform admins."""

    list_display = ["created_at", "event", "tenant", "actor"]
    # A text box for the dotted event name (e.g. approvals.draft.approved): no DISTINCT.
    list_filter = [input_filter(title="event", parameter="event", lookup="event"), "tenant"]
    list_select_related = ["tenant"]
    search_fields = ["event__prefix", "actor__prefix"]
    search_help_text = "Search matches the start (case-sensitive) of the event name or the actor."
