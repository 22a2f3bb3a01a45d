"""Public pages of the decisions app: the ACH decision table, rendered from the registry."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from decisions.render import ach_context


@require_GET
def ach_returns(request: HttpRequest) -> HttpResponse:
    """`GET /ach-returns`: public, no token; nothing here is tenant data."""
    return render(request, "decisions/ach_returns.html", ach_context())
