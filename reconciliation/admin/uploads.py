"""The upload handling both admin upload pages share (exports, pricing documents): form, tenant, size limit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest

from paypilot.admin_tenancy import admin_is_platform, admin_tenant_for
from paypilot.models import Tenant

# The page's own refusal, built from (reason, message): FileRefused or ContractRefused, so
# each page keeps catching the one exception its service raises.
Refusal = Callable[[str, str], Exception]


def actor_of(request: HttpRequest) -> str:
    """The audit actor of an admin user's upload."""
    return f"user:{request.user.pk}"


class TenantUploadForm(forms.Form):
    """An upload form with the tenant a platform admin must choose (a tenant's own staff
    upload for their tenant; the field offers them nothing). `belongs` ends the help text
    and the refusal: "the tenant <the file belongs to>"."""

    belongs = "the file belongs to"
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), required=False)

    def __init__(self, request: HttpRequest) -> None:
        super().__init__(request.POST or None, request.FILES or None)
        field: Any = self.fields["tenant"]
        field.help_text = f"platform admins only: the tenant {self.belongs}"
        field.queryset = Tenant.objects.all() if admin_is_platform(request.user) else Tenant.objects.none()


def upload_tenant(request: HttpRequest, chosen: Tenant | None, *, belongs: str, refused: Refusal) -> Tenant:
    """The tenant an upload is for: the one chosen by a platform admin (required), else the
    user's own tenant (PermissionDenied for a user with none)."""
    if admin_is_platform(request.user):
        if chosen is None:
            raise refused("tenant_required", f"choose the tenant {belongs}")
        return chosen
    tenant = admin_tenant_for(request.user)
    if tenant is None:
        raise PermissionDenied
    return tenant


def upload_read(upload: UploadedFile, *, noun: str, refused: Refusal) -> bytes:
    """The uploaded bytes, refused unread (`file_too_large`) above PAYPILOT_RECON_MAX_FILE_BYTES."""
    limit = settings.PAYPILOT_RECON_MAX_FILE_BYTES
    if upload.size is not None and upload.size > limit:
        raise refused("file_too_large", f"the {noun} has {upload.size} bytes; the limit is {limit}")
    return upload.read()


def upload_context(model_admin: Any, request: HttpRequest, *, title: str, form: forms.Form) -> dict[str, Any]:
    """What an upload page's template needs: the admin's context, the form and the size limit."""
    return {**model_admin.admin_site.each_context(request), "opts": model_admin.model._meta, "title": title,
            "form": form, "limit": settings.PAYPILOT_RECON_MAX_FILE_BYTES}
