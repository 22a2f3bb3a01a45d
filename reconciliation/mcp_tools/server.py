"""The tenant server: the three decision-table tools plus the thirteen payments-ops tools,
each annotated with whether it only reads."""

from __future__ import annotations

import functools

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from paypilot.mcp_registry import decision_server_build

from . import analysis, contracts, onboarding

SERVER_NAME = "paypilot"
INSTRUCTIONS = (
    "PayPilot payments ops for one tenant's workspace. Code calculates, you explain: every number "
    "(match rate, money in breaks, fee differences) comes from the tools, in integer minor units with a "
    "display string. Nothing here moves money or submits anything: refunds, disputes and contract terms "
    "are recommendations that name who approves them. 'Run my payments ops review' = reconcile, then "
    "explain_break for the biggest breaks and triage_dispute for disputes due. Contract terms are saved "
    "only after the person says yes (save_contract_terms)."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
# Writes add to the workspace (a new file, layout, proposal or contract version); nothing is
# deleted or overwritten in place, and the same file or proposal is refused a second time.
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                        open_world_hint=False)

READ_TOOLS = (*analysis.TOOLS, onboarding.preview_file, onboarding.list_contract_versions, onboarding.list_loaded)
WRITE_TOOLS = (contracts.propose_contract_terms, contracts.save_contract_terms, onboarding.save_column_mapping,
               onboarding.import_file)
TOOL_NAMES = tuple(fn.__name__ for fn in (*READ_TOOLS, *WRITE_TOOLS))
WRITE_TOOL_NAMES = frozenset(fn.__name__ for fn in WRITE_TOOLS)


@functools.cache
def build_tenant_server() -> MCPServer:
    """One server per process: the caller (tenant, role) is per call (`scope.current_caller`)."""
    server: MCPServer = decision_server_build(name=SERVER_NAME, instructions=INSTRUCTIONS)
    for fn in READ_TOOLS:
        server.add_tool(fn, annotations=READ_ONLY, structured_output=True)
    for writer in WRITE_TOOLS:
        server.add_tool(writer, annotations=WRITE, structured_output=True)
    return server
