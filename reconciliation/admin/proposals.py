"""Contract proposals in the admin: upload a pricing document, see every value with its quote and
its check, confirm a verified proposal with an effective date (the person's yes)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from paypilot.admin_tenancy import TenantScopedReadOnlyAdmin
from reconciliation.admin.uploads import TenantUploadForm, actor_of, upload_context, upload_read, upload_tenant
from reconciliation.extraction import TERMS
from reconciliation.models import ContractProposal
from reconciliation.services.contracts import ContractRefused
from reconciliation.services.proposals import contract_proposal_confirm, contract_proposal_create, proposal_as_dict

CONFIRM_PERMISSION = "reconciliation.confirm_contractproposal"
ADD_PERMISSION = "reconciliation.add_contractproposal"


class DocumentForm(TenantUploadForm):
    belongs = "the terms belong to"
    document = forms.FileField(help_text="the provider's pricing schedule: text, Markdown, HTML or a text PDF")


class ConfirmForm(forms.Form):
    effective_from = forms.DateField(help_text="the first day these fees apply (YYYY-MM-DD)")


@admin.register(ContractProposal)
class ContractProposalAdmin(TenantScopedReadOnlyAdmin):
    """Read-only rows: a proposal is written by `contract_proposal_create` and moves once, to
    confirmed, through `contract_proposal_confirm`. Uploading needs the add permission,
    confirming the `confirm_contractproposal` permission."""

    list_display = ("created_at", "filename", "source", "currency", "confirmable", "status", "contract_version",
                    "tenant")
    list_filter = ("status", "confirmable", "tenant")
    list_select_related = ("tenant", "contract_version")
    search_fields = ("filename", "sha256")
    change_list_template = "admin/reconciliation/contractproposal/change_list.html"

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("upload/", wrap(self.upload_view), name="reconciliation_contractproposal_upload"),
            path("<path:object_id>/confirm/", wrap(require_POST(self.confirm_view)),
                 name="reconciliation_contractproposal_confirm"),
            *super().get_urls(),
        ]

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.has_perm(ADD_PERMISSION):
            raise PermissionDenied
        form = DocumentForm(request)
        context = upload_context(self, request, title="Read fee terms from a pricing document", form=form)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["document"]
            try:
                tenant = upload_tenant(request, form.cleaned_data.get("tenant"), belongs=DocumentForm.belongs,
                                       refused=ContractRefused)
                document = upload_read(upload, noun="document", refused=ContractRefused)
                proposal = contract_proposal_create(tenant=tenant, document=document, filename=upload.name,
                                                    actor=actor_of(request))
            except ContractRefused as exc:
                form.add_error(None, f"Refused ({exc.reason}): {exc}")
                return TemplateResponse(request, "admin/reconciliation/contractproposal/upload.html", context)
            return HttpResponseRedirect(reverse("admin:reconciliation_contractproposal_change", args=[proposal.pk]))
        return TemplateResponse(request, "admin/reconciliation/contractproposal/upload.html", context)

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        proposal = self.get_object(request, unquote(object_id))  # 404 across tenants
        body = proposal_as_dict(proposal)
        rows = [{"name": name, **body["terms"][name]} for name in TERMS if name in body["terms"]]
        return TemplateResponse(request, "admin/reconciliation/contractproposal/detail.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "original": proposal,
            "title": f"Contract proposal {proposal.pk}: {proposal.filename}", "proposal": body, "rows": rows,
            "can_confirm": body["confirmable"] and request.user.has_perm(CONFIRM_PERMISSION),
            "form": ConfirmForm(),
        })

    def confirm_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not request.user.has_perm(CONFIRM_PERMISSION):
            raise PermissionDenied
        proposal = self.get_object(request, unquote(object_id))  # 404 across tenants
        back = HttpResponseRedirect(reverse("admin:reconciliation_contractproposal_change", args=[proposal.pk]))
        form = ConfirmForm(request.POST)
        if not form.is_valid():
            self.message_user(request, "Give the date these fees apply from (YYYY-MM-DD).", messages.ERROR)
            return back
        try:
            version = contract_proposal_confirm(tenant=proposal.tenant, proposal_id=proposal.pk,
                                                effective_from=form.cleaned_data["effective_from"],
                                                actor=actor_of(request))
        except ContractRefused as exc:
            self.message_user(request, f"Refused ({exc.reason}): {exc}", messages.ERROR)
            return back
        self.message_user(request, f"Saved as {version.label}.", messages.SUCCESS)
        return back
