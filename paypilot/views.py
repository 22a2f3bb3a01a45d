"""Core HTTP endpoints: the landing page, health and the tenant's own token metadata."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe
from drf_spectacular.utils import OpenApiExample, extend_schema
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from paypilot.auth import authorize, tenant_object_or_404
from paypilot.metrics import REGISTRY
from paypilot.models import ApiToken
from paypilot.workers import WORKERS_OK, workers_status


@require_safe
def landing(request: HttpRequest) -> HttpResponse:
    """What this service is and where to go next: no data, no login, nothing from a CDN."""
    return render(request, "paypilot/landing.html", {"commit": settings.PAYPILOT_COMMIT})


def health(request: HttpRequest) -> JsonResponse:
    """Liveness, a real database round trip and the workers' state; on a database failure
    only the error class is shown. 503 when the database is unreachable, and when the
    workers are not ok under PAYPILOT_HEALTH_REQUIRE_WORKERS."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any database failure means "unavailable"
        return JsonResponse(
            {"status": "unavailable", "commit": settings.PAYPILOT_COMMIT, "database": type(exc).__name__,
             "workers": "unknown"},
            status=503,
        )
    workers = workers_status().state
    healthy = workers == WORKERS_OK or not settings.PAYPILOT_HEALTH_REQUIRE_WORKERS
    return JsonResponse(
        {"status": "ok" if healthy else "degraded", "commit": settings.PAYPILOT_COMMIT, "database": "ok",
         "workers": workers},
        status=200 if healthy else 503,
    )


class TokenOutput(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["prefix", "role", "label", "created_at", "last_used_at", "revoked_at"]


class TokenListOutput(serializers.Serializer):
    tokens = TokenOutput(many=True)


_TOKEN_EXAMPLE = {"prefix": "6cbe790fe2", "role": "integrator", "label": "billing sync",
                  "created_at": "2026-11-30T10:00:00Z", "last_used_at": "2026-12-01T08:59:12Z", "revoked_at": None}


class TokenListApi(APIView):
    @extend_schema(operation_id="tokens_list", responses={200: TokenListOutput},
                   examples=[OpenApiExample("one token", response_only=True, value={"tokens": [_TOKEN_EXAMPLE]})])
    def get(self, request: Request) -> Response:
        principal = authorize(request, permission="tokens.read")
        tokens = ApiToken.objects.filter(tenant=principal.tenant).order_by("-created_at")[:200]
        return Response({"tokens": TokenOutput(tokens, many=True).data})


class TokenDetailApi(APIView):
    @extend_schema(operation_id="tokens_detail", responses={200: TokenOutput},
                   examples=[OpenApiExample("a token", response_only=True, value=_TOKEN_EXAMPLE)])
    def get(self, request: Request, prefix: str) -> Response:
        principal = authorize(request, permission="tokens.read")
        token = tenant_object_or_404(ApiToken.objects.all(), principal=principal, request=request, prefix=prefix)
        return Response(TokenOutput(token).data)


class MetricsApi(APIView):
    """Prometheus text format, for tenant and platform admins."""

    @extend_schema(operation_id="metrics", responses={(200, "text/plain"): str},
                   examples=[OpenApiExample("a few lines", response_only=True, media_type="text/plain",
                                            value='paypilot_workers_state{state="ok"} 1.0\n'
                                                  'paypilot_invoices{state="failed"} 12.0\n')])
    def get(self, request: Request) -> HttpResponse:
        authorize(request, permission="metrics.read")
        return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
