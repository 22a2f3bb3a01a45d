"""Read-only admin for drafts (edited and approved in the approvals console) and LLM spend."""

from __future__ import annotations

from django.contrib import admin

from dunning.catalogue import catalogue
from dunning.models import Draft, LlmUsage
from paypilot.admin_perf import choices_filter, input_filter, pairs
from paypilot.admin_tenancy import TenantScopedReadOnlyAdmin


class _ReadOnly(TenantScopedReadOnlyAdmin):
    """Drafts change only through approvals (which records each edit); spend rows never change."""


@admin.register(Draft)
class DraftAdmin(_ReadOnly):
    list_display = ["id", "created_at", "tenant", "invoice", "locale", "source", "fallback_used"]
    # The catalogue's locales, not a DISTINCT over every draft.
    list_filter = ["tenant", "source", "fallback_used",
                   choices_filter(title="locale", parameter="locale", lookup="locale",
                                  choices=lambda: pairs(catalogue().available_locales()))]
    list_select_related = ["tenant", "invoice"]
    raw_id_fields = ["invoice", "decision"]
    search_fields = ["invoice__external_invoice_id__prefix"]
    search_help_text = "Search matches the start (case-sensitive) of the provider's invoice id."


@admin.register(LlmUsage)
class LlmUsageAdmin(_ReadOnly):
    list_display = ["created_at", "tenant", "model", "input_tokens", "output_tokens", "cost_usd"]
    list_filter = [input_filter(title="model", parameter="model", lookup="model"), "tenant"]
    list_select_related = ["tenant"]
