"""The pure half of a run: break rules per order, explanations, the to-do list, the JSON.

No ORM here. `services/runs.py` does the set-based part in SQL (joins, window functions)
and hands this module only the rows that are already known to be off, grouped per order
or per payout; everything here is linear in those rows. Tested directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from paypilot.money import format_minor

ENGINE_VERSION = "1"  # part of every input digest: a rule change makes a new run

# Break kinds (the public contract of `breaks[].kind`).
MISSING_CAPTURE = "missing_capture"
CAPTURE_WITHOUT_ORDER = "capture_without_order"
AMOUNT_MISMATCH = "amount_mismatch"
DUPLICATE_CAPTURE = "duplicate_capture"
FEE_MISMATCH = "fee_mismatch"
PAYOUT_SHORT = "payout_short"
PAYOUT_OVER = "payout_over"
PAYOUT_MISSING = "payout_missing"
BREAK_KINDS = (
    MISSING_CAPTURE, CAPTURE_WITHOUT_ORDER, AMOUNT_MISMATCH, DUPLICATE_CAPTURE, FEE_MISMATCH,
    PAYOUT_SHORT, PAYOUT_OVER, PAYOUT_MISSING,
)
REF_KEYS = ("order", "transaction", "charge", "payout", "bank")
DISPUTE_DUE_DAYS = 7

# Who must approve the follow-up of each kind; nothing here moves money.
FINANCE = "finance approver"
CONTROLLER = "controller"
TODO: dict[str, tuple[str, str]] = {
    MISSING_CAPTURE: ("Check with the shop whether order {order} was paid; re-charge or cancel it", FINANCE),
    CAPTURE_WITHOUT_ORDER: ("Find the order behind capture {transaction}; refund it if there is none", FINANCE),
    AMOUNT_MISMATCH: ("Correct order {order} or refund/collect the difference", FINANCE),
    DUPLICATE_CAPTURE: ("Refund the extra capture {transaction} of order {order}", FINANCE),
    FEE_MISMATCH: ("Claim the fee difference on {transaction} from the provider, citing {contract}", CONTROLLER),
    PAYOUT_SHORT: ("Ask the provider and the bank why payout {payout} arrived short", CONTROLLER),
    PAYOUT_OVER: ("Ask the provider and the bank why payout {payout} arrived over its amount", CONTROLLER),
    PAYOUT_MISSING: ("Open a payout trace for {payout} with the provider", CONTROLLER),
}


def refs_make(**ids: Any) -> dict[str, list[str]]:
    """Every ref key present, each a sorted list of distinct ids (deterministic JSON)."""
    out: dict[str, list[str]] = {}
    for key in REF_KEYS:
        value = ids.get(key)
        values = value if isinstance(value, list | tuple | set) else ([value] if value else [])
        out[key] = sorted({str(v) for v in values if v})
    return out


def money(amount_minor: int, currency: str) -> str:
    return f"{format_minor(amount_minor, currency)} {currency}"


@dataclass
class BreakItem:
    kind: str
    amount_minor: int
    currency: str
    refs: dict[str, list[str]]
    explanation: str
    contract_version: str | None = None
    contract_version_id: int | None = field(default=None, compare=False)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind, "amount_minor": self.amount_minor, "currency": self.currency,
            "refs": self.refs, "explanation": self.explanation,
        }
        if self.contract_version is not None:
            data["contract_version"] = self.contract_version
        return data

    def sort_key(self) -> tuple:
        return (-abs(self.amount_minor), self.currency, BREAK_KINDS.index(self.kind),
                json.dumps(self.refs, sort_keys=True))


@dataclass(frozen=True)
class Capture:
    transaction_id: str
    charge: str
    amount_minor: int  # captured: the charge plus any partial-capture reversal
    currency: str


def order_breaks(
    *, order_id: str, amount_minor: int, currency: str, captures: list[Capture],
) -> list[BreakItem]:
    """Leg 1 for one order whose captures (not fully refunded, in capture order) do not
    already match it one to one.

    No capture -> missing_capture. Several captures all below the order amount are partial
    captures: fine when they add up, else one amount_mismatch. Otherwise the first capture
    of the full amount (or the first capture) is the capture, the rest duplicate_capture,
    and a primary capture of another amount is an amount_mismatch of the difference."""
    if not captures:
        return [BreakItem(MISSING_CAPTURE, amount_minor, currency, refs_make(order=order_id),
                          f"Order {order_id} for {money(amount_minor, currency)} has no capture at the provider.")]
    same_currency = [c for c in captures if c.currency == currency]
    if len(same_currency) != len(captures):
        other = next(c for c in captures if c.currency != currency)
        return [BreakItem(AMOUNT_MISMATCH, amount_minor, currency,
                          refs_make(order=order_id, transaction=other.transaction_id, charge=other.charge),
                          f"Order {order_id} is in {currency} but capture {other.transaction_id} is "
                          f"{money(other.amount_minor, other.currency)}.")]
    total = sum(c.amount_minor for c in captures)
    if len(captures) > 1 and all(c.amount_minor < amount_minor for c in captures):
        if total == amount_minor:
            return []
        ids = [c.transaction_id for c in captures]
        return [BreakItem(AMOUNT_MISMATCH, total - amount_minor, currency,
                          refs_make(order=order_id, transaction=ids, charge=[c.charge for c in captures]),
                          f"Order {order_id} is {money(amount_minor, currency)} but its {len(captures)} partial "
                          f"captures add up to {money(total, currency)} ({money(total - amount_minor, currency)}).")]
    primary = next((c for c in captures if c.amount_minor == amount_minor), captures[0])
    out: list[BreakItem] = []
    if primary.amount_minor != amount_minor:
        diff = primary.amount_minor - amount_minor
        out.append(BreakItem(AMOUNT_MISMATCH, diff, currency,
                             refs_make(order=order_id, transaction=primary.transaction_id, charge=primary.charge),
                             f"Order {order_id} is {money(amount_minor, currency)} but capture "
                             f"{primary.transaction_id} is {money(primary.amount_minor, currency)} "
                             f"({money(diff, currency)})."))
    for extra in captures:
        if extra is primary:
            continue
        out.append(BreakItem(DUPLICATE_CAPTURE, extra.amount_minor, currency,
                             refs_make(order=order_id, transaction=[extra.transaction_id],
                                       charge=[extra.charge, primary.charge]),
                             f"Order {order_id} was captured again by {extra.transaction_id} for "
                             f"{money(extra.amount_minor, currency)} after {primary.transaction_id}, "
                             "and the second capture was not refunded."))
    return out


def todo_build(*, breaks: list[BreakItem], disputes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What to do, most money first; each item names who must approve it."""
    items: list[dict[str, Any]] = []
    for b in breaks:
        template, approver = TODO[b.kind]
        first = {k: (v[0] if v else "-") for k, v in b.refs.items()}
        action = template.format(contract=b.contract_version or "the contract", **first)
        items.append({"kind": b.kind, "action": f"{action} ({money(abs(b.amount_minor), b.currency)}).",
                      "amount_minor": abs(b.amount_minor), "currency": b.currency, "approver": approver,
                      "refs": b.refs})
    for d in disputes:
        items.append({
            "kind": "dispute_due",
            "action": f"Decide whether to fight or accept dispute {d['dispute_id']} "
                      f"({money(d['amount_minor'], d['currency'])}) before {d['due_by']}; "
                      f"{d['days_left']} days left.",
            "amount_minor": d["amount_minor"], "currency": d["currency"], "approver": FINANCE,
            "refs": refs_make(charge=d.get("charge_id")),
        })
    items.sort(key=lambda i: (-i["amount_minor"], i["currency"], i["kind"], json.dumps(i["refs"], sort_keys=True)))
    return items


def result_dump(result: dict[str, Any]) -> str:
    """The one serialisation of a run: same inputs and as-of date, same bytes."""
    return json.dumps(result, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- exports -------------------------------------------------------------------------------

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """A cell a spreadsheet will not execute: text starting like a formula (=HYPERLINK(...),
    +, -, @, tab, CR) gets a leading apostrophe (OWASP CSV injection guidance). Numbers pass."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value
