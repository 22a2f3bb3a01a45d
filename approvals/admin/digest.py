"""Digest preferences (each user sets their own; platform admins anyone's) and the read-only
log of digests sent."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from approvals.models import DigestPreference, DigestSend
from approvals.services import APPROVE_PERMISSION
from paypilot.admin_perf import FastChangelistMixin


def _approver(request: HttpRequest) -> bool:
    user = request.user
    return bool(user.is_active and user.is_staff and (user.is_superuser or user.has_perm(APPROVE_PERMISSION)))


def _own(request: HttpRequest, obj: Any) -> bool:
    return obj is None or request.user.is_superuser or obj.user_id == request.user.pk


@admin.register(DigestPreference)
class DigestPreferenceAdmin(FastChangelistMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """An approver's own setting: off, hourly or daily. The user field is theirs, fixed; a
    platform admin may set anyone's."""

    list_display = ["user", "frequency", "updated_at"]
    list_filter = ["frequency"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    ordering = ["-pk"]  # the primary key's index: pages without a count or a sort

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(user_id=request.user.pk)

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [] if request.user.is_superuser else ["user"]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if not request.user.is_superuser:
            obj.user = request.user  # nobody sets another person's inbox but a platform admin
        super().save_model(request, obj, form, change)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _approver(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _approver(request) and _own(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _approver(request) and _own(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        if not _approver(request):
            return False
        user: Any = request.user
        return bool(user.is_superuser) or not DigestPreference.objects.filter(user=user).exists()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _approver(request) and _own(request, obj)


@admin.register(DigestSend)
class DigestSendAdmin(FastChangelistMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Which digests went out (or were dry runs): one row per user and period."""

    list_display = ["created_at", "user", "frequency", "period_start", "status", "items", "error_code"]
    list_filter = ["status", "frequency"]
    list_select_related = ["user"]
    ordering = ["-created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(user_id=request.user.pk)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _approver(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _approver(request) and _own(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
