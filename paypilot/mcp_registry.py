"""Where the MCP servers of two apps meet without either importing the other.

`decisions` owns the read-only decision-table tools and registers the builder of a server
holding them; `reconciliation` adds a tenant's payments-ops tools to such a server and
registers the builder of that tenant server. `manage.py mcp_server --tenant` (a decisions
command) and `/mcp` (a reconciliation route) both reach the other side through here, so the
apps keep DESIGN.md's rule: each imports only the core.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_decision_server: Callable[..., Any] | None = None  # (name=, instructions=) -> server with the decision tools
_tenant_server: Callable[..., Any] | None = None  # (tenant=, role=) -> server with every tool, acting as role


def decision_server_register(builder: Callable[..., Any]) -> None:
    global _decision_server
    _decision_server = builder


def decision_server_build(*, name: str, instructions: str) -> Any:
    if _decision_server is None:
        raise RuntimeError("the decisions app is not installed: no decision-table tools to serve")
    return _decision_server(name=name, instructions=instructions)


def tenant_server_register(builder: Callable[..., Any]) -> None:
    global _tenant_server
    _tenant_server = builder


def tenant_server_build(*, tenant: Any, role: str) -> Any | None:
    """Every tool for `tenant`, acting as `role`; None when no app offers tenant tools."""
    if _tenant_server is None:
        return None
    return _tenant_server(tenant=tenant, role=role)
