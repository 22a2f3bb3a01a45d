"""Ledger HTTP API: `GET /report` (JSON, HTML or CSV by content negotiation) and
`GET /report.csv`, for any role of the token's tenant."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.template.loader import render_to_string
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.report_export import report_csv
from ledger.schemas import REPORT, REPORT_EXAMPLES
from ledger.selectors import report_build
from paypilot.api import ApiError, JsonOptionsMixin
from paypilot.auth import authorize

REPORT_CSV_FILENAME = "recovery-report.csv"
REPORT_FORMATS = ("json", "csv", "html")
REASON_INVALID_INPUT = "invalid_input"  # the API's one code for a field or parameter at fault
_DESCRIPTION = (
    "Intention-to-treat lift (every invoice randomised to treatment minus the holdout, "
    "mature cohorts only) with its 95% Newcombe interval, recovered revenue attributable "
    "per currency with its interval, arms, maturing invoices, time to recovery, weekly "
    "cohorts; lift null with a note below 30 invoices per arm."
)
_CSV = {(200, "text/csv"): OpenApiTypes.STR}
_ANSWERS = {(200, "application/json"): REPORT, **_CSV, (200, "text/html"): OpenApiTypes.STR}


class ReportCsvRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Mapping[str, Any] | None = None) -> bytes:
        return report_csv(data).encode()


class ReportHtmlRenderer(BaseRenderer):
    media_type = "text/html"
    format = "html"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Mapping[str, Any] | None = None) -> bytes:
        from ledger.views import report_context  # views import the selectors; keep the API light

        return render_to_string("ledger/report_page.html", report_context(data)).encode()


def _format_checked(request: Request) -> None:
    wanted = request.query_params.get("format")
    if wanted is not None and wanted not in REPORT_FORMATS:
        # Refused with the one 422 shape, not DRF's bare 404 for an unknown format.
        raise ApiError(422, REASON_INVALID_INPUT, "format must be json, csv or html",
                       field="format", constraint="one of json, csv, html")


class ReportApi(JsonOptionsMixin, APIView):
    """JSON by default; `Accept: text/csv` or `text/html` (or `?format=csv|html`) for the others."""

    renderer_classes = [JSONRenderer, ReportCsvRenderer, ReportHtmlRenderer]

    @extend_schema(
        operation_id="report",
        summary="Recovery report for the token's tenant (JSON, CSV or HTML)",
        description=_DESCRIPTION + " Content negotiation by Accept header or `format`.",
        parameters=[OpenApiParameter("format", str, enum=list(REPORT_FORMATS), required=False,
                                     description="json (default), csv or html; overrides the Accept header")],
        responses=_ANSWERS,
        examples=REPORT_EXAMPLES,
    )
    def get(self, request: Request) -> Response:
        principal = authorize(request, permission="report.read")
        response = Response(report_build(tenant=principal.tenant))
        if isinstance(request.accepted_renderer, ReportCsvRenderer):
            response["Content-Disposition"] = f'attachment; filename="{REPORT_CSV_FILENAME}"'
        return response

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[BaseRenderer, str]:
        _format_checked(request)
        return super().perform_content_negotiation(request, force=force)

    def handle_exception(self, exc: Exception) -> Response:
        # Errors keep the API's one JSON error shape, whatever format was asked for.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)


class ReportCsvApi(ReportApi):
    """`GET /report.csv`: CSV whatever the Accept header or `format` says."""

    @extend_schema(operation_id="report_csv", summary="Recovery report for the token's tenant as CSV",
                   description=_DESCRIPTION, responses=_CSV,
                   examples=[OpenApiExample("two rows", response_only=True, media_type="text/csv",
                                            value="section,key,currency,value\nattribution,lift_pp,,12.0\n")])
    def get(self, request: Request) -> Response:
        return super().get(request)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[BaseRenderer, str]:
        _format_checked(request)  # `format` is declared here too: an unknown one is 422, not ignored
        return ReportCsvRenderer(), ReportCsvRenderer.media_type
