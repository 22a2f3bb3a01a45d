"""Uploads (with the layout preview and Confirm button), confirmed layouts, contract versions."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from paypilot.admin_perf import input_filter
from paypilot.admin_tenancy import (
    TenantScopedAdminMixin,
    TenantScopedReadOnlyAdmin,
    admin_is_platform,
    admin_tenant_for,
)
from paypilot.models import Tenant
from paypilot.money import currency_normalise, percent_to_micro, to_minor
from reconciliation.admin.uploads import TenantUploadForm, actor_of, upload_context, upload_read, upload_tenant
from reconciliation.formats import FileRefused, decode
from reconciliation.layouts import layout_suggest
from reconciliation.models import ContractVersion, ImportFile, Kind, Layout
from reconciliation.services.contracts import MAX_PERCENT, ContractRefused, contract_add
from reconciliation.services.imports import file_import, layout_save

# An upload waiting for its layout to be confirmed, keyed by tenant and sha256; only the
# bytes the same user sent, read back once on Confirm and then deleted.
PENDING_DIR = Path(tempfile.gettempdir()) / "paypilot-recon-pending"


class UploadForm(TenantUploadForm):
    kind = forms.ChoiceField(choices=Kind.choices)
    file = forms.FileField()


def _pending_path(tenant: Tenant, digest: str) -> Path:
    return PENDING_DIR / f"{tenant.pk}-{digest}"


@admin.register(ImportFile)
class ImportFileAdmin(TenantScopedReadOnlyAdmin):
    list_display = ("created_at", "kind", "file_format", "filename", "rows", "tenant")
    list_filter = ("kind", "file_format", "tenant")
    search_fields = ("filename", "sha256")
    list_select_related = ("tenant",)
    show_full_result_count = False
    change_list_template = "admin/reconciliation/importfile/change_list.html"

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [path("upload/", wrap(self.upload_view), name="reconciliation_importfile_upload"),
                path("confirm/", wrap(self.confirm_view), name="reconciliation_importfile_confirm"),
                *super().get_urls()]

    def _tenant(self, request: HttpRequest, chosen: Tenant | None) -> Tenant:
        return upload_tenant(request, chosen, belongs=UploadForm.belongs, refused=FileRefused)

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = UploadForm(request)
        context = upload_context(self, request, title="Upload an export", form=form)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            kind = form.cleaned_data["kind"]
            try:
                tenant = self._tenant(request, form.cleaned_data.get("tenant"))
                data = upload_read(upload, noun="file", refused=FileRefused)
                try:
                    batch = file_import(tenant=tenant, kind=kind, filename=upload.name, data=data,
                                        actor=actor_of(request))
                except FileRefused as exc:
                    if exc.reason != "unknown_layout":
                        raise
                    return self._suggest(request, tenant=tenant, kind=kind, name=upload.name, data=data)
            except FileRefused as exc:
                form.add_error(None, f"Refused ({exc.reason}): {exc.message}"
                               + (f" (line {exc.line}, column {exc.column})" if exc.line else ""))
                return TemplateResponse(request, "admin/reconciliation/importfile/upload.html", context)
            self.message_user(request, f"Imported {batch.rows} {kind} rows from {batch.filename} (batch {batch.pk}).",
                              messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:reconciliation_importfile_changelist"))
        return TemplateResponse(request, "admin/reconciliation/importfile/upload.html", context)

    def _suggest(self, request: HttpRequest, *, tenant: Tenant, kind: str, name: str, data: bytes) -> HttpResponse:
        suggestion = layout_suggest(kind=kind, text=decode(data))
        digest = hashlib.sha256(data).hexdigest()
        PENDING_DIR.mkdir(mode=0o700, exist_ok=True)
        _pending_path(tenant, digest).write_bytes(data)
        mapping = {k: suggestion[k] for k in ("columns", "date_format", "decimal_separator", "delimiter")}
        return TemplateResponse(request, "admin/reconciliation/importfile/confirm.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta,
            "title": "Confirm the layout of a new export", "suggestion": suggestion, "kind": kind, "name": name,
            "digest": digest, "tenant": tenant, "mapping_json": json.dumps(mapping, indent=2, ensure_ascii=False),
        })

    def confirm_view(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST" or not self.has_view_permission(request):
            raise PermissionDenied
        raw_tenant = request.POST.get("tenant", "")
        chosen = Tenant.objects.filter(pk=int(raw_tenant)).first() if raw_tenant.isdigit() else None
        try:
            tenant = self._tenant(request, chosen)
            digest = request.POST.get("digest", "")
            pending = _pending_path(tenant, digest)
            if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest) or not pending.is_file():
                raise FileRefused("upload_expired", "upload the file again")
            data = pending.read_bytes()
            try:
                mapping = json.loads(request.POST.get("mapping", ""))
            except ValueError as exc:
                raise FileRefused("bad_mapping", "the mapping is not JSON") from exc
            if not isinstance(mapping, dict):
                raise FileRefused("bad_mapping", "the mapping must be a JSON object")
            kind = request.POST.get("kind", "")
            layout_save(tenant=tenant, kind=kind, mapping=mapping, sample=data, actor=actor_of(request))
            batch = file_import(tenant=tenant, kind=kind, filename=request.POST.get("name", "upload")[:255],
                                data=data, actor=actor_of(request))
            pending.unlink(missing_ok=True)
        except FileRefused as exc:
            self.message_user(request, f"Refused ({exc.reason}): {exc.message}"
                              + (f" (line {exc.line}, column {exc.column})" if exc.line else ""), messages.ERROR)
            return HttpResponseRedirect(reverse("admin:reconciliation_importfile_upload"))
        self.message_user(request, f"Layout confirmed; imported {batch.rows} rows (batch {batch.pk}).",
                          messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:reconciliation_importfile_changelist"))


@admin.register(Layout)
class LayoutAdmin(TenantScopedReadOnlyAdmin):
    list_display = ("kind", "header_key", "date_format", "decimal_separator", "delimiter", "created_at", "tenant")
    list_filter = ("kind", "tenant")
    readonly_fields = ("kind", "header_key", "headers", "columns", "date_format", "decimal_separator", "delimiter",
                       "actor", "created_at", "tenant")


class ContractForm(forms.ModelForm):
    """Amounts in major units as people write them; the service converts and versions."""

    fixed = forms.DecimalField(max_digits=12, decimal_places=3, help_text="per capture, major units (0.30)")
    chargeback_fee = forms.DecimalField(max_digits=12, decimal_places=3, help_text="per dispute, major units")

    class Meta:
        model = ContractVersion
        fields = ("tenant", "currency", "effective_from", "percent", "payout_delay_days",
                  "international_surcharge_percent", "rolling_reserve_percent")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            code = currency_normalise(data.get("currency", ""))
            percent_to_micro(data.get("percent", ""))
            for name in ("fixed", "chargeback_fee"):
                if data.get(name) is not None:
                    to_minor(str(data[name].normalize()), code)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        if data.get("percent") is not None and data["percent"] > MAX_PERCENT:
            raise forms.ValidationError(f"a {data['percent']}% fee is not plausible; give per cent (2.9)")
        data["currency"] = code
        return data


@admin.register(ContractVersion)
class ContractVersionAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Add only: a version used by a run is never edited, so none is; a change is a new version."""

    list_display = ("currency", "version", "effective_from", "percent", "fixed_minor", "chargeback_fee_minor",
                    "payout_delay_days", "tenant")
    # A text box, not the distinct currencies of the table: drawing the page queries nothing.
    list_filter = (input_filter(title="currency", parameter="currency", lookup="currency",
                                normalise=lambda text: text.strip().upper()), "tenant")
    form = ContractForm

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        tenant = obj.tenant if admin_is_platform(request.user) else admin_tenant_for(request.user)
        if tenant is None:
            raise PermissionDenied
        data = form.cleaned_data
        try:
            created = contract_add(
                tenant=tenant, currency=data["currency"], effective_from=data["effective_from"],
                percent=data["percent"], fixed=data["fixed"], chargeback_fee=data["chargeback_fee"],
                payout_delay_days=data["payout_delay_days"],
                international_surcharge=data.get("international_surcharge_percent"),
                rolling_reserve=data.get("rolling_reserve_percent"), actor=actor_of(request),
            )
        except ContractRefused as exc:
            raise forms.ValidationError(str(exc)) from exc
        obj.pk = created.pk
        obj.version = created.version

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return None  # nothing related; the service wrote the row
