"""Reconciliation routes: the payments review (JSON or CSV, tenant token) and the MCP endpoint."""

from django.urls import path

from reconciliation import api
from reconciliation.mcp_tools.http import McpApi

urlpatterns = [
    path("recon/review", api.ReviewApi.as_view(), name="recon-review"),
    path("mcp", McpApi.as_view(), name="mcp"),
]
