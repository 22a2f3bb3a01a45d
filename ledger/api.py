"""Ledger HTTP API: `GET /report` (JSON, any role of the token's tenant)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.selectors import report_build
from paypilot.auth import authorize


class ReportApi(APIView):
    @extend_schema(
        summary="Recovery report for the token's tenant",
        description=(
            "Three arms (holdout, treated, untouched), totals, per-currency sums in minor "
            "units, weekly amounts and attribution; lift is null with a note until both "
            "compared arms hold 30 invoices."
        ),
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        principal = authorize(request, permission="report.read")
        return Response(report_build(tenant=principal.tenant))
