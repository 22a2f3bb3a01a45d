"""Read-only admin for drafts (edited and approved in the approvals console) and LLM spend."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from dunning.models import Draft, LlmUsage


class _ReadOnly(admin.ModelAdmin):
    """Drafts change only through approvals (which records each edit); spend rows never change."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


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
