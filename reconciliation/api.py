"""`GET /recon/review?as_of=YYYY-MM-DD[&export=csv]`: the stored payments review (viewer and up)."""

from __future__ import annotations

import re
from datetime import date

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from paypilot.api import ApiError
from paypilot.auth import authorize
from reconciliation.engine import BREAK_KINDS
from reconciliation.selectors import review_csv, run_latest

REASON_BAD_AS_OF = "invalid_as_of"
_FULL_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)  # RFC 3339 full-date, the OpenAPI `date` format
REASON_BAD_FORMAT = "invalid_export"
REASON_NO_RUN = "run_not_found"
_BREAK = inline_serializer("ReconBreak", {
    "kind": serializers.ChoiceField(choices=list(BREAK_KINDS)), "amount_minor": serializers.IntegerField(),
    "currency": serializers.CharField(),
    "refs": serializers.DictField(child=serializers.ListField(child=serializers.CharField()),
                                  help_text="order, transaction, charge, payout and bank ids involved"),
    "explanation": serializers.CharField(),
    "contract_version": serializers.CharField(required=False, help_text="fee breaks: the version used"),
}, many=True)
_REVIEW = inline_serializer("PaymentsReview", {
    "as_of": serializers.DateField(),
    "match_rate": serializers.FloatField(allow_null=True, help_text="orders with exactly one matching capture"),
    "orders": serializers.IntegerField(),
    "money_in_breaks_minor": serializers.DictField(child=serializers.IntegerField(), help_text="per currency"),
    "breaks": _BREAK,
    "in_transit": serializers.ListField(child=serializers.JSONField()),
    "disputes_due": inline_serializer("ReconDisputeDue", {
        "dispute_id": serializers.CharField(), "charge_id": serializers.CharField(allow_null=True),
        "due_by": serializers.DateField(), "days_left": serializers.IntegerField(),
        "amount_minor": serializers.IntegerField(), "currency": serializers.CharField(),
        "requires_human_decision": serializers.BooleanField(),
        "linked_break": serializers.JSONField(allow_null=True),
    }, many=True),
    "todo": serializers.ListField(child=serializers.JSONField(),
                                  help_text="most money first, each naming who approves"),
})
_REVIEW_EXAMPLE = OpenApiExample("a duplicate capture and a dispute due", response_only=True, value={
    "as_of": "2026-11-30", "match_rate": 0.9412, "orders": 17, "money_in_breaks_minor": {"USD": 4900},
    "breaks": [{"kind": "duplicate_capture", "amount_minor": 4900, "currency": "USD",
                "refs": {"order": ["1042"], "charge": ["ch_2"], "transaction": ["txn_2"], "payout": [], "bank": []},
                "explanation": "Order 1042 was captured twice (USD 49.00 each); the second capture is not refunded."}],
    "in_transit": [],
    "disputes_due": [{"dispute_id": "dp_1", "charge_id": "ch_2", "due_by": "2026-12-02", "days_left": 2,
                      "amount_minor": 4900, "currency": "USD", "requires_human_decision": True,
                      "linked_break": {"kind": "duplicate_capture", "refs": {"order": ["1042"]}}}],
    "todo": [],
})
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
            (200, "application/json"): _REVIEW,
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="export=csv: spreadsheet-safe CSV"),
            404: OpenApiResponse(_ERROR, description="run_not_found: no stored run (for that as_of)"),
            422: OpenApiResponse(_ERROR, description="invalid_as_of or invalid_export"),
        },
        examples=[_REVIEW_EXAMPLE],
    )
    def get(self, request: Request) -> HttpResponse:
        principal = authorize(request, permission="recon.read")
        raw_as_of = request.query_params.get("as_of")
        as_of = None
        if raw_as_of is not None:  # present but empty is refused too: the schema says a date
            try:
                if not _FULL_DATE.fullmatch(raw_as_of):  # fromisoformat also takes 20261116
                    raise ValueError(raw_as_of)
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
