"""The six analysis tools. All read only: none writes a row (not even a run or an audit
event), calls a provider or moves money; every recommendation names its approver."""

from __future__ import annotations

import importlib
from datetime import date
from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field

from reconciliation import engine
from reconciliation.models import BankRow, Break, ContractVersion, OrderRow, ProviderRow
from reconciliation.services.facts import disputes_current, disputes_on_charges

from . import review as rv
from .schemas import (
    BreakExplainOut,
    DisputeListOut,
    ReviewOut,
    ServiceOut,
    money,
)
from .scope import REASON_INVALID, REASON_NOT_AVAILABLE, REASON_NOT_FOUND, REASON_REFUSED, Caller, ToolRefused, guarded

AsOf = Annotated[str | None, Field(description="review date YYYY-MM-DD; default: the newest stored review's "
                                               "date, else today", json_schema_extra={"maxLength": 10})]
ROW_LIMIT = 20  # imported rows shown per ref kind in explain_break


def service(module: str, name: str) -> Any:
    """A service another part of the app provides, its refusals as tool errors, and a
    clear refusal while it is absent from this version."""
    try:
        package = "reconciliation" if module == "selectors" else "reconciliation.services"
        fn = getattr(importlib.import_module(f"{package}.{module}"), name)
    except (ImportError, AttributeError):
        fn = None

    def call(*args: Any, **kwargs: Any) -> Any:
        if fn is None:
            raise ToolRefused(REASON_NOT_AVAILABLE, f"{module}.{name} is not installed in this version of PayPilot")
        try:
            return fn(*args, **kwargs)
        except NotImplementedError:
            raise ToolRefused(REASON_NOT_AVAILABLE, f"{module}.{name} is not implemented in this version of "
                              "PayPilot") from None
        except Exception as exc:
            reason = getattr(exc, "reason", None)
            if isinstance(reason, str):  # ReconLookupError, ContractRefused: a reason code and a sentence
                code = REASON_NOT_FOUND if reason.endswith("_not_found") else REASON_REFUSED
                raise ToolRefused(code, str(getattr(exc, "detail", None) or exc), reason=reason) from None
            raise

    return call


def _reconcile(who: Caller, as_of: str | None, limit: int) -> dict[str, Any]:
    """The morning review service (read-only: store=False), plus the list of breaks with
    the ids explain_break takes."""
    day = rv.as_of_parse(tenant=who.tenant, value=as_of)
    review: dict[str, Any] = service("review", "morning_review")(tenant=who.tenant, as_of=day, store=False)
    run_id = review["run"]["id"]
    if run_id is not None:
        rows = Break.objects.filter(tenant=who.tenant, run_id=run_id).order_by("position")[:limit]
        breaks = [{"position": b.position, "break_id": b.pk, "kind": b.kind,
                   "amount": money(b.amount_minor, b.currency), "status": b.status,
                   "approver": engine.TODO[b.kind][1]} for b in rows]
    else:  # computed, not stored: the biggest breaks, explained by position with as_of
        breaks = [{"position": i, "break_id": None, "kind": b["kind"],
                   "amount": money(b["amount_minor"], b["currency"]), "status": "open", "approver": b["approver"]}
                  for i, b in enumerate(review["biggest_breaks"])]
    return {"tenant": who.tenant.slug, "source": "stored_run" if run_id is not None else "computed", **review,
            "breaks": breaks}


async def reconcile(as_of: AsOf = None,
                    limit: Annotated[int, Field(ge=1, le=500, description="breaks to list (most money first)")] = 50,
                    ) -> Annotated[CallToolResult, ReviewOut]:
    """The morning payments ops review: match rate, money in breaks, the biggest breaks
    explained, disputes due in the next 7 days, and a to-do list in which each item names
    who has to approve it. Reads only: a stored review when the inputs are unchanged,
    otherwise computed now and not stored."""
    return await guarded(_reconcile, as_of, limit)


def _plain(rows: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in rows]


