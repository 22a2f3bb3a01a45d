"""The morning review: match rate, money in breaks, the biggest breaks explained, disputes due
triaged, and a short to-do list marking what only a person can approve.

It reads the stored run of the current inputs for the as-of date (the same digest the run
service computes: files, contracts, live disputes). When there is none (no run yet, or a
file, a contract or a dispute webhook arrived since), it computes the same result with the
run service without storing it (`store=False`, the default, reads only: the MCP tools and
the API), or stores it through `run_create` (`store=True`: the command and the admin).
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any

from paypilot.models import Tenant
from paypilot.tenancy import tenant_context
from reconciliation import engine
from reconciliation.engine import CONTROLLER, FINANCE, TODO
from reconciliation.models import Break, Run
from reconciliation.services.disputes import dispute_list
from reconciliation.services.errors import BREAK_NOT_FOUND, ReconLookupError
from reconciliation.services.facts import charges_for, disputes_current, is_open, money_of, order_of
from reconciliation.services.runs import input_digest, run_compute, run_create

BIGGEST = 5  # breaks explained in full
TODO_MAX = 10  # the to-do list stays short; `todo_more` counts the rest
NEW_DISPUTE_DAYS = 1  # disputes opened within this many days before the as-of date are "new"
# Follow-ups that decide about money (a refund, a re-charge, a claim, fighting or accepting a
# dispute): only a person can approve them. Payout questions are inquiries anyone may send.
APPROVAL_KINDS = frozenset({engine.MISSING_CAPTURE, engine.CAPTURE_WITHOUT_ORDER, engine.AMOUNT_MISMATCH,
                            engine.DUPLICATE_CAPTURE, engine.FEE_MISMATCH, "dispute_due"})


def _result(*, tenant: Tenant, as_of: date, store: bool, actor: str) -> tuple[dict[str, Any], Run | None]:
    digest = input_digest(tenant=tenant, as_of=as_of)
    run = Run.objects.filter(tenant=tenant, as_of=as_of, input_digest=digest).order_by("-pk").first()
    if run is None and store:
        run, _ = run_create(tenant=tenant, as_of=as_of, actor=actor)
    if run is not None:
        return json.loads(run.result_json), run
    result, _ = run_compute(tenant=tenant, as_of=as_of)
    return result, None


def morning_review(*, tenant: Tenant, as_of: date, store: bool = False, actor: str = "system") -> dict[str, Any]:
    """The review as of `as_of` (see the module docstring for which run it reads). Reads
    only unless `store`; never moves money."""
    with tenant_context(tenant):
        result, run = _result(tenant=tenant, as_of=as_of, store=store, actor=actor)
        break_ids = dict(run.breaks.values_list("position", "pk")) if run is not None else {}
        statuses = dict(run.breaks.values_list("position", "status")) if run is not None else {}
        disputes = dispute_list(tenant=tenant, as_of=as_of, status="open")
    due_ids = {d["dispute_id"] for d in result["disputes_due"]}
    due = [d for d in disputes if d["dispute_id"] in due_ids]
    new_since = as_of - timedelta(days=NEW_DISPUTE_DAYS)
    new = [d for d in disputes if d["dispute_id"] not in due_ids and d["opened_at"][:10] >= new_since.isoformat()]
    by_charge = {d["charge_id"]: d for d in disputes if d["charge_id"]}
    biggest = []
    for position, b in enumerate(result["breaks"][:BIGGEST]):
        template, approver = TODO[b["kind"]]
        related = sorted({by_charge[c]["dispute_id"] for c in b["refs"].get("charge", []) if c in by_charge})
        biggest.append({"break_id": break_ids.get(position), "kind": b["kind"],
                        **money_of(b["amount_minor"], b["currency"]), "refs": b["refs"],
                        "explanation": b["explanation"], "contract_version": b.get("contract_version"),
                        "status": statuses.get(position, "open"), "approver": approver,
                        "related_disputes": related})
    todo = todo_marked(result["todo"], by_charge)
    rate = result["match_rate"]
    review = {
        "as_of": as_of.isoformat(),
        "run": {"id": run.pk if run else None, "stored": run is not None,
                "input_digest": run.input_digest if run else None},
        "match_rate": rate, "match_rate_display": None if rate is None else f"{rate * 100:.2f}%",
        "orders": result["orders"],
        "money_in_breaks": [money_of(v, c) for c, v in sorted(result["money_in_breaks_minor"].items())],
        "breaks_count": len(result["breaks"]),
        "biggest_breaks": biggest,
        "in_transit": [{**p, **money_of(p["amount_minor"], p["currency"])} for p in result["in_transit"]],
        "disputes_due": due,
        "disputes_new": new,
        "disputes_open_count": len(disputes),
        "todo": todo[:TODO_MAX], "todo_more": max(len(todo) - TODO_MAX, 0),
        "executes_anything": False,
    }
    review["summary"] = _summary(review)
    return review


def todo_marked(items: list[dict[str, Any]], disputes_by_charge: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's to-do list with display strings and the approval mark. A duplicate capture
    whose extra charge is disputed is one story with the dispute: its action becomes
    "do not refund; decide the dispute" (a refund as well would pay the customer twice)."""
    out = []
    for item in items:
        action = item["action"]
        linked = None
        if item["kind"] == engine.DUPLICATE_CAPTURE:
            extra = [c for c in item["refs"].get("charge", []) if c in disputes_by_charge]
            if extra:
                linked = disputes_by_charge[extra[0]]
                action = (f"Do not refund the extra capture of order {', '.join(item['refs']['order'])}: dispute "
                          f"{linked['dispute_id']} ({linked['reason']}) already claims it. Decide the dispute "
                          f"instead ({linked['recommendation']['action']} suggested) "
                          f"({money_of(item['amount_minor'], item['currency'])['display']}).")
        if item["kind"] == "dispute_due":
            charge = (item["refs"].get("charge") or [""])[0]
            linked = disputes_by_charge.get(charge)
            if linked is not None:
                action += f" Suggested: {linked['recommendation']['action']} ({linked['win_likelihood']['level']} " \
                          "win likelihood)."
        out.append({"kind": item["kind"], "action": action, **money_of(item["amount_minor"], item["currency"]),
                    "refs": item["refs"], "approver": item["approver"],
                    "only_a_person_can_approve": item["kind"] in APPROVAL_KINDS,
                    "linked_dispute": linked["dispute_id"] if linked else None})
    return out


