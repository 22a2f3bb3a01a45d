"""Ledger HTML views: the public sample report page and the context the report pages share."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ledger.charts import report_charts
from ledger.report import REPORT_ARMS
from ledger.report_export import report_csv
from ledger.selectors import report_sample

ARM_LABELS = {
    "holdout": "holdout (randomised, never messaged)",
    "treatment": "treatment (randomised; the lift's arm)",
    "treated": "  of which messaged (secondary)",
    "untouched": "  of which never messaged (secondary)",
}


def _pct(rate: float | None) -> str | None:
    return None if rate is None else f"{rate * 100:.1f}"


def report_context(report: dict[str, Any]) -> dict[str, Any]:
    arms = [(ARM_LABELS[name], {**report["arms"][name], "rate_pct": _pct(report["arms"][name]["recovery_rate"])})
            for name in REPORT_ARMS]
    return {
        "report": report,
        "arms": arms,
        "totals_rate_pct": _pct(report["totals"]["recovery_rate"]),
        "charts": report_charts(report),
    }


def report_csv_response(report: dict[str, Any], *, filename: str) -> HttpResponse:
    response = HttpResponse(report_csv(report), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
def report_sample_view(request: HttpRequest) -> HttpResponse:
    """Public: a fixed invented cohort, labelled as sample data. `?format=json|csv`."""
    report = report_sample()
    wanted = request.GET.get("format")
    if wanted == "json":
        return JsonResponse(report)
    if wanted == "csv":
        return report_csv_response(report, filename="recovery-report-sample.csv")
    return render(request, "ledger/report_sample.html", report_context(report))
