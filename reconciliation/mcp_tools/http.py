"""`/mcp`: the tenant server over streamable HTTP, inside the Django (WSGI) app.

The SDK's transport is ASGI. Each request runs the SDK's own session manager in
stateless, JSON-response mode under `async_to_sync`: the Django request (already
authenticated by the bearer token, its tenant bound) becomes an ASGI scope, the manager
answers it, and its answer becomes the Django response. No second server or port. Tool
bodies come back to this thread through `sync_to_async(thread_sensitive=True)`, so they
use this request's database connection and transaction.

Errors follow the MCP transport and authorization rules, so the SDK's client can read
them: a missing or bad token is HTTP 401 with `WWW-Authenticate: Bearer realm="paypilot"`
(RFC 6750; `error="invalid_token"` when a token was sent) and a JSON-RPC error body, which
the client surfaces as an `MCPError` with our message (a plain JSON body became an opaque
-32603). Any token role reads; a `tools/call` of a write tool by a role below tenant_admin
is audited here like every API refusal, then answered by the tool itself as a tool result
with `isError: true` and `{"error": "forbidden_role", "required_role": ...}`: the session
goes on and the assistant can tell the person what is missing.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import anyio
from asgiref.sync import async_to_sync
from django.conf import settings
from django.http import HttpResponse, JsonResponse
from drf_spectacular.utils import extend_schema
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework.request import Request
from rest_framework.views import APIView

from paypilot.api import ApiError
from paypilot.auth import authorize

from .scope import TRANSPORT_HTTP, Caller, current_caller
from .server import WRITE_TOOL_NAMES, build_tenant_server

PATH = "/mcp"
# JSON-RPC's implementation-defined server-error range (-32000..-32099): a refused request.
RPC_UNAUTHORIZED = -32001  # no valid bearer token (HTTP 401)
RPC_REFUSED = -32003  # the token's tenant may not use the tools now (HTTP 403), or a rate limit


def _request_id(body: bytes) -> Any:
    """The JSON-RPC id of the request being refused (null for a batch or unreadable body)."""
    try:
        message = json.loads(body or b"null")
    except ValueError:
        return None
    return message.get("id") if isinstance(message, dict) else None


def rpc_refusal(body: bytes, status: int, data: dict[str, Any], *, token_sent: bool) -> HttpResponse:
    """An HTTP refusal whose body is a JSON-RPC error: what the SDK client raises as MCPError."""
    code = RPC_UNAUTHORIZED if status == 401 else RPC_REFUSED
    message = f"{data.get('error', 'refused')}: {data.get('detail', '')}".rstrip(": ")
    response = JsonResponse({"jsonrpc": "2.0", "id": _request_id(body),
                             "error": {"code": code, "message": message, "data": data}}, status=status)
    if status == 401:  # RFC 6750 section 3: no error code when no credentials were sent
        response["WWW-Authenticate"] = 'Bearer realm="paypilot"' + (', error="invalid_token"' if token_sent else "")
    return response


def _write_tools_called(body: bytes) -> list[str]:
    """Names of write tools this JSON-RPC body calls (a batch is looked through too)."""
    try:
        message = json.loads(body or b"null")
    except ValueError:
        return []  # the SDK answers a parse error itself
    messages = message if isinstance(message, list) else [message]
    names = []
    for item in messages:
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str) and name in WRITE_TOOL_NAMES:
                names.append(name)
    return names


def _scope(request: Request, body: bytes) -> dict[str, Any]:
    django_request = request._request
    headers = [(key[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
               for key, value in django_request.META.items() if key.startswith("HTTP_")]
    for meta, name in (("CONTENT_TYPE", b"content-type"), ("CONTENT_LENGTH", b"content-length")):
        if django_request.META.get(meta):
            headers.append((name, str(django_request.META[meta]).encode("latin-1")))
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": django_request.method,
        "scheme": django_request.scheme, "path": PATH, "raw_path": PATH.encode(), "root_path": "",
        "query_string": django_request.META.get("QUERY_STRING", "").encode("latin-1"), "headers": headers,
        "server": (django_request.get_host(), int(django_request.get_port() or 80)),
        "client": (django_request.META.get("REMOTE_ADDR", ""), 0),
    }


async def _serve(scope: dict[str, Any], body: bytes, who: Caller) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    current_caller.set(who)
    manager = StreamableHTTPSessionManager(
        app=build_tenant_server()._lowlevel_server,
        json_response=True, stateless=True,
        max_request_body_size=settings.PAYPILOT_MAX_BODY_BYTES,
    )
    answered = anyio.Event()
    delivered = False
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the client "disconnects" only once the answer is complete
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return status, headers, b"".join(chunks)


class McpApi(APIView):
    """POST /mcp (and GET/DELETE, which stateless mode answers itself)."""

    @extend_schema(exclude=True)  # JSON-RPC, described by the MCP spec, not by OpenAPI
    def post(self, request: Request) -> HttpResponse:
        principal = authorize(request, permission="recon.read")
        body = request.body
        if _write_tools_called(body):
            try:
                authorize(request, permission="recon.write")  # audits forbidden_role below tenant_admin
            except ApiError as refused:
                if refused.code != "forbidden_role":
                    raise
                # The tool answers the refusal as its result (scope.caller), so the session goes on.
        who = Caller(tenant=principal.tenant, role=principal.role, transport=TRANSPORT_HTTP,
                     token_prefix=principal.token.prefix)
        status, headers, content = async_to_sync(_serve)(_scope(request, body), body, who)
        response = HttpResponse(content, status=status)
        for name, value in headers:
            key = name.decode("latin-1")
            if key.lower() not in ("content-length",):
                response[key] = value.decode("latin-1")
        return response

    get = post
    delete = post

    # DRF's stubs say Response, but finalize_response takes any HttpResponseBase: the JSON-RPC
    # refusal is a plain HttpResponse so that no renderer rewrites the protocol's body.
    def handle_exception(self, exc: Exception) -> HttpResponse:  # type: ignore[override]
        response = super().handle_exception(exc)
        data = getattr(response, "data", None)
        if not isinstance(data, dict) or response.status_code < 400:
            return response
        django_request = self.request._request
        try:
            body = django_request.body
        except Exception:  # the stream was already consumed: the id is then unknown (null)
            body = b""
        answer = rpc_refusal(body, response.status_code, data, token_sent="HTTP_AUTHORIZATION" in django_request.META)
        if response.has_header("Retry-After"):
            answer["Retry-After"] = response["Retry-After"]
        return answer