def _explain_break(who: Caller, break_id: int | None, as_of: str | None, position: int | None) -> dict[str, Any]:
    stored: Break | None = None
    if break_id is not None:
        stored = Break.objects.filter(tenant=who.tenant, pk=break_id).select_related("run").first()
        if stored is None:
            raise ToolRefused(REASON_NOT_FOUND, f"no break {break_id} in this workspace")
        import json

        item = json.loads(stored.run.result_json)["breaks"][stored.position]
        day, pos = stored.run.as_of, stored.position
    elif position is not None:
        day = rv.as_of_parse(tenant=who.tenant, value=as_of)
        result, run = rv.review_load(tenant=who.tenant, as_of=day)
        if not 0 <= position < len(result["breaks"]):
            raise ToolRefused(REASON_NOT_FOUND, f"the review of {day} has {len(result['breaks'])} breaks; "
                              f"position {position} is not one of them")
        item, pos = result["breaks"][position], position
        stored = rv.stored_breaks(run).get(position)
    else:
        raise ToolRefused(REASON_INVALID, "give break_id, or position (with as_of) from reconcile's breaks")
    refs = item["refs"]
    t = who.tenant
    rows: dict[str, list[dict[str, Any]]] = {
        "orders": _plain(OrderRow.objects.filter(tenant=t, order_id__in=refs.get("order", []))
                       .values("order_id", "ordered_at", "amount_minor", "currency", "payment_reference",
                               "status")[:ROW_LIMIT]),
        "provider": _plain(ProviderRow.objects.filter(tenant=t, transaction_id__in=refs.get("transaction", [])
                                                    + refs.get("charge", []) + refs.get("payout", []))
                         .values("transaction_id", "created_at", "type", "amount_minor", "fee_minor", "net_minor",
                                 "currency", "charge_id", "order_reference", "payout_id", "payout_date")[:ROW_LIMIT]),
        "bank": _plain(BankRow.objects.filter(tenant=t, bank_reference__in=refs.get("bank", []))
                     .values("booking_date", "amount_minor", "currency", "reference", "bank_reference")[:ROW_LIMIT]),
        # Every source (webhook and files), each dispute once: the one selector the services use.
        "disputes": [{k: getattr(d, k) for k in ("dispute_id", "charge_id", "amount_minor", "currency", "reason",
                                                 "status", "evidence_due_by")}
                     for d in disputes_on_charges(tenant=t, as_of=day, charge_ids=refs.get("charge", []))][:ROW_LIMIT],
    }
    for kind_rows in rows.values():
        for row in kind_rows:
            for key, value in list(row.items()):
                if hasattr(value, "isoformat"):
                    row[key] = value.isoformat()
            if "amount_minor" in row:
                row["amount"] = money(row["amount_minor"], row["currency"])
    contract = None
    version_id = stored.contract_version_id if stored is not None else None
    cv = ContractVersion.objects.filter(tenant=t, pk=version_id).first() if version_id else None
    if cv is None and item.get("contract_version"):
        cv = next((c for c in ContractVersion.objects.filter(tenant=t) if c.label == item["contract_version"]), None)
    if cv is not None:
        contract = {"label": cv.label, "percent": str(cv.percent), "fixed": money(cv.fixed_minor, cv.currency),
                    "chargeback_fee": money(cv.chargeback_fee_minor, cv.currency),
                    "payout_delay_days": cv.payout_delay_days, "quotes": cv.quotes}
    template, approver = engine.TODO[item["kind"]]
    first = {k: (v[0] if v else "-") for k, v in refs.items()}
    out: dict[str, Any] = {
        "tenant": t.slug, "as_of": day.isoformat(), "break": rv.break_out(item, pos, stored), "rows": rows,
        "contract": contract, "status": stored.status if stored is not None else None,
        "next_step": {"action": template.format(contract=item.get("contract_version") or "the contract", **first),
                      "approver": approver, "requires_human_decision": True},
    }
    if stored is not None and stored.status == Break.Status.RESOLVED:
        out["resolution"] = {"note": stored.resolution_note, "by": stored.resolved_by,
                             "at": stored.resolved_at.isoformat() if stored.resolved_at else None}
    if stored is not None:
        try:
            out["detail"] = service("review", "break_explain")(tenant=t, break_id=stored.pk)
        except ToolRefused as refused:
            if refused.code != REASON_NOT_AVAILABLE:
                raise
    return out


async def explain_break(
    break_id: Annotated[int | None, Field(description="a stored break's id (reconcile's break_id)")] = None,
    as_of: AsOf = None,
    position: Annotated[int | None, Field(ge=0, description="or: the break's position in reconcile's list")] = None,
) -> Annotated[CallToolResult, BreakExplainOut]:
    """One break in full: what is off and by how much, the imported order, provider, bank
    and dispute rows it points at, the contract version a fee break used (with its quoted
    clauses), and the next step with who approves it."""
    return await guarded(_explain_break, break_id, as_of, position)


