"""Refund check: is a refund of this order or charge appropriate and safe? Read-only.

It answers with the checks that passed or failed and who must approve; it never calls a
provider and never refunds (`executes_refund: false` on every answer). The dangers it
looks for: a charge already refunded (in full or in part), a disputed charge (the dispute
takes the money back; a refund as well pays the customer twice), a duplicate capture
(refund the duplicate, not the original) and an amount above what is left to refund.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django.utils import timezone

from paypilot.models import Tenant
from paypilot.money import currency_known
from paypilot.tenancy import tenant_context
from reconciliation.engine import FINANCE, money
from reconciliation.services.errors import (
    BAD_AMOUNT,
    BAD_CURRENCY,
    CHARGE_NOT_FOUND,
    ORDER_NOT_FOUND,
    TARGET_MISSING,
    ReconLookupError,
)
from reconciliation.services.facts import (
    ChargeFacts,
    charges_for,
    disputes_on_charges,
    is_open,
    money_of,
    order_of,
)

# Check codes (the public contract of `checks[].code`).
ALREADY_REFUNDED = "already_refunded"  # nothing left to refund on the charge
PARTIALLY_REFUNDED = "partially_refunded"  # part of the charge went back already
DISPUTED = "disputed"  # an open or lost dispute on the charge
DISPUTE_WON = "dispute_won"  # a dispute was won: the money came back, a refund is a new decision
DUPLICATE_ORIGINAL = "duplicate_original"  # the order was captured twice and this is the first capture
DUPLICATE_EXTRA = "duplicate_extra"  # this capture is the duplicate: refunding it is the fix
AMOUNT_ABOVE_REFUNDABLE = "amount_above_refundable"  # more than captured minus refunded
CURRENCY_MISMATCH = "currency_mismatch"  # the amount's currency is not the charge's
ORDER_NOT_CAPTURED = "order_not_captured"  # an order with no capture: there is nothing to refund
CAPTURE_NOT_IMPORTED = "capture_not_imported"  # a charge known only from its dispute (a webhook)
# Severity: a `block` check makes the refund unsafe; a `warn` needs the approver's attention.
BLOCK, WARN, OK = "block", "warn", "ok"


def _check(code: str, severity: str, text: str) -> dict[str, Any]:
    return {"code": code, "severity": severity, "text": text}


def _captures(*, tenant: Tenant, as_of: date, order_id: str | None, charge_id: str | None
              ) -> tuple[list[ChargeFacts], ChargeFacts | None, str]:
    """(every capture of the order, the capture to refund or None, the order id)."""
    if charge_id:
        found = charges_for(tenant=tenant, as_of=as_of, charge_ids=[charge_id])
        if not found and disputes_on_charges(tenant=tenant, as_of=as_of, charge_ids=[charge_id]):
            return [], None, order_id or ""  # disputed (a webhook told us) though its capture is not imported
        if not found:
            raise ReconLookupError(CHARGE_NOT_FOUND, f"no imported capture with charge id {charge_id!r}")
        target = found[0]
        order = target.order_id or (order_id or "")
        siblings = charges_for(tenant=tenant, as_of=as_of, order_id=order) if order else [target]
        return siblings or [target], target, order
    assert order_id
    if order_of(tenant=tenant, as_of=as_of, order_id=order_id) is None:
        captures = charges_for(tenant=tenant, as_of=as_of, order_id=order_id)
        if not captures:
            raise ReconLookupError(ORDER_NOT_FOUND, f"no imported order or capture for order {order_id!r}")
    captures = charges_for(tenant=tenant, as_of=as_of, order_id=order_id)
    live = [c for c in captures if c.refundable_minor > 0]
    # For an order captured twice, the capture to refund is the duplicate (the newest).
    chosen = live[-1] if live else (captures[-1] if captures else None)
    return captures, chosen, order_id


def refund_check(*, tenant: Tenant, order_id: str | None = None, charge_id: str | None = None,
                 amount_minor: int | None, currency: str | None, as_of: date | None = None) -> dict[str, Any]:
    """Check a refund of `amount_minor` (None: what is left to refund) of a charge, or of an
    order (then its duplicate capture when it has one, else its capture). Reads only; never
    calls a provider. Raises ReconLookupError: `order_or_charge_required`, `invalid_amount`,
    `invalid_currency`, `order_not_found`, `charge_not_found`."""
    if not (order_id or charge_id):
        raise ReconLookupError(TARGET_MISSING, "give an order_id or a charge_id")
    if amount_minor is not None and (isinstance(amount_minor, bool) or not isinstance(amount_minor, int)
                                     or amount_minor <= 0):
        raise ReconLookupError(BAD_AMOUNT, "amount_minor must be a positive whole number of minor units")
    if currency is not None and not (isinstance(currency, str) and len(currency) == 3
                                     and currency_known(currency.upper())):
        raise ReconLookupError(BAD_CURRENCY, "currency must be a three-letter ISO 4217 code")
    day = as_of or timezone.now().date()
    with tenant_context(tenant):
        return _checked(tenant=tenant, day=day, order_id=order_id, charge_id=charge_id, amount_minor=amount_minor,
                        currency=currency)


def _checked(*, tenant: Tenant, day: date, order_id: str | None, charge_id: str | None, amount_minor: int | None,
             currency: str | None) -> dict[str, Any]:
    captures, target, order = _captures(tenant=tenant, as_of=day, order_id=order_id, charge_id=charge_id)
    checks: list[dict[str, Any]] = []
    base: dict[str, Any] = {"order_id": order or None, "charge_id": target.charge_id if target else charge_id,
                            "as_of": day.isoformat(), "executes_refund": False, "approver": FINANCE,
                            "requires_human_approval": True}
    if target is None and charge_id:
        checks.extend(_dispute_checks(tenant=tenant, day=day, charge_id=charge_id, debits=False))
        checks.append(_check(CAPTURE_NOT_IMPORTED, BLOCK, f"Charge {charge_id} is known only from its dispute: "
                             "import the provider report with its capture before deciding on a refund."))
        return _answer(base, checks, None, amount_minor, currency)
    if target is None:
        checks.append(_check(ORDER_NOT_CAPTURED, BLOCK, f"Order {order} has no capture: there is nothing to refund."))
        return _answer(base, checks, None, amount_minor, currency)
    ccy = target.currency
    if currency is not None and currency.upper() != ccy:
        checks.append(_check(CURRENCY_MISMATCH, BLOCK, f"The charge is in {ccy}, not {currency.upper()}."))
    left = target.refundable_minor
    if left == 0:
        checks.append(_check(ALREADY_REFUNDED, BLOCK, f"Charge {target.charge_id} was already refunded in full "
                             f"({money(target.refunded_minor, ccy)})."))
    elif target.refunded_minor:
        checks.append(_check(PARTIALLY_REFUNDED, WARN, f"{money(target.refunded_minor, ccy)} of "
                             f"{money(target.captured_minor, ccy)} was already refunded; {money(left, ccy)} is left."))
    amount = left if amount_minor is None else amount_minor
    if amount_minor is not None and amount_minor > left:
        checks.append(_check(AMOUNT_ABOVE_REFUNDABLE, BLOCK, f"{money(amount_minor, ccy)} is more than captured minus "
                             f"refunded ({money(target.captured_minor, ccy)} - {money(target.refunded_minor, ccy)} "
                             f"= {money(left, ccy)})."))
    checks.extend(_dispute_checks(tenant=tenant, day=day, charge_id=target.charge_id,
                                  debits=bool(target.dispute_debits)))
    checks.extend(_duplicate_checks(captures=captures, target=target, order=order, asked_charge=charge_id))
    return _answer(base, checks, target, amount, ccy)


def _dispute_checks(*, tenant: Tenant, day: date, charge_id: str, debits: bool) -> list[dict[str, Any]]:
    """The charge's disputes from every source (webhook and files, each once)."""
    out = []
    rows = disputes_on_charges(tenant=tenant, as_of=day, charge_ids=[charge_id])
    for row in rows:
        if is_open(row.status) or row.status == "lost":
            out.append(_check(DISPUTED, BLOCK, f"Charge {charge_id} is disputed ({row.dispute_id}, "
                              f"{row.reason or 'no reason'}, {row.status or 'open'}): the dispute takes the money "
                              "back, so a refund as well would pay the customer twice. Accept or fight the dispute "
                              "instead."))
        elif row.status == "won":
            out.append(_check(DISPUTE_WON, WARN, f"Dispute {row.dispute_id} on this charge was won: the money came "
                              "back; refunding now is a new decision."))
    if not rows and debits:
        out.append(_check(DISPUTED, BLOCK, f"The provider debited a dispute on charge {charge_id}: a refund "
                          "as well would pay the customer twice."))
    return out


