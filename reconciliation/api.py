"""`GET /recon/review?as_of=YYYY-MM-DD[&export=csv]`: the stored payments review (viewer and up)."""

from __future__ import annotations

from datetime import date

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from paypilot.api import ApiError
from paypilot.auth import authorize
from reconciliation.selectors import review_csv, run_latest

REASON_BAD_AS_OF = "invalid_as_of"
REASON_BAD_FORMAT = "invalid_export"
REASON_NO_RUN = "run_not_found"
_ERROR = inline_serializer("ReconError", {
    "error": serializers.CharField(), "detail": serializers.CharField(),
    "field": serializers.CharField(required=False),
    "refusal_id": serializers.CharField(required=False),  # rf_... on every refusal (paypilot.refusals)
})


class ReviewApi(APIView):
    @extend_schema(
        summary="The payments review (one stored reconciliation run)",
        description=(
            "The newest stored run of the token's tenant for `as_of` (or the newest run): as_of, match_rate, "
            "orders, money_in_breaks_minor, breaks, in_transit, disputes_due, todo. The body is the stored JSON "
            "byte for byte; `X-Recon-Run` and `X-Recon-Input-Digest` name the run. `export=csv` gives a "
            "spreadsheet-safe CSV. Runs are made by `manage.py recon_run`; this endpoint never computes one."
        ),
        parameters=[
            OpenApiParameter("as_of", OpenApiTypes.DATE, required=False),
            OpenApiParameter("export", OpenApiTypes.STR, required=False, enum=["json", "csv"]),
        ],
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="export=csv: spreadsheet-safe CSV"),
            404: OpenApiResponse(_ERROR, description="run_not_found: no stored run (for that as_of)"),
            422: OpenApiResponse(_ERROR, description="invalid_as_of or invalid_export"),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        principal = authorize(request, permission="recon.read")
        raw_as_of = request.query_params.get("as_of")
        as_of = None
        if raw_as_of:
            try:
                as_of = date.fromisoformat(raw_as_of)
            except ValueError:
                raise ApiError(422, REASON_BAD_AS_OF, "as_of must be a date, YYYY-MM-DD", field="as_of") from None
        # `export`, not `format`: DRF reserves `?format=` for its own content negotiation.
        fmt = request.query_params.get("export", "json")
        if fmt not in ("json", "csv"):
            raise ApiError(422, REASON_BAD_FORMAT, "export must be json or csv", field="export")
        run = run_latest(tenant=principal.tenant, as_of=as_of)
        if run is None:
            raise ApiError(404, REASON_NO_RUN, "no stored run for this date; run `manage.py recon_run` first")
        if fmt == "csv":
            response = HttpResponse(review_csv(run=run), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="payments-review-{run.as_of}.csv"'
        else:
            response = HttpResponse(run.result_json.encode(), content_type="application/json")
        response["X-Recon-Run"] = str(run.pk)
        response["X-Recon-Input-Digest"] = run.input_digest
        return response
