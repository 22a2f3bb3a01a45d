"""HTTP views of the decisions app: POST /decide, the decision history and outcomes."""

from __future__ import annotations

import json
import logging
from typing import Any, NoReturn

from django.db import DatabaseError
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from decisions import rules, selectors, services, validation
from decisions.models import DecisionRecord
from decisions.schemas import (
    DECIDE_EXAMPLES,
    DECISION,
    DECISION_HISTORY,
    DECISION_RESPONSE_EXAMPLES,
    HISTORY_EXAMPLES,
    OUTCOME,
    OUTCOME_EXAMPLES,
    OUTCOME_SUMMARY,
    SUMMARY_EXAMPLES,
)
from decisions.validation import BodyRefused
from paypilot.api import ApiError
from paypilot.auth import Principal, authorize, tenant_object_or_404
from paypilot.refusals import refusal_id_for

logger = logging.getLogger("paypilot.decisions")

_ERROR = inline_serializer("DecisionError", {
    "error": serializers.CharField(), "detail": serializers.CharField(),
    "refusal_id": serializers.CharField(required=False),
    "field": serializers.CharField(required=False), "constraint": serializers.CharField(required=False),
})
_DECIDE_IN = inline_serializer("DecideInput", {
    "invoice_id": serializers.RegexField(r"^[A-Za-z0-9_-]{1,64}$"),
    "failure_code": serializers.RegexField(r"^[a-z0-9_]{1,64}$"),
    "attempt": serializers.IntegerField(min_value=1, max_value=50, default=1),
    "prior_failures": serializers.IntegerField(min_value=0, max_value=50, default=0),
    "card_brand": serializers.RegexField(r"^[A-Za-z_ ]{1,32}$", required=False, allow_null=True,
                                         help_text="visa, mastercard, amex, ... when known"),
    "network_advice_code": serializers.RegexField(r"^[A-Za-z0-9]{1,4}$", required=False, allow_null=True,
                                                  help_text="the network's advice, e.g. Mastercard MAC 03"),
    "network_decline_code": serializers.RegexField(r"^[A-Za-z0-9]{1,4}$", required=False, allow_null=True,
                                                   help_text="the network's decline code, e.g. Visa 05"),
})
_OUTCOME_IN = inline_serializer("OutcomeInput", {
    "outcome": serializers.ChoiceField(choices=list(validation.REPORTABLE_OUTCOMES)),
    "report_key": serializers.RegexField(r"^[A-Za-z0-9_.:-]{1,128}$"),
})


class _RawBodyParser(BaseParser):
    """Declares JSON for the schema; the views read and check the raw bytes themselves."""

    media_type = "application/json"


def _read_body(request: Request) -> bytes:
    # Refuse on the declared length before reading, then on what actually arrived
    # (a chunked body declares none).
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > validation.MAX_BODY_BYTES:
        raise validation.body_too_large()
    body = request._request.read(validation.MAX_BODY_BYTES + 1)
    if len(body) > validation.MAX_BODY_BYTES:
        raise validation.body_too_large()
    return body


def _refuse(request: Request, principal: Principal, refused: BodyRefused) -> ApiError:
    """Record the refusal (gate and reason only) and build the 4xx that names its row by
    the request's refusal id (paypilot.refusals, which also audits it)."""
    # Only a field the contract knows is stored; an unknown key's name stays out of the log.
    known = refused.field if refused.field in validation.DECIDE_FIELDS else ""
    refusal_id = refusal_id_for(request)
    try:
        services.decision_refusal_record(tenant=principal.tenant, gate=refused.gate,
                                         reason=refused.reason, field=known, refusal_id=refusal_id)
    except DatabaseError:
        logger.exception("decision refusal could not be recorded")
        return ApiError(503, "audit_unavailable", "the refusal could not be recorded")
    code = "invalid_input" if refused.status == 422 else refused.reason
    return ApiError(refused.status, code, refused.detail, reason=refused.reason,
                    refusal_id=refusal_id, **refused.extra())


def _not_found(request: Request, principal: Principal, invoice_id: str) -> NoReturn:
    """404 for an invoice this tenant never decided: the same answer when it is another
    tenant's, but that attempt is audited (paypilot.auth.tenant_object_or_404)."""
    if validation.INVOICE_ID_RE.fullmatch(invoice_id):
        tenant_object_or_404(DecisionRecord.objects.all(), principal=principal, request=request,
                             invoice_ref=invoice_id)
    raise ApiError(404, "not_found", "not found")


