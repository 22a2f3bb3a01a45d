"""propose_contract_terms and save_contract_terms: a pricing document becomes a proposal
whose every value the server has checked against the document, and a proposal becomes a
contract version only after the person's yes.

The yes comes through MCP elicitation where the client supports it (the SDK asks in the
way the negotiated protocol allows: a server-to-client request, or an input-required
round trip that also works over stateless HTTP); otherwise the call must carry `confirm`,
echoing the proposal's values, which the model can only know by showing them. Either way
the audit row names the token (or stdio) and the proposal.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from paypilot.services import audit_record

from .analysis import service
from .files import LocalPath, file_bytes
from .schemas import WriteOut
from .scope import (
    REASON_INVALID,
    REASON_NOT_CONFIRMED,
    REASON_NOT_FOUND,
    REASON_REFUSED,
    Caller,
    ToolRefused,
    caller,
    current_caller,
    db,
    guarded,
)

CONSENT_ELICITATION = "elicitation"  # the person said yes in the client's own dialog
CONSENT_ECHO = "confirm_argument"  # the call echoed the proposal's values


class SaveConsent(BaseModel):
    save: bool = Field(description="Save these contract terms?")


class NotAsked(SaveConsent):
    """The client cannot be asked: the `confirm` argument has to carry the yes."""


def _proposal(who: Caller, proposal_id: int) -> dict[str, Any]:
    from reconciliation.models import ContractProposal  # type: ignore[attr-defined]

    found = ContractProposal.objects.filter(tenant=who.tenant, pk=proposal_id).first()
    if found is None:
        raise ToolRefused(REASON_NOT_FOUND, f"no contract proposal {proposal_id} in this workspace")
    as_dict: dict[str, Any] = service("proposals", "proposal_as_dict")(found)
    return as_dict


def echo_values(proposal: dict[str, Any], effective_from: str) -> dict[str, Any]:
    """What `confirm` must repeat: the currency, the effective date and each verified value."""
    values: dict[str, Any] = {"currency": proposal.get("currency"), "effective_from": effective_from}
    for name, term in proposal["terms"].items():
        if term.get("verified"):
            values[name] = term["value"]
    return values


def _date(value: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise ToolRefused(REASON_INVALID, "effective_from must be a date, YYYY-MM-DD",
                          argument="effective_from") from None


def _propose(who: Caller, filename: str, content: str | None, content_base64: str | None,
             path: str | None) -> dict[str, Any]:
    data = file_bytes(who, content=content, content_base64=content_base64, path=path)
    create = service("proposals", "contract_proposal_create")
    as_dict = service("proposals", "proposal_as_dict")
    proposal = create(tenant=who.tenant, document=data, filename=filename, actor=who.actor)
    out = as_dict(proposal)
    return {"tenant": who.tenant.slug, "saved": True, "audit_actor": who.actor, "proposal": out,
            "next_step": {"action": "show the person every value with its quote and any failed check; only a "
                                    "confirmable proposal can be saved, with save_contract_terms after their yes",
                          "approver": "tenant_admin", "requires_human_decision": True}}


async def propose_contract_terms(
    filename: Annotated[str, Field(json_schema_extra={"minLength": 1, "maxLength": 255})],
    content: Annotated[str | None, Field(description="the pricing document as text, HTML or Markdown")] = None,
    content_base64: Annotated[str | None, Field(description="or: its bytes in base64 (a text PDF)")] = None,
    path: LocalPath = None,
) -> Annotated[CallToolResult, WriteOut]:
    """Read fee terms from a pricing document (tenant_admin): percentage fee, fixed fee,
    chargeback fee, payout delay (and surcharge, reserve when present), each with its
    verbatim quote, checked by the server before anyone sees it (quote found, quote holds
    the number, sane units). Stores a proposal, never a contract: that needs
    save_contract_terms and the person's yes."""
    return await guarded(_propose, filename, content, content_base64, path, write=True)


def _summary(proposal: dict[str, Any], effective_from: str) -> str:
    lines = [f"Save contract terms from {proposal.get('filename')} (proposal {proposal['id']}), "
             f"effective {effective_from}, currency {proposal.get('currency')}:"]
    for name, term in proposal["terms"].items():
        if term.get("verified"):
            lines.append(f"- {name}: {term['value']} {term.get('unit') or ''} (\"{term.get('quote')}\")")
    return "\n".join(lines)


