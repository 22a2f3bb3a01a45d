"""A read-only MCP server over the bank-rail decision tables (the official `mcp` SDK, 2.x).

Three tools, each declared read-only, non-destructive, idempotent and closed-world: they
read the rail registry in memory, so nothing writes, calls a model or reaches the network.
Each returns structured content, and the SDK adds the same JSON as a text block.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from decisions import rails

SERVER_NAME = "paypilot-decisions"
TOOL_NAMES = ("lookup_return_code", "list_decisions", "explain")

READ_ONLY = ToolAnnotations(
    read_only_hint=True,
    destructive_hint=False,
    idempotent_hint=True,
    open_world_hint=False,
)


def _rail_error(rail: str) -> dict[str, Any]:
    return {"error": "unknown_rail", "rail": rail, "rails": list(rails.RAILS)}


def lookup_return_code(code: str, rail: str = "ach") -> dict[str, Any]:
    """One return code: its decision row, whether the entry goes again, what has to change
    first, the customer wording, whether a person acts first, and whether it matched."""
    try:
        return rails.lookup(code, rail)
    except rails.UnknownRail:
        return _rail_error(rail)


def list_decisions(rail: str = "ach") -> dict[str, Any]:
    """The five decision rows of a rail and the codes on each."""
    try:
        return rails.list_decisions(rail)
    except rails.UnknownRail:
        return _rail_error(rail)


def explain(code: str, rail: str = "ach") -> dict[str, Any]:
    """Which row fired for a code and why, and what the table does and does not state about
    the code's family."""
    try:
        return rails.explain(code, rail)
    except rails.UnknownRail:
        return _rail_error(rail)


def build_server() -> MCPServer:
    server: MCPServer = MCPServer(
        SERVER_NAME,
        instructions=("Read-only decision tables for bank-rail return codes (ach, sepa, bacs). "
                      "Every answer names the row that fired and whether the code matched or fell through."),
        log_level="WARNING",
    )
    for fn in (lookup_return_code, list_decisions, explain):
        server.add_tool(fn, annotations=READ_ONLY, structured_output=True)
    return server
