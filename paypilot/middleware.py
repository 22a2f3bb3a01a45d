"""Request context (id, timing, access log, security headers and CSP) and rate limits."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse

from paypilot.auth import client_prefix
from paypilot.metrics import LATENCY, REQUESTS

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
# the report with its SVG charts, the ACH table, Swagger UI's own template) may use inline
# styles; scripts stay same-origin everywhere. Swagger UI's stylesheet draws its icons as
# data: images.
_CSP_INLINE_STYLE = f"{_CSP_STRICT}; style-src 'self' 'unsafe-inline'"
_CSP_BY_PREFIX: tuple[tuple[str, str], ...] = (
    ("/docs", f"{_CSP_INLINE_STYLE}; img-src 'self' data:"),
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
        response = self.get_response(request)
        elapsed_ms = (time.perf_counter() - started) * 1000
        response["X-Request-ID"] = request_id
        response["X-Process-Time"] = f"{elapsed_ms:.2f}ms"
        for header, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(header, value)
        response.headers.setdefault("Content-Security-Policy", csp_for(request.path))
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
                        "client": client_prefix(request.META.get("REMOTE_ADDR")),
                        "request_id": request_id,
                        **({"refusal_id": request.refusal_id} if hasattr(request, "refusal_id") else {}),
                    },
                    separators=(",", ":"),
                )
            )
        return response


_EXEMPT_PREFIXES = ("/health", "/static/")


class RateLimitMiddleware:
    """Fixed-window limits per bearer-token prefix and per client IP on the shared cache.

    The token's prefix is read from the header without a database lookup, so a flood of
    bad tokens costs a cache increment, not a query. A limit of 0 switches that limit off.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(_EXEMPT_PREFIXES):
            window = settings.PAYPILOT_RATE_LIMIT_WINDOW_SECONDS
            bucket = int(time.time() // window)
            retry_after = window - int(time.time() % window)
            header = request.META.get("HTTP_AUTHORIZATION", "")
            token_prefix = ""
            if header.startswith("Bearer pp_") and header.count("_") >= 2:
                token_prefix = header.split("_", 2)[1]
            checks = [("ip", request.META.get("REMOTE_ADDR", ""), settings.PAYPILOT_RATE_LIMIT_PER_IP)]
            if token_prefix:
                checks.append(("tok", token_prefix, settings.PAYPILOT_RATE_LIMIT_PER_TOKEN))
            for kind, ident, limit in checks:
                if limit and _count(f"rl:{kind}:{ident}:{bucket}", window) > limit:
                    who = "client address" if kind == "ip" else "token"
                    response = JsonResponse(
                        {"error": "rate_limited", "detail": f"too many requests for this {who}"},
                        status=429,
                    )
                    response["Retry-After"] = str(retry_after)
                    return response
        return self.get_response(request)


def _count(key: str, window: int) -> int:
    if cache.add(key, 1, timeout=window + 1):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=window + 1)
        return 1
