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
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from decisions import rails
from decisions.network import NETWORK_RULES, NETWORKS, network_verdict

SERVER_NAME = "paypilot-decisions"
TOOL_NAMES = ("lookup_return_code", "list_decisions", "explain")
# Return codes are short (R01, MD06, ARUDD-1); anything longer is refused before a lookup.
MAX_CODE_LENGTH = 32
REASON_UNKNOWN_RAIL = "unknown_rail"  # the rail is not one of rails.RAILS
REASON_CODE_TOO_LONG = "code_too_long"  # longer than MAX_CODE_LENGTH
REASON_CODE_EMPTY = "code_empty"  # nothing but white space
REASON_INVALID_ARGUMENT = "invalid_argument"  # an argument failed the tool's input schema

# The schema advertises the limits (an enum of rails, a length cap); the checks themselves
# run in the tool so a refusal is a structured tool error rather than a validation dump
# that repeats the input.
Rail = Annotated[str, Field(description="Bank rail", json_schema_extra={"enum": list(rails.RAILS)})]
# `explain` also answers for the card networks' retry rules (decisions/network.py).
ExplainRail = Annotated[str, Field(description="Bank rail, or a card network (visa: a decline code; mastercard: "
                                               "a Merchant Advice Code)",
                                   json_schema_extra={"enum": [*rails.RAILS, *NETWORKS]})]
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


def _refusal(code: str | None, rail: str, allowed: tuple[str, ...] = rails.RAILS) -> Any | None:
    if rail not in allowed:
        return _refused(REASON_UNKNOWN_RAIL, rails=list(allowed))
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


def explain(code: Code, rail: ExplainRail = "ach") -> dict[str, Any]:
    """Which row fired for a code and why, and what the table does and does not state about
    the code's family. For a card network (visa, mastercard): which retry rules the network's
    code triggers, each with its id and source, and the attempt limits that always apply."""
    refused = _refusal(code, rail, (*rails.RAILS, *NETWORKS))
    if refused is not None:
        return refused  # type: ignore[no-any-return]
    if rail in NETWORKS:
        return _explain_network(code.strip(), rail)
    return rails.explain(code, rail)


def _explain_network(code: str, network: str) -> dict[str, Any]:
    signal = "network_advice_code" if network == "mastercard" else "network_decline_code"
    if network == "mastercard":
        verdict = network_verdict(card_brand=network, network_advice_code=code)
    else:
        verdict = network_verdict(card_brand=network, network_decline_code=code)
    limits = [rule.citation() | {"max_attempts": rule.max_attempts, "window_days": rule.window_days}
              for rule in NETWORK_RULES if rule.network == network and rule.signal == "declined"]
    if verdict.never_retry:
        retry = "never"
    elif verdict.update_required:
        retry = "after_card_update"
    elif verdict.min_wait is not None:
        retry = "after_wait"
    else:
        retry = "allowed_within_limits"
    return {
        "rail": network, "code": code.upper() if network == "visa" else code, "signal": signal,
        "matched": bool(verdict.rules), "retry": retry,
        "wait_hours": int(verdict.min_wait.total_seconds() // 3600) if verdict.min_wait else None,
        "rules": verdict.citations(), "limits": limits,
        "reason": ("; ".join(rule.summary for rule in verdict.rules) if verdict.rules else
                   f"No {network} rule names this code; the attempt limits below still apply."),
    }


def invalid_arguments(exc: ValidationError) -> CallToolResult:
    """The SDK's argument check, in the product's error shape: the first failing argument
    by name, what it must be, and every failing argument; never the value that was sent
    (the SDK's own text is pydantic's dump with a link, unreadable to a person)."""
    problems = [{"argument": ".".join(str(part) for part in err["loc"]) or "arguments", "constraint": err["type"],
                 "message": err["msg"]} for err in exc.errors(include_input=False, include_url=False)]
    first = problems[0]
    return _refused(REASON_INVALID_ARGUMENT, detail=f"{first['argument']}: {first['message']}",
                    argument=first["argument"], constraint=first["constraint"], problems=problems)


class ProductServer(MCPServer):
    """The SDK's server with argument errors answered as product-shaped tool errors."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return invalid_arguments(exc.__cause__)
            raise


DECISIONS_INSTRUCTIONS = ("Read-only decision tables for bank-rail return codes (ach, sepa, bacs). "
                          "Every answer names the row that fired and whether the code matched or fell through.")


def build_server(*, name: str = SERVER_NAME, instructions: str = "") -> ProductServer:
    """The three decision tools; `reconciliation.mcp_tools.server` adds the tenant's tools
    to the same server (under its own name and instructions)."""
    server = ProductServer(
        name,
        version=server_version(),
        instructions=" ".join(filter(None, (instructions, DECISIONS_INSTRUCTIONS))),
        log_level="WARNING",
    )
    for fn in (lookup_return_code, list_decisions, explain):
        server.add_tool(fn, annotations=READ_ONLY, structured_output=True)
    return server

