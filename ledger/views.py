"""Ledger HTML views: the public sample report page and the context the report pages share."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ledger.charts import report_charts
from ledger.selectors import REPORT_ARMS, report_sample


def _pct(rate: float | None) -> str | None:
    return None if rate is None else f"{rate * 100:.1f}"


def report_context(report: dict[str, Any]) -> dict[str, Any]:
    arms = [(name, {**report["arms"][name], "rate_pct": _pct(report["arms"][name]["recovery_rate"])})
            for name in REPORT_ARMS]
    return {
        "report": report,
        "arms": arms,
        "totals_rate_pct": _pct(report["totals"]["recovery_rate"]),
        "charts": report_charts(report),
    }


@require_GET
def report_sample_view(request: HttpRequest) -> HttpResponse:
    """Public: a fixed invented cohort, labelled as sample data. `?format=json` for JSON."""
    report = report_sample()
    if request.GET.get("format") == "json":
        return JsonResponse(report)
    return render(request, "ledger/report_sample.html", report_context(report))
