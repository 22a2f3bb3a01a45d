"""Admin: the webhook inbox (read-only, filters, a "reprocess" action), provider credentials
(write-only secret fields) and link settings; all tenant-scoped."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.template.response import TemplateResponse

from integrations.models import LinkSettings, ProviderCredential, WebhookEvent
from integrations.services import credential_set, link_settings_set, webhook_event_reprocess
from paypilot.admin_perf import input_filter
from paypilot.admin_tenancy import TenantScopedAdminMixin, admin_is_platform, admin_tenant_for


@admin.register(WebhookEvent)
class WebhookEventAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only: events change only through processing and the reprocess action."""

    list_display = ["event_key", "tenant", "provider", "event_type", "status", "outcome",
                    "attempts", "received_at", "processed_at"]
    # Fixed values (choices, a date range, a text box for the provider's open-ended event
    # types) and no date_hierarchy: nothing here runs a DISTINCT over the inbox.
    list_filter = ["status", "provider",
                   input_filter(title="event type", parameter="event_type", lookup="event_type"),
                   "tenant", "received_at"]
    list_select_related = ["tenant"]
    search_fields = ["event_key__prefix", "resource_key__prefix"]
    search_help_text = ("Search matches the start (case-sensitive) of the provider's event id or "
                        "of the resource key (e.g. invoice:in_123).")
    ordering = ["-received_at", "-id"]
    sortable_by = ["received_at"]
    readonly_fields = ["tenant", "provider", "event_key", "event_type", "body_text", "headers",
                       "received_at", "status", "outcome", "error", "attempts", "enqueued_at",
                       "processed_at", "resource_key", "resource_version"]
    exclude = ["body"]
    actions = ["reprocess"]

    @admin.display(description="raw body")
    def body_text(self, obj: WebhookEvent) -> str:
        return bytes(obj.body).decode("utf-8", errors="replace")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_reprocess_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("integrations.reprocess_webhookevent")

    @admin.action(description="Reprocess selected webhook events", permissions=["reprocess"])
    def reprocess(self, request: HttpRequest, queryset: QuerySet[WebhookEvent]) -> TemplateResponse | None:
        """Confirm first (like delete_selected), then put each event back in the queue."""
        if request.POST.get("post") != "yes":
            return TemplateResponse(
                request,
                "admin/integrations/webhookevent/reprocess_confirmation.html",
                {**self.admin_site.each_context(request), "title": "Reprocess webhook events?",
                 "queryset": queryset, "opts": self.model._meta,
                 "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME},
            )
        actor = f"user:{request.user.pk}"
        queued = sum(webhook_event_reprocess(event=event, actor=actor) for event in queryset)
        skipped = queryset.count() - queued
        self.message_user(request, f"{queued} event(s) queued for reprocessing; {skipped} already "
                          "processed and left alone.", messages.SUCCESS if queued else messages.WARNING)
        return None


class ProviderCredentialForm(forms.ModelForm):  # type: ignore[type-arg]
    """Secrets are write-only: the fields are never filled from the database, and a blank
    field keeps the stored value."""

    secret = forms.CharField(
        required=False, strip=True, widget=forms.PasswordInput(render_value=False),
        help_text="Stripe: endpoint signing secret (whsec_...). Recharge: API client secret. "
                  "Chargebee: the Basic-auth password. Leave blank to keep the stored one.",
    )
    api_key = forms.CharField(
        required=False, strip=True, widget=forms.PasswordInput(render_value=False),
        help_text="Stripe only: a restricted key (Invoices read, PaymentIntents read, "
                  "Customer portal write). Leave blank to keep the stored one.",
    )
    rotate_url_key = forms.BooleanField(required=False, help_text="Chargebee: issue a new URL segment.")

    class Meta:
        model = ProviderCredential
        fields = ["tenant", "provider", "username", "default_currency"]


@admin.register(ProviderCredential)
class ProviderCredentialAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    form = ProviderCredentialForm
    list_display = ["tenant", "provider", "has_secret", "has_api_key", "username", "updated_at"]
    list_filter = ["provider", "tenant"]
    list_select_related = ["tenant"]

    @admin.display(boolean=True, description="secret set")
    def has_secret(self, obj: ProviderCredential) -> bool:
        return bool(obj.secret_encrypted)

    @admin.display(boolean=True, description="API key set")
    def has_api_key(self, obj: ProviderCredential) -> bool:
        return bool(obj.api_key_encrypted)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["tenant", "provider"] if obj is not None else []

    def save_model(self, request: HttpRequest, obj: ProviderCredential, form: Any, change: bool) -> None:
        """Through the service, so values are encrypted and the change is audited. A tenant
        user can only ever write their own tenant's credentials."""
        tenant = obj.tenant
        if not admin_is_platform(request.user):
            own = admin_tenant_for(request.user)
            if own is None:
                raise Http404("not found")
            tenant = own
        data = form.cleaned_data
        result = credential_set(
            tenant=tenant, provider=obj.provider,
            secret=data.get("secret") or None, api_key=data.get("api_key") or None,
            username=data.get("username") if "username" in form.changed_data else None,
            rotate_url_key=bool(data.get("rotate_url_key")),
            default_currency=data.get("default_currency") or None, actor=f"user:{request.user.pk}",
        )
        obj.pk = result.credential.pk
        if result.url_key:
            self.message_user(
                request,
                f"Chargebee webhook URL segment (shown once): /t/{tenant.slug}/webhooks/chargebee/{result.url_key}",
                messages.WARNING,
            )


@admin.register(LinkSettings)
class LinkSettingsAdmin(TenantScopedAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["tenant", "update_url", "updated_at"]
    list_select_related = ["tenant"]

    def save_model(self, request: HttpRequest, obj: LinkSettings, form: Any, change: bool) -> None:
        tenant = obj.tenant if admin_is_platform(request.user) else admin_tenant_for(request.user)
        if tenant is None:
            raise Http404("not found")
        link = link_settings_set(tenant=tenant, update_url=obj.update_url, actor=f"user:{request.user.pk}")
        obj.pk = link.pk