def _duplicate_checks(*, captures: list[ChargeFacts], target: ChargeFacts, order: str,
                      asked_charge: str | None) -> list[dict[str, Any]]:
    live = [c for c in captures if c.refundable_minor > 0]
    if len(live) < 2:
        return []
    original = live[0]
    if target.charge_id == original.charge_id:
        extra = ", ".join(c.charge_id for c in live[1:])
        return [_check(DUPLICATE_ORIGINAL, BLOCK, f"Order {order} was captured {len(live)} times; {target.charge_id} "
                       f"is the original. Refund the duplicate ({extra}), not the original.")]
    chosen = "" if asked_charge else " (chosen for the order)"
    return [_check(DUPLICATE_EXTRA, OK, f"Charge {target.charge_id}{chosen} is a duplicate capture of order {order} "
                   f"after {original.charge_id}: refunding it corrects the double charge.")]


def _answer(base: dict[str, Any], checks: list[dict[str, Any]], target: ChargeFacts | None, amount: int | None,
            currency: str | None) -> dict[str, Any]:
    blocked = [c for c in checks if c["severity"] == BLOCK]
    safe = not blocked
    if target is None and blocked:
        text = "Do not refund: " + " ".join(c["text"] for c in blocked)
    elif target is None:
        text = "Do not refund: there is no capture."
    elif safe:
        text = (f"A refund of {money(amount or 0, target.currency)} on {target.charge_id} looks appropriate and safe; "
                f"the {FINANCE} approves it and issues it at the provider.")
    else:
        text = "Do not refund: " + " ".join(c["text"] for c in blocked)
    answer = {**base, "appropriate": safe, "safe": safe, "checks": checks,
              "recommendation": {"action": "refund" if safe else "do_not_refund", "text": text,
                                 "approver": FINANCE, "executes_refund": False}}
    if target is not None:
        answer.update({
            "amount": money_of(amount or 0, target.currency),
            "captured": money_of(target.captured_minor, target.currency),
            "refunded": money_of(target.refunded_minor, target.currency),
            "refundable": money_of(target.refundable_minor, target.currency),
        })
    elif amount is not None and currency:
        answer["amount"] = money_of(amount, currency.upper())
    return answer
