"""Refusal ids: every refused (4xx) request gets one, in the body, a header and the audit log.

One mechanism for every route, so a refusal someone adds later (a 410 for a deactivated
tenant, a 415, a 429) carries an id without its code changing:

- `refusal_id_for(request)` mints the id on first use and keeps it on the request. A view
  that writes its own refusal row (the auth rejection, `/decide`'s `DecisionRefusal`) asks
  for it there, so its row and the answer name the same id.
- A service that writes its own refusal row without the request at hand (the webhook
  inbox's `integrations.webhook.rejected`) adds `**refusal_audit_detail()` to its detail:
  the id of the request being served (a context variable `refusal_scope_enter` sets), or
  nothing outside a request.
- `refusal_stamp` stamps every 4xx answer: the `X-Refusal-ID` header, `refusal_id` in a
  JSON object body, and one `paypilot.request.refused` audit event (status, reason code,
  route, method, client network; never the path's values, headers or body) unless the view
  already wrote an audit event carrying the id (`refusal_audited`).

A 429 gets its id in the answer and the access log but no audit row: a flood that the
rate limit turns away must cost no database write, or the limit protects nothing.
"""

from __future__ import annotations

import json
import logging
import secrets
from contextvars import ContextVar, Token
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

from paypilot.models import ApiToken, AuditEvent
from paypilot.ratelimit import client_address, client_prefix
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context

logger = logging.getLogger("paypilot.refusals")

REFUSAL_HEADER = "X-Refusal-ID"
REFUSED_EVENT = "paypilot.request.refused"
# Statuses answered with an id but no audit row (see the module docstring).
UNAUDITED_STATUSES = frozenset({429})
_PREFIX = "rf_"
_current_request: ContextVar[HttpRequest | None] = ContextVar("paypilot_refusal_request", default=None)


def _http_request(request: Any) -> HttpRequest:
    # A DRF Request wraps the HttpRequest the middleware sees; the id lives on the latter.
    return getattr(request, "_request", request)  # type: ignore[no-any-return]


def refusal_id_for(request: Any) -> str:
    """This request's refusal id, minted on first use (`rf_` + 20 hex digits)."""
    http_request = _http_request(request)
    refusal_id = getattr(http_request, "refusal_id", None)
    if refusal_id is None:
        refusal_id = f"{_PREFIX}{secrets.token_hex(10)}"
        http_request.refusal_id = refusal_id  # type: ignore[attr-defined]
    return refusal_id


def refusal_audited(request: Any) -> None:
    """Say that an audit event carrying this request's refusal id has been written, so
    the middleware does not write a second one."""
    _http_request(request)._refusal_audited = True  # type: ignore[attr-defined]


def refusal_audit_detail() -> dict[str, str]:
    """`{"refusal_id": ...}` for an audit row recording the refusal of the request being
    served (and the middleware then writes no second row); `{}` outside a request."""
    request = _current_request.get()
    if request is None:
        return {}
    refusal_audited(request)
    return {"refusal_id": refusal_id_for(request)}


def refusal_find(*, refusal_id: str) -> AuditEvent | None:
    """The audit event recorded for a refusal id (the id a caller quotes to support)."""
    return AuditEvent.objects.filter(detail__refusal_id=refusal_id).order_by("pk").first()


def _reason_of(body: Any) -> str:
    if isinstance(body, dict):
        for key in ("reason", "error"):
            value = body.get(key)
            if isinstance(value, str) and len(value) <= 64:
                return value
    return ""


def _json_body(response: HttpResponse) -> dict[str, Any] | None:
    if response.streaming or not response.get("Content-Type", "").startswith("application/json"):
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _stamp(request: HttpRequest, response: HttpResponse) -> None:
    refusal_id = refusal_id_for(request)
    response[REFUSAL_HEADER] = refusal_id
    body = _json_body(response)
    if body is not None and body.get("refusal_id") != refusal_id:
        body["refusal_id"] = refusal_id
        response.content = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        if response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))
    if response.status_code in UNAUDITED_STATUSES or getattr(request, "_refusal_audited", False):
        return
    token = getattr(request, "auth", None)  # DRF copies the authenticated token here
    token = token if isinstance(token, ApiToken) else None
    match = getattr(request, "resolver_match", None)
    detail = {
        "refusal_id": refusal_id,
        "status": response.status_code,
        "reason": _reason_of(body),
        "route": match.route if match else "unmatched",
        "method": request.method,
        "client": client_prefix(client_address(request)),  # the proxy's forwarded address if trusted
    }
    try:
        with tenant_context(token.tenant_id if token else None):
            audit_record(event=REFUSED_EVENT, tenant=token.tenant if token else None,
                         actor=f"token:{token.prefix}" if token else "anonymous", detail=detail)
    except DatabaseError:
        # The answer still carries the id; the log line is then the only record of it.
        logger.exception("refusal %s could not be recorded", refusal_id)


# Called by paypilot.middleware.RequestContextMiddleware, the outermost middleware, so the
# answers built before any other middleware runs (the JSON 413 for a declared body past the
# limit, the rate limit's 429) are stamped too, and the access-log line can name the id.

def refusal_scope_enter(request: HttpRequest) -> Token[HttpRequest | None]:
    """Make `request` the one `refusal_audit_detail` names until `refusal_scope_exit`."""
    return _current_request.set(request)


def refusal_scope_exit(token: Token[HttpRequest | None]) -> None:
    _current_request.reset(token)


def refusal_stamp(request: HttpRequest, response: HttpResponse) -> None:
    """Stamp a 4xx answer with the request's refusal id; 2xx, 3xx and 5xx are left alone."""
    if 400 <= response.status_code < 500:
        _stamp(request, response)
