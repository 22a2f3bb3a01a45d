"""Output schemas of the payments-ops tools: every answer is structured JSON with a schema,
money as integer minor units beside its currency and a display string, and every
recommendation names who has to approve it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from paypilot.money import format_minor


class Out(BaseModel):
    # Services add keys over time; the schema names the ones clients can rely on.
    model_config = ConfigDict(extra="allow")


class Money(BaseModel):
    amount_minor: int = Field(description="integer minor units (cents); never a float")
    currency: str = Field(description="ISO 4217 code")
    display: str = Field(description="for people only, e.g. '12.50 USD'; compute with amount_minor")


def money(amount_minor: int, currency: str) -> dict[str, Any]:
    return {"amount_minor": int(amount_minor), "currency": currency,
            "display": f"{format_minor(int(amount_minor), currency)} {currency}"}


class BreakOut(Out):
    position: int = Field(description="index in this review's breaks (explain_break takes it with as_of)")
    break_id: int | None = Field(description="the stored break's id when the review is a stored run")
    kind: str
    amount: Money
    refs: dict[str, list[str]]
    explanation: str
    contract_version: str | None = None
    approver: str = Field(description="who has to approve the follow-up; no tool acts on it")


class TodoOut(Out):
    kind: str
    action: str
    amount: Money
    approver: str
    requires_human_decision: bool = True


class DisputeDueOut(Out):
    dispute_id: str
    charge_id: str | None = None
    due_by: str
    days_left: int
    amount: Money
    requires_human_decision: bool = True
    approver: str


class ReviewOut(Out):
    tenant: str
    as_of: str
    source: str = Field(description="stored_run (an unchanged stored review) or computed (not stored)")
    match_rate: float | None
    orders: int
    money_in_breaks: list[Money]
    breaks_count: int
    breaks: list[BreakOut] = Field(description="the biggest breaks, most money first")
    in_transit: list[dict[str, Any]]
    disputes_due: list[DisputeDueOut]
    todo: list[TodoOut]
    executes_anything: bool = Field(False, description="always false: nothing here moves money")


class BreakExplainOut(Out):
    tenant: str
    as_of: str
    brk: BreakOut = Field(alias="break")
    rows: dict[str, list[dict[str, Any]]] = Field(description="the imported rows the break points at")
    contract: dict[str, Any] | None = None
    status: str | None = None


class DisputeOut(Out):
    dispute_id: str
    charge_id: str | None = None
    reason: str
    status: str
    evidence_due_by: str | None
    days_left: int | None
    amount: Money
    requires_human_decision: bool = True
    approver: str


class DisputeListOut(Out):
    tenant: str
    as_of: str
    disputes: list[dict[str, Any]]


class ServiceOut(Out):
    """A service's answer as it comes (triage, evidence pack, refund check)."""

    tenant: str


class PreviewOut(Out):
    tenant: str
    kind: str
    filename: str
    recognised_as: str = Field(description="camt053, mt940, stripe_report, layout (a confirmed one) or "
                                           "new_layout (the suggestion below needs a person's yes)")
    importable_now: bool
    suggestion: dict[str, Any] | None = None
    already_imported: bool = False


class ContractVersionsOut(Out):
    tenant: str
    versions: list[dict[str, Any]]


class LoadedOut(Out):
    tenant: str
    files: list[dict[str, Any]]
    rows_by_kind: dict[str, int]
    layouts: list[dict[str, Any]]
    contract_versions: int
    latest_run: dict[str, Any] | None


class WriteOut(Out):
    tenant: str
    saved: bool
    audit_actor: str = Field(description="the actor written to the audit log (token prefix or stdio)")
