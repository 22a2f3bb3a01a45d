"""Read-only admin for drafts (edited and approved in the approvals console) and LLM spend."""

from __future__ import annotations

from django.contrib import admin

from dunning.models import Draft, LlmUsage
from paypilot.admin_tenancy import TenantScopedReadOnlyAdmin


class _ReadOnly(TenantScopedReadOnlyAdmin):
    """Drafts change only through approvals (which records each edit); spend rows never change."""


@admin.register(Draft)
class DraftAdmin(_ReadOnly):
    list_display = ["id", "created_at", "tenant", "invoice", "locale", "source", "fallback_used"]
    list_filter = ["tenant", "source", "fallback_used", "locale"]
    list_select_related = ["tenant", "invoice"]
    raw_id_fields = ["invoice", "decision"]
    search_fields = ["invoice__external_invoice_id"]


@admin.register(LlmUsage)
class LlmUsageAdmin(_ReadOnly):
    list_display = ["created_at", "tenant", "model", "input_tokens", "output_tokens", "cost_usd"]
    list_filter = ["model", "tenant"]
    list_select_related = ["tenant"]
