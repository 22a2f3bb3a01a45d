"""Core HTTP endpoints: the landing page, health and the tenant's own token metadata."""

from __future__ import annotations

import os
import sys

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.db import InterfaceError, OperationalError, connection, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe
from drf_spectacular.utils import OpenApiExample, extend_schema
from prometheus_client import CONTENT_TYPE_LATEST
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from paypilot.api import error_body
from paypilot.auth import authorize, tenant_object_or_404
from paypilot.db import connection_drop_after_failure
from paypilot.jsonlimits import REASON_BODY_TOO_LARGE, REASON_INVALID_BODY
from paypilot.metrics import metrics_text
from paypilot.models import ApiToken, Role
from paypilot.workers import WORKERS_OK, workers_status


@require_safe
def landing(request: HttpRequest) -> HttpResponse:
    """What this service is and where to go next: no data, no login, nothing from a CDN."""
    return render(request, "paypilot/landing.html", {"commit": settings.PAYPILOT_COMMIT})


REASON_DATABASE_UNAVAILABLE = "database_unavailable"  # 503: unreachable, locked or read-only
REASON_SERVER_ERROR = "server_error"  # 500: an unexpected fault, logged with the request id


def _write_probe() -> None:
    """Prove the database takes writes without writing anything. SQLite: the file must be
    writable (a connection opened on a read-only file is itself read-only for its whole
    life) and this connection must take a write lock, which a no-op DELETE asks for and a
    read-only connection refuses (`BEGIN IMMEDIATE` alone does not: measured). PostgreSQL:
    the session must not be read-only (hot standby, `default_transaction_read_only`); the
    application role need not hold DELETE on any table for that."""
    if connection.vendor == "sqlite":
        name = str(connection.settings_dict["NAME"])
        if os.path.isfile(name) and not os.access(name, os.W_OK):
            raise OperationalError("the database file is read-only")
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("DELETE FROM django_migrations WHERE 0")
            transaction.set_rollback(True)
        return
    with connection.cursor() as cursor:
        cursor.execute("SHOW transaction_read_only")
        (read_only,) = cursor.fetchone()
    if read_only == "on":
        raise OperationalError("the database is read-only")


def health(request: HttpRequest) -> JsonResponse:
    """Liveness, a real database round trip with a write probe, and the workers' state; on a
    database failure only the error class is shown. 503 when the database is unreachable or
    cannot take writes, and when the workers are not ok under PAYPILOT_HEALTH_REQUIRE_WORKERS."""
    try:
        _write_probe()
    except Exception as exc:  # noqa: BLE001 - any database failure means "unavailable"
        connection_drop_after_failure()
        response = JsonResponse(
            {"status": "unavailable", "commit": settings.PAYPILOT_COMMIT, "database": type(exc).__name__,
             "workers": "unknown"},
            status=503,
        )
        response["Retry-After"] = str(settings.PAYPILOT_DB_RETRY_AFTER_SECONDS)
        return response
    workers = workers_status().state
    healthy = workers == WORKERS_OK or not settings.PAYPILOT_HEALTH_REQUIRE_WORKERS
    return JsonResponse(
        {"status": "ok" if healthy else "degraded", "commit": settings.PAYPILOT_COMMIT, "database": "ok",
         "workers": workers},
        status=200 if healthy else 503,
    )


def database_unavailable_response() -> JsonResponse:
    response = JsonResponse(
        error_body(REASON_DATABASE_UNAVAILABLE, "the database is unavailable; retry later"), status=503
    )
    response["Retry-After"] = str(settings.PAYPILOT_DB_RETRY_AFTER_SECONDS)
    return response


def server_error(request: HttpRequest) -> JsonResponse:
    """handler500: a generic JSON body (never a traceback), and a JSON 503 with Retry-After
    when the fault is the database being unreachable, so providers and clients retry.
    Django calls this inside its `except` block, so `sys.exc_info()` is the fault; Django
    has already logged it on `django.request` with the traceback."""
    exc = sys.exc_info()[1]
    if isinstance(exc, OperationalError | InterfaceError):
        connection_drop_after_failure()
        return database_unavailable_response()
    return JsonResponse(
        error_body(REASON_SERVER_ERROR, "internal error",
                   request_id=getattr(request, "request_id", "")), status=500
    )


def bad_request(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """handler400: Django's own 400s (RequestDataTooBig, too many fields, a disallowed host)
    as JSON; an oversized body is a 413."""
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse(error_body(REASON_BODY_TOO_LARGE, "the body is too large"), status=413)
    if isinstance(exception, TooManyFieldsSent):
        return JsonResponse(error_body(REASON_INVALID_BODY, "too many fields"), status=400)
    return JsonResponse(error_body("bad_request", "the request was refused"), status=400)


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
    """Prometheus text format: a platform admin sees every figure, a tenant admin only the
    database gauges of their own tenant (paypilot.metrics)."""

    @extend_schema(operation_id="metrics", responses={(200, "text/plain"): str},
                   examples=[OpenApiExample("a few lines", response_only=True, media_type="text/plain",
                                            value='paypilot_workers_state{state="ok"} 1.0\n'
                                                  'paypilot_invoices{state="failed"} 12.0\n')])
    def get(self, request: Request) -> HttpResponse:
        principal = authorize(request, permission="metrics.read")
        tenant_id = None if principal.role == Role.PLATFORM_ADMIN else principal.tenant.pk
        return HttpResponse(metrics_text(tenant_id=tenant_id), content_type=CONTENT_TYPE_LATEST)