async def _ask(proposal_id: int, effective_from: str, confirm: dict[str, Any] | None,
               ctx: Context) -> Elicit[SaveConsent] | SaveConsent:
    """Ask the person, when the client can be asked and there is something to ask about."""
    capabilities = ctx.client_capabilities
    who = current_caller.get()
    if confirm is not None or capabilities is None or capabilities.elicitation is None:
        return NotAsked(save=False)
    if who is None or not who.can_write:
        return NotAsked(save=False)  # the tool refuses the role itself
    try:
        proposal = await db(_proposal, proposal_id)
        _date(effective_from)
    except ToolRefused:
        return NotAsked(save=False)  # the tool reports it
    if not proposal.get("confirmable"):
        return NotAsked(save=False)
    return Elicit(_summary(proposal, effective_from), SaveConsent)


def _save(who: Caller, proposal_id: int, effective_from: str, confirm: dict[str, Any] | None,
          consent: ElicitationResult[SaveConsent]) -> dict[str, Any]:
    day = _date(effective_from)
    proposal = _proposal(who, proposal_id)
    if proposal.get("status") != "pending":
        raise ToolRefused(REASON_REFUSED, f"proposal {proposal_id} is already {proposal.get('status')}",
                          reason="proposal_already_confirmed", contract_version=proposal.get("contract_version"))
    if not proposal.get("confirmable"):
        failed = {name: term.get("reason") for name, term in proposal["terms"].items() if not term.get("verified")}
        raise ToolRefused(REASON_REFUSED, "this proposal has values that failed the server's checks and cannot be "
                          "saved; fix the document or propose again", reason="proposal_not_confirmable",
                          failed=failed)
    expected = echo_values(proposal, effective_from)
    asked = isinstance(consent, AcceptedElicitation) and not isinstance(consent.data, NotAsked)
    if asked:
        assert isinstance(consent, AcceptedElicitation)
        if not consent.data.save:
            raise ToolRefused(REASON_NOT_CONFIRMED, "the person did not say yes; nothing was saved")
        how = CONSENT_ELICITATION
    elif isinstance(consent, AcceptedElicitation):  # not asked: the echo must carry the yes
        if confirm is None:
            raise ToolRefused(REASON_NOT_CONFIRMED, "show the person these values; on their yes call again with "
                              "confirm set to exactly this object", expected_confirm=expected)
        given = {k: (str(v) if v is not None else None) for k, v in confirm.items()}
        wanted = {k: (str(v) if v is not None else None) for k, v in expected.items()}
        if given != wanted:
            raise ToolRefused(REASON_NOT_CONFIRMED, "confirm does not echo the proposal's values; nothing was saved",
                              expected_confirm=expected)
        how = CONSENT_ECHO
    else:  # declined or cancelled in the client's dialog
        raise ToolRefused(REASON_NOT_CONFIRMED, "the person declined; nothing was saved")
    version = service("proposals", "contract_proposal_confirm")(tenant=who.tenant, proposal_id=proposal_id,
                                                                effective_from=day, actor=who.actor)
    audit_record(event="reconciliation.mcp.contract_saved", tenant=who.tenant, actor=who.actor,
                 detail={"recon_proposal": proposal_id, "version": version.version, "currency": version.currency,
                         "effective_from": day.isoformat(), "action": how, "token_prefix": who.token_prefix,
                         "source": f"mcp_{who.transport}"})
    return {"tenant": who.tenant.slug, "saved": True, "audit_actor": who.actor, "consent": how,
            "proposal_id": proposal_id, "contract_version": {"id": version.pk, "label": version.label}}


async def save_contract_terms(
    proposal_id: Annotated[int, Field(ge=1, description="propose_contract_terms' proposal id")],
    effective_from: Annotated[str, Field(description="YYYY-MM-DD: transactions from this day use these terms",
                                         json_schema_extra={"maxLength": 10})],
    consent: Annotated[ElicitationResult[SaveConsent], Resolve(_ask)],
    confirm: Annotated[dict[str, Any] | None, Field(
        description="only for clients without elicitation: the person's yes, echoing currency, effective_from and "
                    "every verified value exactly as this tool's not_confirmed answer lists them")] = None,
) -> Annotated[CallToolResult, WriteOut]:
    """Save a verified proposal as a contract version (tenant_admin), only after the
    person's yes: asked through the client (elicitation) where it can, otherwise given as
    `confirm` echoing the values. Audited with the token and the proposal."""
    try:
        caller(write=True)
    except ToolRefused as refused:
        return refused.result()
    return await guarded(_save, proposal_id, effective_from, confirm, consent,
                         write=True)
