"""Admin tenant memberships: only platform admins (superusers) manage who belongs where."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from approvals.models import AdminMembership
from paypilot.admin_perf import FastChangelistMixin


@admin.register(AdminMembership)
class AdminMembershipAdmin(FastChangelistMixin, admin.ModelAdmin):
    list_display = ["user", "tenant", "created_at"]
    list_filter = ["tenant"]
    list_select_related = ["user", "tenant"]
    search_fields = ["user__username", "tenant__slug"]
    raw_id_fields = ["user"]

    # Membership decides what a user can see: a tenant user changing it would be an
    # escalation, so every permission here is a platform admin's only.
    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)
