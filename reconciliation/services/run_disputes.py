"""The disputes leg of a run: open disputes due within a week, each linked to a break on its charge or order."""

from __future__ import annotations

from datetime import date
from typing import Any

from reconciliation import engine
from reconciliation.engine import BreakItem
from reconciliation.formats import day_number
from reconciliation.services.run_sql import execute, query, sql_in

# Dispute statuses with nothing left to decide (evidence sent, or closed).
DISPUTE_CLOSED = ("won", "lost", "closed", "warning_closed", "under_review", "warning_under_review",
                  "charge_refunded", "accepted", "expired", "prevented")


def disputes_due(tenant_id: int, as_of_day: int, breaks: list[BreakItem]) -> list[dict[str, Any]]:
    """Open disputes with evidence due within 7 days, each linked to a break on the same
    charge or, failing that, on the same order."""
    if not query("SELECT EXISTS (SELECT 1 FROM reconciliation_disputerow WHERE tenant_id = %(t)s)",
                 {"t": tenant_id})[0][0]:
        return []
    # Each dispute's capture by its charge: indexed here, not when rt_cap is built, so a
    # tenant without disputes does not pay for it (0.2 s of CPU per million captures).
    execute("CREATE INDEX rt_cap_charge ON rt_cap (charge_key)")
    rows = query(f"""
        SELECT d.dispute_id, d.charge_id, d.amount_minor, d.currency, d.evidence_due_by, c.order_id
        FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.dispute_id ORDER BY x.known_at DESC, x.id DESC) AS rn
              FROM reconciliation_disputerow x WHERE x.tenant_id = %(t)s) d
        LEFT JOIN rt_cap c ON c.charge_key = d.charge_id
        WHERE d.rn = 1 AND d.evidence_due_by IS NOT NULL AND d.status NOT IN {sql_in(DISPUTE_CLOSED)}
        ORDER BY d.evidence_due_by, d.dispute_id""", {"t": tenant_id})
    by_charge: dict[str, BreakItem] = {}
    by_order: dict[str, BreakItem] = {}
    for b in breaks:  # breaks are in their final order: the first (most money) wins
        for charge in b.refs["charge"]:
            by_charge.setdefault(charge, b)
        for order in b.refs["order"]:
            by_order.setdefault(order, b)
    due: list[dict[str, Any]] = []
    seen: set[str] = set()
    for dispute_id, charge_id, amount, currency, due_by, order_id in rows:
        if dispute_id in seen:
            continue
        seen.add(dispute_id)
        due_date = due_by if isinstance(due_by, date) else date.fromisoformat(str(due_by)[:10])
        days_left = day_number(due_date) - as_of_day
        if not 0 <= days_left <= engine.DISPUTE_DUE_DAYS:
            continue
        linked = by_charge.get(charge_id) or (by_order.get(order_id) if order_id else None)
        due.append({
            "dispute_id": dispute_id, "charge_id": charge_id, "due_by": due_date.isoformat(), "days_left": days_left,
            "amount_minor": amount, "currency": currency, "requires_human_decision": True,
            "linked_break": None if linked is None else {"kind": linked.kind, "refs": linked.refs},
        })
    return due
