"""Who a tool call acts for: one tenant, one role, one actor; and the bridge to the ORM.

Every tool reads the caller from `current_caller` (a context variable), never from its
arguments, so no argument can reach another tenant. The HTTP view sets it from the bearer
token for the length of one request; `manage.py mcp_server --tenant T` sets it once for
the process. Database work runs through `db()`: `sync_to_async(thread_sensitive=True)`,
which under the HTTP view (driven by `async_to_sync`) runs in the request's own thread, on
its connection and inside its transaction, and under stdio in one dedicated thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from mcp.types import CallToolResult, TextContent

from paypilot.models import Role, Tenant
from paypilot.tenancy import tenant_context

T = TypeVar("T")

TRANSPORT_HTTP = "http"  # streamable HTTP at /mcp, a bearer token
TRANSPORT_STDIO = "stdio"  # manage.py mcp_server --tenant T on the operator's machine

REASON_NO_TENANT = "no_tenant"  # the server runs without a tenant (decision tools only)
REASON_FORBIDDEN_ROLE = "forbidden_role"  # a write by a role below tenant_admin
REASON_NOT_FOUND = "not_found"  # no such object in this tenant (another tenant's looks the same)
REASON_INVALID = "invalid_argument"  # an argument is malformed; the message says which
REASON_REFUSED = "refused"  # a service refused (its own reason code is in `reason`)
REASON_NOT_CONFIRMED = "not_confirmed"  # save_contract_terms without the person's yes
REASON_NOT_AVAILABLE = "not_available"  # the service behind this tool is not installed

# Roles that may use the onboarding writes; every role may read (viewer and up).
WRITE_ROLES = frozenset({Role.TENANT_ADMIN, Role.PLATFORM_ADMIN})


@dataclass(frozen=True)
class Caller:
    tenant: Tenant
    role: str
    transport: str
    token_prefix: str | None = None  # HTTP: the token's public prefix (never the secret)

    @property
    def actor(self) -> str:
        """The audit actor: the token over HTTP, the command and role over stdio."""
        if self.token_prefix:
            return f"token:{self.token_prefix}"
        return f"mcp-stdio:{self.role}"

    @property
    def can_write(self) -> bool:
        return self.role in WRITE_ROLES


current_caller: ContextVar[Caller | None] = ContextVar("paypilot_mcp_caller", default=None)


class ToolRefused(Exception):
    """A refusal the tool reports as a structured tool error (`isError: true`)."""

    def __init__(self, code: str, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.code = code  # one of the REASON_* above; a service's own code rides in detail["reason"]
        self.message = message
        self.detail = detail

    def result(self) -> CallToolResult:
        body = {"error": self.code, "detail": self.message, **self.detail}
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], structured_content=body,
                              is_error=True)


def caller(*, write: bool = False) -> Caller:
    """The caller of this tool call; a write by a lesser role is refused (over HTTP the
    view answers 403 before the call gets here, so this is the stdio answer)."""
    found = current_caller.get()
    if found is None:
        raise ToolRefused(REASON_NO_TENANT, "this server was started without a tenant; run "
                          "`manage.py mcp_server --tenant SLUG` or connect to /mcp with a tenant token")
    if write and not found.can_write:
        raise ToolRefused(REASON_FORBIDDEN_ROLE, f"the role {found.role} may only read; saving or importing "
                          "needs tenant_admin", role=found.role, required_role=Role.TENANT_ADMIN)
    return found


async def db(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `fn(caller, *args, **kwargs)` on Django's side of the bridge, inside the
    caller's tenant transaction (row-level security on PostgreSQL)."""
    who = current_caller.get()

    def run() -> T:
        assert who is not None
        with tenant_context(who.tenant):
            return fn(who, *args, **kwargs)

    return await sync_to_async(run, thread_sensitive=True)()


async def guarded(fn: Callable[..., Any], *args: Any, write: bool = False, **kwargs: Any) -> Any:
    """`db(fn, ...)` for the current caller, with refusals turned into tool errors (the
    tools declare `Annotated[CallToolResult, Schema]`: a dict is checked against Schema, a
    CallToolResult error is passed through)."""
    try:
        caller(write=write)
        return await db(fn, *args, **kwargs)
    except ToolRefused as refused:
        return refused.result()
