"""Core HTTP endpoints: health and the tenant's own token metadata."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from drf_spectacular.utils import extend_schema
from prometheus_client import CONTENT_TYPE_LATEST
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from paypilot.auth import authorize, tenant_object_or_404
from paypilot.metrics import metrics_text
from paypilot.models import ApiToken, Role


def health(request: HttpRequest) -> JsonResponse:
    """Liveness plus a real database round trip; on failure only the error class is shown."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any database failure means "unavailable"
        return JsonResponse(
            {"status": "unavailable", "commit": settings.PAYPILOT_COMMIT, "database": type(exc).__name__},
            status=503,
        )
    return JsonResponse({"status": "ok", "commit": settings.PAYPILOT_COMMIT, "database": "ok"})


class TokenOutput(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["prefix", "role", "label", "created_at", "last_used_at", "revoked_at"]


class TokenListOutput(serializers.Serializer):
    tokens = TokenOutput(many=True)


class TokenListApi(APIView):
    @extend_schema(operation_id="tokens_list", responses={200: TokenListOutput})
    def get(self, request: Request) -> Response:
        principal = authorize(request, permission="tokens.read")
        tokens = ApiToken.objects.filter(tenant=principal.tenant).order_by("-created_at")[:200]
        return Response({"tokens": TokenOutput(tokens, many=True).data})


class TokenDetailApi(APIView):
    @extend_schema(operation_id="tokens_detail", responses={200: TokenOutput})
    def get(self, request: Request, prefix: str) -> Response:
        principal = authorize(request, permission="tokens.read")
        token = tenant_object_or_404(ApiToken.objects.all(), principal=principal, request=request, prefix=prefix)
        return Response(TokenOutput(token).data)


class MetricsApi(APIView):
    """Prometheus text format: a platform admin sees every figure, a tenant admin only the
    database gauges of their own tenant (paypilot.metrics)."""

    @extend_schema(operation_id="metrics", responses={(200, "text/plain"): str})
    def get(self, request: Request) -> HttpResponse:
        principal = authorize(request, permission="metrics.read")
        tenant_id = None if principal.role == Role.PLATFORM_ADMIN else principal.tenant.pk
        return HttpResponse(metrics_text(tenant_id=tenant_id), content_type=CONTENT_TYPE_LATEST)