class DecideApi(APIView):
    parser_classes = [_RawBodyParser]

    @extend_schema(
        operation_id="decide",
        request=_DECIDE_IN,
        responses={200: DECISION, 400: _ERROR, 413: _ERROR, 422: _ERROR, 503: _ERROR},
        examples=DECIDE_EXAMPLES + DECISION_RESPONSE_EXAMPLES,
        description="Decide from the rules table and record the decision before answering.",
    )
    def post(self, request: Request) -> HttpResponse:
        principal = authorize(request, permission="decide")
        try:
            validation.require_json(request.META.get("CONTENT_TYPE"))
            data = validation.parse_object(_read_body(request))
            clean = validation.decide_input(data)
        except BodyRefused as refused:
            raise _refuse(request, principal, refused) from None
        try:
            table = selectors.rule_table_active(tenant_id=principal.tenant.pk)
        except DatabaseError:
            # Without the tenant's table the answer could be the wrong one: refuse like a
            # decision that cannot be recorded.
            logger.exception("active rules table could not be read")
            raise ApiError(503, "audit_unavailable", "the decision could not be recorded") from None
        decision = rules.decide(failure_code=clean.failure_code, attempt=clean.attempt,
                                prior_failures=clean.prior_failures, card_brand=clean.card_brand,
                                network_advice_code=clean.network_advice_code,
                                network_decline_code=clean.network_decline_code, table=table)
        try:
            record = services.decision_record(tenant=principal.tenant, invoice_ref=clean.invoice_id,
                                              decision=decision, source="api")
        except DatabaseError:
            # No audit row, no answer: the decision is withheld entirely.
            logger.exception("decision audit row could not be written")
            raise ApiError(503, "audit_unavailable", "the decision could not be recorded") from None
        body: dict[str, Any] = {"invoice_id": clean.invoice_id, **decision.as_dict(),
                                "decided_at": rules.iso_ms(record.decided_at),
                                "tenant": principal.tenant.slug, "audit_id": record.pk}
        # Serialized here rather than through DRF's renderer: same compact JSON, less work
        # on the hottest route.
        return HttpResponse(json.dumps(body, separators=(",", ":")), content_type="application/json")


class DecisionListApi(APIView):
    @extend_schema(operation_id="decisions_list", responses={200: DECISION_HISTORY, 404: _ERROR},
                   examples=HISTORY_EXAMPLES)
    def get(self, request: Request, invoice_id: str) -> Response:
        principal = authorize(request, permission="decisions.read")
        records = []
        if validation.INVOICE_ID_RE.fullmatch(invoice_id):
            records = selectors.decision_list(tenant=principal.tenant, invoice_ref=invoice_id)
        if not records:
            _not_found(request, principal, invoice_id)
        slug = principal.tenant.slug
        return Response({
            "invoice_id": invoice_id,
            "tenant": slug,
            "outcome": selectors.outcome_latest(tenant=principal.tenant, invoice_ref=invoice_id),
            "decisions": [selectors.decision_as_dict(r, tenant_slug=slug) for r in records],
        })


class OutcomeReportApi(APIView):
    parser_classes = [_RawBodyParser]

    @extend_schema(operation_id="decisions_outcome_report", request=_OUTCOME_IN, examples=OUTCOME_EXAMPLES,
                   responses={200: OUTCOME, 201: OUTCOME, 404: _ERROR, 422: _ERROR})
    def post(self, request: Request, invoice_id: str) -> Response:
        principal = authorize(request, permission="decisions.report_outcome")
        if not (validation.INVOICE_ID_RE.fullmatch(invoice_id)
                and selectors.decision_exists(tenant=principal.tenant, invoice_ref=invoice_id)):
            _not_found(request, principal, invoice_id)
        try:
            validation.require_json(request.META.get("CONTENT_TYPE"))
            outcome, report_key = validation.outcome_input(validation.parse_object(_read_body(request)))
        except BodyRefused as refused:
            code = "invalid_input" if refused.status == 422 else refused.reason
            raise ApiError(refused.status, code, refused.detail, reason=refused.reason,
                           **refused.extra()) from None
        result = services.decision_outcome_report(tenant=principal.tenant, invoice_ref=invoice_id,
                                                  outcome=outcome, report_key=report_key)
        row = result.outcome
        return Response({
            "invoice_id": row.invoice_ref,
            "outcome": row.outcome,
            "report_key": row.report_key,
            "reported_at": rules.iso_ms(row.reported_at),
            "outcome_id": row.pk,
            "replayed": not result.created,
        }, status=201 if result.created else 200)


class OutcomeSummaryApi(APIView):
    @extend_schema(operation_id="decisions_outcome_summary", responses={200: OUTCOME_SUMMARY},
                   examples=SUMMARY_EXAMPLES)
    def get(self, request: Request) -> Response:
        principal = authorize(request, permission="decisions.read")
        return Response({"tenant": principal.tenant.slug, **selectors.outcome_summary(tenant=principal.tenant)})
