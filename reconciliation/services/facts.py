"""What the imported rows prove about one order, charge or dispute: the shared reads of the
dispute triage, the evidence pack and the refund check.

Per id the newest row wins, as in the run (a weekly export overlapping the last); for a
dispute, the row PayPilot learned last (a file's import time, a live row's last event).
Reads one order's or one charge's rows through the tenant indexes, never a whole table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from paypilot.models import Tenant
from reconciliation.engine import money
from reconciliation.models import Break, DisputeRow, OrderRow, ProviderRow, Run

# Stripe's dispute statuses (docs.stripe.com/api/disputes/object), grouped.
AWAITING_RESPONSE = frozenset({"needs_response", "warning_needs_response"})  # evidence or acceptance due
UNDER_REVIEW = frozenset({"under_review", "warning_under_review"})  # evidence sent, the issuer decides
CLOSED = frozenset({"won", "lost", "warning_closed", "prevented", "charge_refunded", "accepted", "expired",
                    "closed"})  # decided: nothing left to do
STATUS_GROUPS = ("open", "closed")  # dispute_list's status filter also takes these two words


def money_of(amount_minor: int, currency: str) -> dict[str, Any]:
    """Money as every answer carries it: minor units, the currency and a display string."""
    return {"amount_minor": int(amount_minor), "currency": currency, "display": money(int(amount_minor), currency)}


def end_of(day: date) -> datetime:
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)


def is_open(status: str) -> bool:
    return status not in CLOSED


def _newest(rows: QuerySet[Any], key: str, *order: Any) -> QuerySet[Any]:
    return rows.annotate(_rn=Window(RowNumber(), partition_by=[F(key)],
                                    order_by=list(order) or [F("id").desc()])).filter(_rn=1)


def disputes_current(*, tenant: Tenant, as_of: date) -> QuerySet[DisputeRow]:
    """One row per dispute id (learned last wins), opened on or before `as_of`."""
    rows = DisputeRow.objects.filter(tenant=tenant, created_at__lt=end_of(as_of))
    return _newest(rows, "dispute_id", F("known_at").desc(), F("id").desc())


def disputes_on_charges(*, tenant: Tenant, as_of: date, charge_ids: list[str]) -> list[DisputeRow]:
    """The disputes of these charges, from every source (a Stripe webhook's live row and
    imported files joined by dispute id, learned last wins): each dispute once."""
    wanted = {c for c in charge_ids if c}
    if not wanted:
        return []
    return [row for row in disputes_current(tenant=tenant, as_of=as_of) if row.charge_id in wanted]


@dataclass
class ChargeFacts:
    """One capture and what happened to it, from the provider rows."""

    charge_id: str
    transaction_id: str
    created_at: datetime
    currency: str
    captured_minor: int  # the charge plus partial-capture reversals
    fee_minor: int
    order_id: str  # "" when no order is known
    refunds: list[dict[str, Any]] = field(default_factory=list)  # {transaction_id, created_at, amount_minor}
    dispute_debits: list[dict[str, Any]] = field(default_factory=list)  # dispute and dispute_reversal rows
    payout_id: str = ""

    @property
    def refunded_minor(self) -> int:
        return sum(r["amount_minor"] for r in self.refunds)

    @property
    def refundable_minor(self) -> int:
        return max(self.captured_minor - self.refunded_minor, 0)


def _charge_key(row: ProviderRow) -> str:
    return row.charge_id or row.transaction_id


def charges_for(*, tenant: Tenant, as_of: date, charge_ids: list[str] | None = None,
                order_id: str | None = None, order_ids: list[str] | None = None) -> list[ChargeFacts]:
    """The captures of the given charges, or of orders (by the order's payment reference
    or the order reference the provider carries), oldest first, with their refunds,
    partial-capture reversals and dispute rows. One query per kind of row for any number
    of ids: callers with many disputes ask once for all of them."""
    rows = ProviderRow.objects.filter(tenant=tenant, created_at__lt=end_of(as_of))
    if charge_ids is not None:
        wanted = sorted({c for c in charge_ids if c})
        if not wanted:
            return []
        charges = rows.filter(type=ProviderRow.Type.CHARGE).filter(
            Q(charge_id__in=wanted) | Q(charge_id="", transaction_id__in=wanted))
    else:
        ids = sorted({o for o in (order_ids if order_ids is not None else [order_id or ""]) if o})
        if not ids:
            return []
        refs = list(OrderRow.objects.filter(tenant=tenant, order_id__in=ids).exclude(payment_reference="")
                    .values_list("payment_reference", flat=True))
        charges = rows.filter(type=ProviderRow.Type.CHARGE).filter(
            Q(order_reference__in=ids) | Q(charge_id__in=refs) | Q(charge_id="", transaction_id__in=refs))
    captures = list(_newest(charges, "transaction_id").order_by("created_at", "transaction_id"))
    keys = sorted({_charge_key(c) for c in captures})
    related = list(_newest(rows.filter(charge_id__in=keys).exclude(type=ProviderRow.Type.CHARGE), "transaction_id")
                   .order_by("created_at", "transaction_id"))
    orders = _orders_by_reference(tenant=tenant, as_of=as_of, references=keys)
    by_key: dict[str, list[ProviderRow]] = {}
    for r in related:
        by_key.setdefault(r.charge_id, []).append(r)
    out: list[ChargeFacts] = []
    for c in captures:
        key = _charge_key(c)
        facts = ChargeFacts(charge_id=key, transaction_id=c.transaction_id, created_at=c.created_at,
                            currency=c.currency, captured_minor=c.amount_minor, fee_minor=c.fee_minor,
                            order_id=orders.get(key) or c.order_reference, payout_id=c.payout_id)
        for r in by_key.get(key, []):
            if r.type == ProviderRow.Type.ADJUSTMENT:
                facts.captured_minor += r.amount_minor
            elif r.type == ProviderRow.Type.REFUND:
                facts.refunds.append({"transaction_id": r.transaction_id, "created_at": r.created_at,
                                      "amount_minor": -r.amount_minor})
            elif r.type in (ProviderRow.Type.DISPUTE, ProviderRow.Type.DISPUTE_REVERSAL):
                facts.dispute_debits.append({"transaction_id": r.transaction_id, "type": r.type,
                                             "created_at": r.created_at, "amount_minor": r.amount_minor,
                                             "fee_minor": r.fee_minor})
        out.append(facts)
    return out


def _orders_by_reference(*, tenant: Tenant, as_of: date, references: list[str]) -> dict[str, str]:
    if not references:
        return {}
    rows = OrderRow.objects.filter(tenant=tenant, ordered_at__lt=end_of(as_of), payment_reference__in=references)
    return dict(_newest(rows, "order_id").values_list("payment_reference", "order_id"))


def orders_of(*, tenant: Tenant, as_of: date, order_ids: list[str]) -> dict[str, OrderRow]:
    """The newest row of each order (one query)."""
    ids = sorted({o for o in order_ids if o})
    if not ids:
        return {}
    rows = OrderRow.objects.filter(tenant=tenant, order_id__in=ids, ordered_at__lt=end_of(as_of))
    return {r.order_id: r for r in _newest(rows, "order_id")}


def order_of(*, tenant: Tenant, as_of: date, order_id: str) -> OrderRow | None:
    return (OrderRow.objects.filter(tenant=tenant, order_id=order_id, ordered_at__lt=end_of(as_of))
            .order_by("-id").first())


def run_for(*, tenant: Tenant, as_of: date) -> Run | None:
    """The stored run the links point at: the newest for `as_of`, else the newest before it."""
    runs = Run.objects.filter(tenant=tenant)
    return (runs.filter(as_of=as_of).order_by("-created_at", "-pk").first()
            or runs.filter(as_of__lt=as_of).order_by("-as_of", "-created_at", "-pk").first())


class BreakIndex:
    """A run's breaks by the charges and orders they name, loaded once (one query)."""

    def __init__(self, run: Run | None) -> None:
        self.run = run
        self.by_charge: dict[str, list[Break]] = {}
        self.by_order: dict[str, list[Break]] = {}
        if run is None:
            return
        for b in run.breaks.order_by("position"):
            for charge in b.refs.get("charge", []):
                self.by_charge.setdefault(charge, []).append(b)
            for order in b.refs.get("order", []):
                self.by_order.setdefault(order, []).append(b)

    def touching(self, *, charges: set[str], orders: set[str]) -> list[Break]:
        """Breaks naming one of `charges` or `orders`, in the run's order (most money first)."""
        found: dict[int, Break] = {}
        for charge in charges:
            found.update((b.pk, b) for b in self.by_charge.get(charge, []))
        for order in orders:
            found.update((b.pk, b) for b in self.by_order.get(order, []))
        return sorted(found.values(), key=lambda b: b.position)


def break_brief(b: Break) -> dict[str, Any]:
    return {"break_id": b.pk, "kind": b.kind, **money_of(b.amount_minor, b.currency), "refs": b.refs,
            "explanation": b.explanation, "status": b.status}
