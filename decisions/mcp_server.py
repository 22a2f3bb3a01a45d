"""A read-only MCP server over the bank-rail decision tables (the official `mcp` SDK, 2.x).

Three tools, each declared read-only, non-destructive, idempotent and closed-world: they
read the rail registry in memory, so nothing writes, calls a model or reaches the network.
Each returns structured content, and the SDK adds the same JSON as a text block. A refused
call (unknown rail, over-long code) is a tool error (`isError: true`) whose structured body
names the reason and the limit, never the value that was sent.
"""

from __future__ import annotations

import json
from importlib import metadata
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from decisions import rails

SERVER_NAME = "paypilot-decisions"
TOOL_NAMES = ("lookup_return_code", "list_decisions", "explain")
# Return codes are short (R01, MD06, ARUDD-1); anything longer is refused before a lookup.
MAX_CODE_LENGTH = 32
REASON_UNKNOWN_RAIL = "unknown_rail"  # the rail is not one of rails.RAILS
REASON_CODE_TOO_LONG = "code_too_long"  # longer than MAX_CODE_LENGTH
REASON_CODE_EMPTY = "code_empty"  # nothing but white space

# The schema advertises the limits (an enum of rails, a length cap); the checks themselves
# run in the tool so a refusal is a structured tool error rather than a validation dump
# that repeats the input.
Rail = Annotated[str, Field(description="Bank rail", json_schema_extra={"enum": list(rails.RAILS)})]
Code = Annotated[str, Field(description="Return code as the bank reports it, e.g. R01 or MD06",
                            json_schema_extra={"maxLength": MAX_CODE_LENGTH, "minLength": 1})]


def server_version() -> str:
    try:
        return metadata.version("paypilot")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"

READ_ONLY = ToolAnnotations(
    read_only_hint=True,
    destructive_hint=False,
    idempotent_hint=True,
    open_world_hint=False,
)


def _refused(reason: str, **detail: Any) -> Any:
    body = {"error": reason, **detail}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], structured_content=body,
                          is_error=True)


def _refusal(code: str | None, rail: str) -> Any | None:
    if rail not in rails.RAILS:
        return _refused(REASON_UNKNOWN_RAIL, rails=list(rails.RAILS))
    if code is not None and len(code) > MAX_CODE_LENGTH:
        return _refused(REASON_CODE_TOO_LONG, max_length=MAX_CODE_LENGTH)
    if code is not None and not code.strip():
        return _refused(REASON_CODE_EMPTY)
    return None


def lookup_return_code(code: Code, rail: Rail = "ach") -> dict[str, Any]:
    """One return code: its decision row, whether the entry goes again, what has to change
    first, the customer wording, whether a person acts first, and whether it matched."""
    return _refusal(code, rail) or rails.lookup(code, rail)


def list_decisions(rail: Rail = "ach") -> dict[str, Any]:
    """The five decision rows of a rail and the codes on each."""
    return _refusal(None, rail) or rails.list_decisions(rail)


def explain(code: Code, rail: Rail = "ach") -> dict[str, Any]:
    """Which row fired for a code and why, and what the table does and does not state about
    the code's family."""
    return _refusal(code, rail) or rails.explain(code, rail)


def build_server() -> MCPServer:
    server: MCPServer = MCPServer(
        SERVER_NAME,
        version=server_version(),
        instructions=("Read-only decision tables for bank-rail return codes (ach, sepa, bacs). "
                      "Every answer names the row that fired and whether the code matched or fell through."),
        log_level="WARNING",
    )
    for fn in (lookup_return_code, list_decisions, explain):
        server.add_tool(fn, annotations=READ_ONLY, structured_output=True)
    return server
