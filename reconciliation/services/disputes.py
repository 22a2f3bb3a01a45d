"""Disputes: the list (file rows and live webhook rows, one per dispute id) and their triage.

Triage is arithmetic and rules over the imported rows, never a model: the reason family,
the days left to the evidence deadline, the links to breaks of the same order (a duplicate
capture and a "duplicate" dispute are one story) and a win-likelihood heuristic that lists
every point it adds or takes away. Every triage says `requires_human_decision: true`:
fighting or accepting a dispute is a person's call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from paypilot.models import Tenant
from paypilot.tenancy import tenant_context
from reconciliation.engine import DISPUTE_DUE_DAYS, DUPLICATE_CAPTURE, FINANCE
from reconciliation.models import DisputeRow
from reconciliation.services.errors import BAD_STATUS, DISPUTE_NOT_FOUND, ReconLookupError
from reconciliation.services.facts import (
    AWAITING_RESPONSE,
    CLOSED,
    STATUS_GROUPS,
    UNDER_REVIEW,
    BreakIndex,
    ChargeFacts,
    break_brief,
    charges_for,
    disputes_current,
    is_open,
    money_of,
    orders_of,
    run_for,
)

# Reason families (the public contract of `family`).
FRAUDULENT = "fraudulent"
DUPLICATE = "duplicate"
PRODUCT_NOT_RECEIVED = "product_not_received"
SUBSCRIPTION_CANCELLED = "subscription_cancelled"
CREDIT_NOT_PROCESSED = "credit_not_processed"
UNRECOGNISED = "unrecognised"
GENERAL = "general"
FAMILIES = (FRAUDULENT, DUPLICATE, PRODUCT_NOT_RECEIVED, SUBSCRIPTION_CANCELLED, CREDIT_NOT_PROCESSED,
            UNRECOGNISED, GENERAL)
# Stripe's reason codes (docs.stripe.com/api/disputes/object `reason`) to their family.
STRIPE_REASONS: dict[str, str] = {
    "fraudulent": FRAUDULENT, "debit_not_authorized": FRAUDULENT,
    "duplicate": DUPLICATE,
    "product_not_received": PRODUCT_NOT_RECEIVED,
    "subscription_canceled": SUBSCRIPTION_CANCELLED,
    "credit_not_processed": CREDIT_NOT_PROCESSED,
    "unrecognized": UNRECOGNISED,
    "general": GENERAL, "product_unacceptable": GENERAL, "customer_initiated": GENERAL,
    "bank_cannot_process": GENERAL, "check_returned": GENERAL, "incorrect_account_details": GENERAL,
    "insufficient_funds": GENERAL, "noncompliant": GENERAL,
}
# Other providers' and banks' words (a disputes file from Adyen, PayPal, a bank): the first
# fragment found in the normalised reason decides.
REASON_FRAGMENTS: tuple[tuple[str, str], ...] = (
    ("unrecogni", UNRECOGNISED), ("fraud", FRAUDULENT), ("unauthori", FRAUDULENT), ("no_authori", FRAUDULENT),
    ("cardholder_authori", FRAUDULENT),
    ("duplicate", DUPLICATE), ("paid_by_other", DUPLICATE), ("not_received", PRODUCT_NOT_RECEIVED),
    ("non_receipt", PRODUCT_NOT_RECEIVED), ("not_delivered", PRODUCT_NOT_RECEIVED),
    ("subscription", SUBSCRIPTION_CANCELLED), ("recurring", SUBSCRIPTION_CANCELLED),
    ("cancel", SUBSCRIPTION_CANCELLED), ("credit", CREDIT_NOT_PROCESSED), ("refund", CREDIT_NOT_PROCESSED),
)
# Order statuses that say the goods went out.
DELIVERED_STATUSES = frozenset({"shipped", "delivered", "fulfilled", "completed", "complete", "versendet",
                                "geliefert", "expédiée", "livrée", "enviado", "entregado"})
CANCELLED_STATUSES = frozenset({"cancelled", "canceled", "void", "voided", "storniert", "annulé", "cancelado"})
BASE_SCORE = 50
LOW_BELOW, HIGH_FROM = 35, 65


def reason_family(reason: str) -> str:
    word = reason.strip().lower().replace(" ", "_").replace("-", "_")
    if word in STRIPE_REASONS:
        return STRIPE_REASONS[word]
    for fragment, family in REASON_FRAGMENTS:
        if fragment in word:
            return family
    return GENERAL


@dataclass
class Point:
    points: int
    why: str

    def as_json(self) -> dict[str, Any]:
        return {"points": self.points, "why": self.why}


@dataclass
class DisputeContext:
    """A dispute and everything the data says about it (shared with the evidence pack)."""

    row: DisputeRow
    family: str
    days_left: int | None
    charge: ChargeFacts | None  # the disputed capture
    order_captures: list[ChargeFacts]  # every capture of the same order, oldest first
    order: Any  # OrderRow | None
    breaks: list[Any]

    @property
    def order_id(self) -> str:
        return self.order.order_id if self.order is not None else (self.charge.order_id if self.charge else "")

    @property
    def duplicate_of(self) -> ChargeFacts | None:
        """The original capture when the disputed one is a further capture of its order."""
        live = [c for c in self.order_captures if c.refundable_minor > 0]
        if self.charge is None or len(live) < 2 or live[0].charge_id == self.charge.charge_id:
            return None
        return live[0]


def _contexts(tenant: Tenant, rows: list[DisputeRow], as_of: date, index: BreakIndex) -> list[DisputeContext]:
    """Each dispute with its charge, the captures of its order and the order, read with one
    query per kind of row for all the disputes together."""
    by_charge: dict[str, ChargeFacts] = {}
    for c in charges_for(tenant=tenant, as_of=as_of, charge_ids=[r.charge_id for r in rows]):
        by_charge.setdefault(c.charge_id, c)
    order_ids = sorted({c.order_id for c in by_charge.values() if c.order_id})
    captures: dict[str, list[ChargeFacts]] = {}
    for c in charges_for(tenant=tenant, as_of=as_of, order_ids=order_ids):
        captures.setdefault(c.order_id, []).append(c)
    orders = orders_of(tenant=tenant, as_of=as_of, order_ids=order_ids)
    out = []
    for row in rows:
        charge = by_charge.get(row.charge_id)
        order_id = charge.order_id if charge else ""
        days_left = (row.evidence_due_by - as_of).days if row.evidence_due_by else None
        breaks = index.touching(charges={row.charge_id} - {""}, orders={order_id} - {""})
        out.append(DisputeContext(
            row=row, family=reason_family(row.reason), days_left=days_left, charge=charge,
            order_captures=captures.get(order_id, []) if order_id else ([charge] if charge else []),
            order=orders.get(order_id), breaks=breaks))
    return out


def context_for(*, tenant: Tenant, dispute_id: str, as_of: date) -> DisputeContext:
    row = disputes_current(tenant=tenant, as_of=as_of).filter(dispute_id=dispute_id).first()
    if row is None:
        raise ReconLookupError(DISPUTE_NOT_FOUND, f"no dispute {dispute_id!r} for this tenant as of {as_of}")
    return _contexts(tenant, [row], as_of, BreakIndex(run_for(tenant=tenant, as_of=as_of)))[0]


def _heuristic(ctx: DisputeContext) -> list[Point]:
    """Points from BASE_SCORE; each says why. Facts only from the imported rows."""
    row, charge = ctx.row, ctx.charge
    points: list[Point] = []
    if ctx.days_left is not None and ctx.days_left < 0:
        points.append(Point(-100, f"the evidence deadline {row.evidence_due_by} has passed"))
    if charge is None:
        points.append(Point(-15, f"charge {row.charge_id or '(none)'} is not in the imported provider rows: "
                                 "nothing shows what was captured"))
    if charge is not None and ctx.order is None:
        points.append(Point(-15, "no imported order for this charge: nothing shows what was bought"))
    if ctx.order is not None and charge is not None and ctx.order.amount_minor == charge.captured_minor:
        points.append(Point(+10, f"order {ctx.order.order_id} matches the capture "
                                 f"({money_of(charge.captured_minor, charge.currency)['display']})"))
    duplicate_of = ctx.duplicate_of
    if ctx.family == DUPLICATE:
        if duplicate_of is not None:
            points.append(Point(-45, f"the order really was captured twice: {charge.transaction_id if charge else ''}"
                                     f" after {duplicate_of.transaction_id}, and the second is not refunded; "
                                     "the customer is right"))
        elif charge is not None and len([c for c in ctx.order_captures if c.refundable_minor > 0]) == 1:
            points.append(Point(+20, "only one capture of this order stands: no double charge in the data"))
    if charge is not None and charge.refunded_minor:
        full = charge.refunded_minor >= charge.captured_minor
        if ctx.family in (CREDIT_NOT_PROCESSED, DUPLICATE, SUBSCRIPTION_CANCELLED):
            points.append(Point(+30 if full else +10,
                                f"{'a full' if full else 'a partial'} refund of "
                                f"{money_of(charge.refunded_minor, charge.currency)['display']} was already issued"))
        elif full:
            points.append(Point(-10, "the charge was already refunded in full: a lost dispute would take it twice"))
    if ctx.family == FRAUDULENT:
        points.append(Point(-15, "fraud claims are rarely won without 3-D Secure, AVS or CVC results, "
                                 "which the exports do not carry"))
    if ctx.family == UNRECOGNISED:
        points.append(Point(+5, "an unrecognised charge is often settled by showing the statement descriptor "
                                "and the order"))
    status = (ctx.order.status if ctx.order is not None else "").lower()
    if ctx.family == PRODUCT_NOT_RECEIVED:
        if status in DELIVERED_STATUSES:
            points.append(Point(+15, f"the order's status is {status!r}"))
        else:
            points.append(Point(-10, "no delivery fact in the imported rows (tracking must come from the carrier)"))
    if ctx.family == SUBSCRIPTION_CANCELLED and status in CANCELLED_STATUSES:
        points.append(Point(-25, f"the order's status is {status!r}: the cancellation is on record"))
    if row.details and row.details.get("has_evidence"):
        points.append(Point(0, "evidence was already submitted at the provider"))
    return points


def _likelihood(score: int) -> str:
    return "low" if score < LOW_BELOW else ("high" if score >= HIGH_FROM else "medium")


def _recommendation(ctx: DisputeContext, likelihood: str) -> dict[str, Any]:
    status = ctx.row.status
    if status in CLOSED:
        action, text = "none", f"Closed ({status}); nothing to decide."
    elif status in UNDER_REVIEW:
        action, text = "wait", "Evidence is with the issuer; wait for the decision."
    elif ctx.days_left is not None and ctx.days_left < 0:
        action, text = "accept", "The deadline has passed: record the loss and the chargeback fee."
    elif ctx.family == DUPLICATE and ctx.duplicate_of is not None:
        action = "accept"
        text = (f"Accept the dispute: it is the duplicate capture of order {ctx.order_id}. Do not also refund it "
                "(that would pay the customer twice).")
    elif likelihood == "low":
        action, text = "accept", "Likely lost: consider accepting to save the work; a person decides."
    else:
        action, text = "submit_evidence", "Gather the evidence pack and submit it at the provider before the deadline."
    return {"action": action, "text": text, "approver": FINANCE, "requires_human_decision": True,
            "executes_anything": False}


def _triage(ctx: DisputeContext) -> dict[str, Any]:
    row = ctx.row
    points = _heuristic(ctx)
    score = max(0, min(100, BASE_SCORE + sum(p.points for p in points)))
    likelihood = _likelihood(score)
    return {
        "dispute_id": row.dispute_id, "charge_id": row.charge_id, "order_id": ctx.order_id or None,
        **money_of(row.amount_minor, row.currency),
        "reason": row.reason, "family": ctx.family, "status": row.status, "open": is_open(row.status),
        "awaiting_response": row.status in AWAITING_RESPONSE,
        "evidence_due_by": row.evidence_due_by.isoformat() if row.evidence_due_by else None,
        "days_left": ctx.days_left,
        "due_soon": ctx.days_left is not None and 0 <= ctx.days_left <= DISPUTE_DUE_DAYS and is_open(row.status),
        "opened_at": row.created_at.isoformat(), "source": row.source, "row_id": row.pk,
        "linked_breaks": [break_brief(b) for b in ctx.breaks],
        "same_story": _same_story(ctx),
        "win_likelihood": {"level": likelihood, "score": score, "base": BASE_SCORE,
                           "reasons": [p.as_json() for p in points],
                           "method": "a fixed points table over the imported rows, not a model"},
        "recommendation": _recommendation(ctx, likelihood),
        "requires_human_decision": True,
        "approver": FINANCE,
    }


def _same_story(ctx: DisputeContext) -> str | None:
    """One sentence when the dispute and a break are the same problem."""
    dup = [b for b in ctx.breaks if b.kind == DUPLICATE_CAPTURE]
    if ctx.family == DUPLICATE and dup:
        return (f"Dispute {ctx.row.dispute_id} ({ctx.row.reason}) is about the duplicate capture of order "
                f"{ctx.order_id}: one story, one remedy. The dispute will take the money back; refunding the "
                "duplicate as well would pay the customer twice.")
    if dup:
        return (f"Order {ctx.order_id} also has a duplicate capture; the customer may dispute it too.")
    return None


def dispute_triage(*, tenant: Tenant, dispute_id: str, as_of: date) -> dict[str, Any]:
    """Triage of one dispute as of `as_of`. Reads only. Raises ReconLookupError
    (`dispute_not_found`) for an id the tenant does not have."""
    with tenant_context(tenant):
        return _triage(context_for(tenant=tenant, dispute_id=dispute_id, as_of=as_of))


def dispute_list(*, tenant: Tenant, as_of: date, status: str | None = None) -> list[dict[str, Any]]:
    """Every dispute opened by `as_of`, triaged, nearest deadline first. `status` filters:
    a provider status (needs_response, won, ...) or `open` / `closed`. Reads only; raises
    ReconLookupError (`invalid_status`) for a status that is neither."""
    # Filtered after the newest row per id is chosen (a filter on the queryset would be
    # applied before the window and could pick an older, still open row).
    with tenant_context(tenant):
        return _list(tenant=tenant, as_of=as_of, status=status)


def _list(*, tenant: Tenant, as_of: date, status: str | None) -> list[dict[str, Any]]:
    rows = list(disputes_current(tenant=tenant, as_of=as_of))
    if status is not None:
        word = status.strip().lower()
        known = AWAITING_RESPONSE | UNDER_REVIEW | CLOSED
        if word not in known and word not in STATUS_GROUPS:
            raise ReconLookupError(BAD_STATUS, f"status must be open, closed or one of {', '.join(sorted(known))}")
        if word == "open":
            rows = [r for r in rows if is_open(r.status)]
        elif word == "closed":
            rows = [r for r in rows if not is_open(r.status)]
        else:
            rows = [r for r in rows if r.status == word]
    index = BreakIndex(run_for(tenant=tenant, as_of=as_of))
    items = [_triage(ctx) for ctx in _contexts(tenant, rows, as_of, index)]
    far = 10**9
    items.sort(key=lambda d: (not d["open"], d["days_left"] if d["days_left"] is not None else far,
                              d["dispute_id"]))
    return items
