"""Request context (id, timing, access log, security headers and CSP) and rate limits."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from paypilot.api import error_body
from paypilot.db import connection_drop_after_failure
from paypilot.jsonlimits import REASON_BODY_TOO_LARGE
from paypilot.metrics import LATENCY, REQUESTS
from paypilot.ratelimit import client_address, client_key, client_prefix, counter_hit
from paypilot.refusals import refusal_scope_enter, refusal_scope_exit, refusal_stamp

access_log = logging.getLogger("paypilot.access")

_SANE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")
_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}

# Content-Security-Policy: same origin only, no plugins, no framing, no <base>, forms post
# back to us. Django 5.2 has no CSP of its own and one header needs no package.
_CSP_STRICT = ("default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; "
               "object-src 'none'")
# Pages whose templates carry an inline <style> block (the admin console's review page and
# the ledger report with its SVG charts, the report sample, the ACH table) may use inline
# styles; scripts stay same-origin everywhere. Swagger UI (/docs) needs only data: images
# (its stylesheet draws its icons so); ReDoc (/redoc) writes its styles into <style>
# elements at run time and runs its search in a blob: worker. Measured in Chromium by
# paypilot/tests/test_csp_browser.py.
_CSP_INLINE_STYLE = f"{_CSP_STRICT}; style-src 'self' 'unsafe-inline'"
_CSP_BY_PREFIX: tuple[tuple[str, str], ...] = (
    ("/docs", f"{_CSP_STRICT}; img-src 'self' data:"),
    ("/redoc", f"{_CSP_INLINE_STYLE}; img-src 'self' data:; worker-src 'self' blob:"),
    ("/admin/", _CSP_INLINE_STYLE),
    ("/report", _CSP_INLINE_STYLE),
    ("/ach-returns", _CSP_INLINE_STYLE),
)


def csp_for(path: str) -> str:
    """The Content-Security-Policy for a path: the strict one unless a page needs more."""
    for prefix, policy in _CSP_BY_PREFIX:
        if path.startswith(prefix):
            return policy
    return _CSP_STRICT


class RequestContextMiddleware:
    """X-Request-ID (kept when sane, else generated), X-Process-Time, security headers and
    one JSON access-log line per request: never headers or bodies."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request_id = incoming if _SANE_REQUEST_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        scope = refusal_scope_enter(request)
        try:
            response = _body_too_large(request) or self.get_response(request)
        finally:
            refusal_scope_exit(scope)
        refusal_stamp(request, response)  # a refusal id on every 4xx (paypilot.refusals)
        elapsed_ms = (time.perf_counter() - started) * 1000
        response["X-Request-ID"] = request_id
        response["X-Process-Time"] = f"{elapsed_ms:.2f}ms"
        for header, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(header, value)
        response.headers.setdefault("Content-Security-Policy", csp_for(request.path))
        if response.status_code == 503:  # every "unavailable" tells the client when to retry
            response.headers.setdefault("Retry-After", str(settings.PAYPILOT_DB_RETRY_AFTER_SECONDS))
            # And the next request gets a fresh connection (a SQLite one opened on a
            # read-only file stays read-only): paypilot.db.connection_drop_after_failure.
            connection_drop_after_failure()
        match = getattr(request, "resolver_match", None)
        route = match.route if match else "unmatched"
        REQUESTS.labels(request.method, route, str(response.status_code)).inc()
        LATENCY.labels(route).observe(elapsed_ms / 1000)
        if access_log.isEnabledFor(logging.INFO):
            access_log.info(
                json.dumps(
                    {
                        "method": request.method,
                        "route": route,
                        "status": response.status_code,
                        "ms": round(elapsed_ms, 2),
                        "client": client_prefix(client_address(request)),
                        "request_id": request_id,
                        **({"refusal_id": request.refusal_id} if hasattr(request, "refusal_id") else {}),
                    },
                    separators=(",", ":"),
                )
            )
        return response


def _body_too_large(request: HttpRequest) -> HttpResponse | None:
    """A JSON 413 for a declared body past the limit, before any view or middleware reads
    it: Django itself would raise RequestDataTooBig on `request.body` and answer with its
    HTML 400 page (paypilot.views.bad_request catches what still gets that far)."""
    declared = request.META.get("CONTENT_LENGTH") or ""
    limit = settings.PAYPILOT_MAX_BODY_BYTES
    if declared.isdigit() and int(declared) > limit:
        return JsonResponse(error_body(REASON_BODY_TOO_LARGE, f"the body is larger than {limit} bytes"),
                            status=413)
    return None


_EXEMPT_PREFIXES = ("/health", "/static/")
# Webhook deliveries skip the per-IP limit here: providers send bursts from a few addresses,
# and whether a delivery deserves limiting is known only once its signature is checked.
# The inbox limits failed verifications itself (integrations.services.inbox).
_WEBHOOK_PATH = re.compile(r"^/(?:t/[^/]+/)?webhooks/")


class RateLimitMiddleware:
    """Fixed-window limits per bearer-token prefix and per client address, counted in the
    store every process shares (paypilot.ratelimit).

    The token's prefix is read from the header without a database lookup, so a flood of
    bad tokens costs a counter increment, not a query. The client address is REMOTE_ADDR,
    or the forwarded one when the request came through a trusted proxy. A limit of 0
    switches that limit off.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path
        if not path.startswith(_EXEMPT_PREFIXES):
            window = settings.PAYPILOT_RATE_LIMIT_WINDOW_SECONDS
            header = request.META.get("HTTP_AUTHORIZATION", "")
            checks = []
            if not _WEBHOOK_PATH.match(request.path_info):
                checks.append(("ip", client_key(client_address(request)), settings.PAYPILOT_RATE_LIMIT_PER_IP))
            if header.startswith("Bearer pp_") and header.count("_") >= 2:
                checks.append(("tok", header.split("_", 2)[1], settings.PAYPILOT_RATE_LIMIT_PER_TOKEN))
            for kind, ident, limit in checks:
                if not limit:
                    continue
                hit = counter_hit(f"{kind}:{ident}", window=window)
                if hit.count > limit:
                    who = "client address" if kind == "ip" else "token"
                    return rate_limited_response(f"too many requests for this {who}", retry_after=hit.retry_after)
        return self.get_response(request)


def rate_limited_response(detail: str, *, retry_after: int) -> JsonResponse:
    """The one 429 body: `{"error": "rate_limited", "detail": ...}` with Retry-After."""
    response = JsonResponse({"error": "rate_limited", "detail": detail}, status=429)
    response["Retry-After"] = str(retry_after)
    return response