def _list_disputes(who: Caller, as_of: str | None, status: str | None) -> dict[str, Any]:
    day = rv.as_of_parse(tenant=who.tenant, value=as_of)
    try:
        disputes = service("disputes", "dispute_list")(tenant=who.tenant, as_of=day, status=status)
    except ToolRefused as refused:
        if refused.code != REASON_NOT_AVAILABLE:
            raise
        disputes = _disputes_from_rows(who, day, status)
    for d in disputes:
        if "amount" not in d and "amount_minor" in d:
            d["amount"] = money(d["amount_minor"], d["currency"])
        d.setdefault("requires_human_decision", True)
        d.setdefault("approver", rv.DISPUTE_APPROVER)
    return {"tenant": who.tenant.slug, "as_of": day.isoformat(), "disputes": disputes}


def _disputes_from_rows(who: Caller, day: date, status: str | None) -> list[dict[str, Any]]:
    """Every dispute from every source (the one selector), soonest deadline first."""
    out = []
    for row in disputes_current(tenant=who.tenant, as_of=day):
        if status and row.status != status.lower():
            continue
        due = row.evidence_due_by
        out.append({
            "dispute_id": row.dispute_id, "charge_id": row.charge_id or None, "reason": row.reason,
            "status": row.status, "evidence_due_by": due.isoformat() if due else None,
            "days_left": (due - day).days if due else None, "amount_minor": row.amount_minor,
            "currency": row.currency,
        })
    out.sort(key=lambda d: (d["evidence_due_by"] or "9999", d["dispute_id"]))
    return out


async def list_disputes(
    as_of: AsOf = None,
    status: Annotated[str | None, Field(description="only this status, e.g. needs_response",
                                        json_schema_extra={"maxLength": 64})] = None,
) -> Annotated[CallToolResult, DisputeListOut]:
    """Every dispute of the workspace with its reason, status, amount and days left to the
    evidence deadline, soonest first. Reads only."""
    return await guarded(_list_disputes, as_of, status)


def _service_call(who: Caller, module: str, name: str, **kwargs: Any) -> dict[str, Any]:
    fn = service(module, name)
    answer = dict(fn(tenant=who.tenant, **kwargs))
    return {"tenant": who.tenant.slug, **answer}


def _with_as_of(who: Caller, module: str, name: str, as_of: str | None, **kwargs: Any) -> dict[str, Any]:
    day = rv.as_of_parse(tenant=who.tenant, value=as_of)
    return _service_call(who, module, name, as_of=day, **kwargs)


DisputeId = Annotated[str, Field(description="the dispute id as in list_disputes",
                                 json_schema_extra={"minLength": 1, "maxLength": 128})]


async def triage_dispute(dispute_id: DisputeId, as_of: AsOf = None) -> Annotated[CallToolResult, ServiceOut]:
    """Triage one dispute: reason family, days left, amount, linked breaks of the same
    order, a win-likelihood heuristic with its reasons, and requires_human_decision: true."""
    return await guarded(_with_as_of, "disputes", "dispute_triage", as_of,
                         dispute_id=dispute_id)


async def draft_evidence_pack(dispute_id: DisputeId, as_of: AsOf = None) -> Annotated[CallToolResult, ServiceOut]:
    """A draft evidence pack for one dispute (what to gather for its reason, the facts the
    data proves, a timeline) as Markdown. A draft only: nothing is submitted anywhere."""
    return await guarded(_with_as_of, "evidence", "evidence_pack_draft", as_of,
                         dispute_id=dispute_id)


async def check_refund(
    amount_minor: Annotated[int, Field(gt=0, description="the refund asked for, in minor units")],
    currency: Annotated[str, Field(description="ISO 4217", json_schema_extra={"minLength": 3, "maxLength": 3})],
    order_id: Annotated[str | None, Field(json_schema_extra={"maxLength": 128})] = None,
    charge_id: Annotated[str | None, Field(json_schema_extra={"maxLength": 128})] = None,
) -> Annotated[CallToolResult, ServiceOut]:
    """Is this refund appropriate and safe? Already refunded, disputed (refunding would pay
    twice), a duplicate capture (refund the duplicate), more than captured minus refunded.
    Always executes_refund: false and names who must approve; never calls a provider."""
    if not order_id and not charge_id:
        return ToolRefused(REASON_INVALID, "give order_id or charge_id").result()
    return await guarded(_service_call, "refunds", "refund_check",
                         order_id=order_id, charge_id=charge_id, amount_minor=amount_minor,
                         currency=currency.strip().upper())


TOOLS = (reconcile, explain_break, list_disputes, triage_dispute, draft_evidence_pack, check_refund)
