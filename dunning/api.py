"""HTTP views of the dunning app: POST /payment-failed (+ /batch) and GET /portfolio-impact."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dunning import validation
from dunning.idempotency import idempotent_call
from dunning.portfolio import aggregate, portfolio_impact
from dunning.schemas import (
    BATCH_EXAMPLES,
    PAYMENT_FAILED_EXAMPLES,
    PORTFOLIO,
    PORTFOLIO_EXAMPLES,
    RECOVERY_PLAN,
    RECOVERY_PLANS,
    VALIDATION_ERROR,
)
from dunning.selectors import customer_rows_by_id
from dunning.services import run_recovery
from paypilot.auth import authorize
from paypilot.jsonlimits import StrictJSONParser
from paypilot.money import CURRENCY_PATTERN

AMOUNT_PATTERN = r"^(?:[1-9][0-9]{0,8}(?:\.[0-9]{1,3})?|0?\.(?:[1-9][0-9]{0,2}|0[1-9][0-9]?|00[1-9])|1000000000)$"
_EVENT_FIELDS: dict[str, serializers.Field] = {
    "customer_id": serializers.RegexField(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"),
    # The pattern the service's check holds to (dunning.validation._amount): more than zero,
    # at most 1,000,000,000, at most three decimals (fewer where the currency has fewer).
    "amount": serializers.RegexField(AMOUNT_PATTERN, help_text="major units as a string, > 0 and <= 1,000,000,000"),
    "currency": serializers.RegexField(CURRENCY_PATTERN, help_text="a payable ISO 4217 code, any letter case"),
    "failure_code": serializers.RegexField(r"^[a-z_]{1,40}$"),
    "attempt": serializers.IntegerField(min_value=1, max_value=validation.MAX_ATTEMPT, default=1),
    "customer_name": serializers.CharField(max_length=200, required=False,
                                           help_text="used only when the customer is not on record"),
    "customer_email": serializers.EmailField(max_length=254, required=False),
    "plan": serializers.CharField(max_length=100, required=False),
    "locale": serializers.CharField(max_length=35, required=False, allow_null=True,
                                    help_text="BCP 47 tag; malformed or unserved tags get English"),
}
_EVENT = inline_serializer("PaymentFailedInput", _EVENT_FIELDS)
_BATCH = inline_serializer("PaymentFailedBatchInput", {"events": _EVENT.__class__(many=True)})
# The same format dunning.validation enforces: 1-255 printable ASCII characters, no space.
_IDEMPOTENCY = OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
                                pattern="^[!-~]{1,255}$",
                                description="1-255 printable ASCII characters (no space); replays the first "
                                            "response; reuse with another body is 422")


class _JsonOnly(BaseContentNegotiation):
    """These routes speak JSON only, so the Accept header is not parsed on every request
    (DRF's full negotiation was a measurable share of the request on the hot path)."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        content_type = request.content_type or ""
        first = next(iter(parsers))
        return first if content_type.split(";", 1)[0].strip() == first.media_type else None

    def select_renderer(self, request: Request, renderers: Iterable[BaseRenderer],
                        format_suffix: str | None = None) -> tuple[BaseRenderer, str]:
        first = next(iter(renderers))
        return first, first.media_type


class _JsonApiView(APIView):
    content_negotiation_class = _JsonOnly
    parser_classes = [StrictJSONParser]  # size and depth before parsing; strict JSON
    renderer_classes = [JSONRenderer]


def _recover(principal_tenant: Any, event: validation.RecoveryInput) -> tuple[int, dict[str, Any]]:
    return 200, run_recovery(tenant=principal_tenant, event=event).payload


class PaymentFailedApi(_JsonApiView):
    @extend_schema(operation_id="payment_failed", request=_EVENT, parameters=[_IDEMPOTENCY],
                   responses={200: RECOVERY_PLAN, 422: VALIDATION_ERROR}, examples=PAYMENT_FAILED_EXAMPLES)
    def post(self, request: Request) -> HttpResponse:
        principal = authorize(request, permission="payment_failed")
        key = validation.idempotency_key(request.headers.get("Idempotency-Key"))
        event = validation.payment_failed_input(request.data)
        return idempotent_call(tenant=principal.tenant, key=key, route="payment-failed", body=request.data,
                               compute=lambda: _recover(principal.tenant, event))


class PaymentFailedBatchApi(_JsonApiView):
    @extend_schema(operation_id="payment_failed_batch", request=_BATCH, parameters=[_IDEMPOTENCY],
                   responses={200: RECOVERY_PLANS, 422: VALIDATION_ERROR}, examples=BATCH_EXAMPLES)
    def post(self, request: Request) -> HttpResponse:
        principal = authorize(request, permission="payment_failed")
        key = validation.idempotency_key(request.headers.get("Idempotency-Key"))
        events = validation.batch_input(request.data)

        def compute() -> tuple[int, dict[str, Any]]:
            tenant = principal.tenant
            known = customer_rows_by_id(tenant_id=tenant.pk, external_ids=(e.customer_id for e in events))
            results = [
                run_recovery(tenant=tenant, event=e, customer=known.get(e.customer_id),
                             customer_preloaded=True).payload
                for e in events
            ]
            return 200, {"results": results, "aggregate": aggregate(r["impact"] for r in results)}

        return idempotent_call(tenant=principal.tenant, key=key, route="payment-failed/batch",
                               body=request.data, compute=compute)


class PortfolioImpactApi(_JsonApiView):
    @extend_schema(operation_id="portfolio_impact", responses={200: PORTFOLIO}, examples=PORTFOLIO_EXAMPLES)
    def get(self, request: Request) -> Response:
        principal = authorize(request, permission="report.read")
        return Response(portfolio_impact(tenant=principal.tenant))
