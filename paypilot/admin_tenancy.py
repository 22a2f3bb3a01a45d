"""Tenant scoping for the Django admin: a staff user sees only their own tenant's rows.

A staff user belongs to one tenant through `approvals.AdminMembership` (reverse accessor
`user.admin_membership`); superusers are platform admins and see every tenant. This module
reads the membership through that accessor so it needs no import of the approvals app
(paypilot sits above every app in the import order).

Any ModelAdmin over tenant data mixes in `TenantScopedAdminMixin` before `admin.ModelAdmin`
and names the lookup path to the tenant in `tenant_field` ("tenant" by default,
"invoice__tenant" for a model that reaches its tenant through a relation).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.http import Http404, HttpRequest

from paypilot.admin_perf import FastChangelistMixin
from paypilot.models import Tenant
from paypilot.services import audit_record


def admin_is_platform(user: Any) -> bool:
    """Platform admins (superusers) see and act on every tenant."""
    return bool(getattr(user, "is_active", False) and getattr(user, "is_superuser", False))


def admin_tenant_for(user: Any) -> Tenant | None:
    """The tenant a staff user belongs to, or None (no membership, anonymous, platform admin
    without one)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    try:
        membership = user.admin_membership
    except (ObjectDoesNotExist, AttributeError):
        return None
    return membership.tenant if membership is not None else None


def admin_scope_queryset(
    queryset: models.QuerySet[Any], *, user: Any, tenant_field: str = "tenant"
) -> models.QuerySet[Any]:
    """`queryset` limited to what `user` may see: all for platform admins, the user's tenant
    for members, nothing for a staff user without a membership (fail closed)."""
    if admin_is_platform(user):
        return queryset
    tenant = admin_tenant_for(user)
    if tenant is None:
        return queryset.none()
    # tenant_field "pk" scopes the Tenant table itself to the user's own row.
    return queryset.filter(**{tenant_field: tenant.pk if tenant_field == "pk" else tenant})


class TenantScopedAdminMixin(FastChangelistMixin):
    """Mix into a ModelAdmin over tenant data: list, detail, actions, FK choices and the
    tenant filter all follow the user's tenant. Its changelist counts nothing and reads
    pages over the ordering index (`paypilot.admin_perf`).

    An object of another tenant answers 404 exactly like a missing one (Django's default
    for a missing object is a redirect to the index, which would tell the two cases apart
    only by wording); the cross-tenant attempt is audited.
    """

    tenant_field: str = "tenant"

    def get_queryset(self, request: HttpRequest) -> models.QuerySet[Any]:
        qs = super().get_queryset(request)  # type: ignore[misc]
        return admin_scope_queryset(qs, user=request.user, tenant_field=self.tenant_field)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        obj = super().get_object(request, object_id, from_field)  # type: ignore[misc]
        if obj is not None:
            return obj
        model = self.model  # type: ignore[attr-defined]
        field = model._meta.get_field(from_field) if from_field else model._meta.pk
        try:
            key = field.to_python(object_id)
            elsewhere = model._default_manager.filter(**{field.name: key}).exists()
        except Exception:  # a malformed id is simply not found
            elsewhere = False
        if elsewhere:
            audit_record(
                event="paypilot.admin.cross_tenant",
                tenant=admin_tenant_for(request.user),
                actor=f"user:{request.user.pk}",
                detail={"kind": model._meta.label_lower, "path": request.path[:200]},
            )
        raise Http404("not found")

    def get_list_filter(self, request: HttpRequest) -> Any:
        filters = list(super().get_list_filter(request))  # type: ignore[misc]
        if admin_is_platform(request.user):
            return filters
        # The tenant filter would list other tenants' names to a tenant user.
        return [f for f in filters if f != self.tenant_field]

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.remote_field.model
        if not admin_is_platform(request.user):
            if related is Tenant:
                tenant = admin_tenant_for(request.user)
                kwargs["queryset"] = (
                    Tenant.objects.filter(pk=tenant.pk) if tenant else Tenant.objects.none()
                )
            elif any(f.name == "tenant" for f in related._meta.get_fields()):
                kwargs["queryset"] = admin_scope_queryset(
                    related._default_manager.all(), user=request.user
                )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # A tenant user can only ever write into their own tenant, whatever the form said.
        if self.tenant_field == "tenant" and not admin_is_platform(request.user):
            tenant = admin_tenant_for(request.user)
            if tenant is None:
                raise Http404("not found")
            obj.tenant = tenant
        super().save_model(request, obj, form, change)  # type: ignore[misc]


class TenantScopedModelAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Convenience base: `class InvoiceAdmin(TenantScopedModelAdmin): ...`."""


class ReadOnlyAdminMixin:
    """Append-only or machine-written rows: the admin may look, never add, change or delete
    (the database refuses the change anyway for append-only tables)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class TenantScopedReadOnlyAdmin(TenantScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only admin over one tenant's rows (all tenants for platform admins)."""