def _summary(review: dict[str, Any]) -> list[str]:
    lines = []
    if review["match_rate_display"] is not None:
        lines.append(f"{review['match_rate_display']} of {review['orders']} orders matched their capture.")
    money = ", ".join(m["display"] for m in review["money_in_breaks"]) or "nothing"
    lines.append(f"{review['breaks_count']} break(s) hold {money}.")
    if review["disputes_due"]:
        lines.append(f"{len(review['disputes_due'])} dispute(s) due within {engine.DISPUTE_DUE_DAYS} days: "
                     + "; ".join(f"{d['dispute_id']} ({d['display']}, {d['days_left']} days left)"
                                 for d in review["disputes_due"]) + ".")
    if review["disputes_new"]:
        lines.append(f"{len(review['disputes_new'])} new dispute(s): "
                     + ", ".join(d["dispute_id"] for d in review["disputes_new"]) + ".")
    approvals = sum(1 for t in review["todo"] if t["only_a_person_can_approve"])
    lines.append(f"{approvals} to-do item(s) need a person's approval; nothing here moves money.")
    return lines


def break_explain(*, tenant: Tenant, break_id: int) -> dict[str, Any]:
    """One stored break with its explanation, what to do and who approves, the rows behind
    it and any dispute on the same charges. Reads only. Raises ReconLookupError
    (`break_not_found`) for an id the tenant does not have."""
    with tenant_context(tenant):
        brk = (Break.objects.filter(tenant=tenant, pk=break_id).select_related("run", "contract_version").first()
               if isinstance(break_id, int) and not isinstance(break_id, bool) else None)
        if brk is None:
            raise ReconLookupError(BREAK_NOT_FOUND, f"no break {break_id!r} for this tenant")
        as_of = brk.run.as_of
        template, approver = TODO[brk.kind]
        first = {k: (v[0] if v else "-") for k, v in brk.refs.items()}
        contract = brk.contract_version.label if brk.contract_version else None
        captures = []
        orders = []
        for order_id in brk.refs.get("order", []):
            row = order_of(tenant=tenant, as_of=as_of, order_id=order_id)
            if row is not None:
                orders.append({"order_id": row.order_id, "ordered_at": row.ordered_at.isoformat(),
                               "status": row.status, **money_of(row.amount_minor, row.currency)})
        charge_ids = brk.refs.get("charge", [])
        for c in charges_for(tenant=tenant, as_of=as_of, charge_ids=charge_ids):
            captures.append({"transaction_id": c.transaction_id, "charge_id": c.charge_id,
                             "captured_at": c.created_at.isoformat(), "order_id": c.order_id or None,
                             **money_of(c.captured_minor, c.currency),
                             "refunded": money_of(c.refunded_minor, c.currency),
                             "fee": money_of(c.fee_minor, c.currency)})
        disputes = [{"dispute_id": d.dispute_id, "status": d.status, "reason": d.reason, "open": is_open(d.status),
                     **money_of(d.amount_minor, d.currency)}
                    for d in disputes_current(tenant=tenant, as_of=as_of) if d.charge_id and d.charge_id in charge_ids]
    action = template.format(contract=contract or "the contract", **first)
    return {
        "break_id": brk.pk, "run_id": brk.run_id, "as_of": as_of.isoformat(), "kind": brk.kind,
        **money_of(brk.amount_minor, brk.currency), "refs": brk.refs, "explanation": brk.explanation,
        "contract_version": contract, "status": brk.status, "resolution_note": brk.resolution_note or None,
        "orders": orders, "captures": captures, "disputes": disputes,
        "recommendation": {"action": f"{action} ({money_of(abs(brk.amount_minor), brk.currency)['display']}).",
                           "approver": approver, "only_a_person_can_approve": brk.kind in APPROVAL_KINDS,
                           "executes_anything": False},
        "approver": approver,
    }


__all__ = ["morning_review", "break_explain", "FINANCE", "CONTROLLER"]
