"""HTTP views of the approvals app: GET /refusals (admin role, read-only)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.refusals import MAX_LIMIT, SOURCES, refusal_list
from paypilot.api import ApiError
from paypilot.auth import authorize


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit", "100")
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise ApiError(422, "invalid_input", f"limit must be an integer from 1 to {MAX_LIMIT}",
                       field="limit", constraint=f"1..{MAX_LIMIT}")
    return int(raw)


def _sources(request: Request) -> tuple[str, ...] | None:
    raw = request.query_params.get("source")
    if raw is None:
        return None
    # Exactly the schema's pattern: known names joined by single commas (not empty, no ",,").
    names = tuple(raw.split(","))
    if any(name not in SOURCES for name in names):
        raise ApiError(422, "invalid_input", "source must name known sources",
                       field="source", constraint="one of " + ",".join(SOURCES))
    return names


_REFUSALS = inline_serializer("RefusalList", {
    "tenant": serializers.CharField(),
    "refusals": inline_serializer("Refusal", {
        "source": serializers.ChoiceField(choices=list(SOURCES)), "gate": serializers.CharField(),
        "reason": serializers.CharField(), "created_at": serializers.DateTimeField(),
        "tenant": serializers.CharField(),
    }, many=True, help_text="each row also carries the ids of what it refers to, by source"),
    "sources": serializers.DictField(child=inline_serializer("RefusalSource", {
        "status": serializers.ChoiceField(choices=["read", "not_installed", "not_requested"]),
        "count": serializers.IntegerField(),
    })),
})


class RefusalListApi(APIView):
    @extend_schema(
        operation_id="refusals_list",
        parameters=[
            OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                             description=f"rows, 1..{MAX_LIMIT} (default 100)"),
            OpenApiParameter("source", {"type": "string", "pattern": "^(" + "|".join(SOURCES) + ")(,("
                                        + "|".join(SOURCES) + "))*$"},
                             description="comma-separated: " + ", ".join(SOURCES)),
        ],
        responses={200: _REFUSALS},
        examples=[OpenApiExample("a suppressed send", response_only=True, value={
            "tenant": "acme",
            "refusals": [{"source": "suppressed_sends", "gate": "recipient_allowlist",
                          "reason": "recipient_not_allowlisted",
                          "created_at": "2026-12-01T09:00:00+00:00", "tenant": "acme", "suppressed_id": 5,
                          "approval": 3, "invoice_id": 17, "dry_run": True}],
            "sources": {"decision_refusals": {"status": "read", "count": 0},
                        "suppressed_sends": {"status": "read", "count": 1}},
        })],
    )
    def get(self, request: Request) -> Response:
        principal = authorize(request, permission="refusals.read")
        result = refusal_list(tenant=principal.tenant, limit=_limit(request), sources=_sources(request))
        return Response({
            "tenant": principal.tenant.slug,
            "refusals": [item.as_dict() for item in result["items"]],
            "sources": result["sources"],
        })
