"""Admin for tenants, tokens (metadata only) and the read-only audit log."""

from django.contrib import admin

from paypilot.models import ApiToken, AuditEvent, Tenant


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "status", "created_at"]
    list_filter = ["status"]
    search_fields = ["slug", "name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
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
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "event", "tenant", "actor"]
    list_filter = ["event", "tenant"]
    list_select_related = ["tenant"]
    search_fields = ["event", "actor"]

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False
