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
    position: int = Field(description="index in the review's breaks (explain_break takes it with as_of)")
    break_id: int | None = Field(description="the stored break's id when the review is a stored run")
    kind: str
    amount: Money
    approver: str = Field(description="who has to approve the follow-up; no tool acts on it")


class ExplainedBreak(Out):
    break_id: int | None
    kind: str
    amount_minor: int
    currency: str
    display: str
    explanation: str
    approver: str


class TodoOut(Out):
    kind: str
    action: str
    amount_minor: int
    currency: str
    display: str
    approver: str = Field(description="who has to approve it")
    only_a_person_can_approve: bool


class ReviewOut(Out):
    tenant: str
    as_of: str
    source: str = Field(description="stored_run (an unchanged stored review) or computed (not stored)")
    match_rate: float | None
    orders: int
    money_in_breaks: list[Money]
    breaks_count: int
    biggest_breaks: list[ExplainedBreak] = Field(description="the biggest breaks, explained")
    breaks: list[BreakOut] = Field(description="every break of a stored review (the biggest when computed)")
    disputes_due: list[dict[str, Any]] = Field(description="open disputes due within 7 days, triaged")
    todo: list[TodoOut] = Field(description="most money first; each names its approver")
    summary: list[str]
    executes_anything: bool = Field(False, description="always false: nothing here moves money")


class BreakExplainOut(Out):
    tenant: str
    as_of: str
    brk: dict[str, Any] = Field(alias="break")
    rows: dict[str, list[dict[str, Any]]] = Field(description="the imported rows the break points at")
    contract: dict[str, Any] | None = None
    status: str | None = None


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
