"""Stripe events to domain events: one translation per handled event type, and the decline details' fetch.

Sources (`shared/facts/stripe_webhooks.md`; docs.stripe.com/api/charges/object,
/api/credit_notes/object, /api/disputes/object):
- Event times: the event's `created` (Unix seconds) is when the change happened at Stripe;
  payments use the invoice's `status_transitions.paid_at`, voids `voided_at`, uncollectible
  `marked_uncollectible_at`, cancellations the subscription's `ended_at`.
- Refunds: a Charge carries `amount_refunded`, the cumulative total refunded; before basil it
  also names its `invoice` (basil removed `invoice` from Charge). A credit note names its
  `invoice` in every version, with `out_of_band_amount` (money returned outside Stripe) and,
  on current versions, `refunds[]` (`{refund, amount_refunded}`, the Stripe refunds it
  created or linked). To count each refunded unit once: before basil, money returned through
  Stripe is read from `charge.refunded` (cumulative per charge) and credit notes add only
  their out-of-band part; from basil on, a charge no longer names its invoice, so credit notes
  carry both parts and `charge.refunded` is acknowledged and ignored (`charge_without_invoice`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from integrations.domain import (
    DomainEvent,
    Ignored,
    InvoiceVoided,
    PaymentFailed,
    PaymentRefunded,
    PaymentSucceeded,
    RetriesExhausted,
    SubscriptionCancelled,
)
from integrations.providers.base import Credentials, PayloadInvalid
from integrations.providers.stripe_codes import failure_code_for
from integrations.providers.stripe_payloads import (
    amount_of,
    currency_of,
    data_object,
    id_of,
    int_or_none,
    network_answer,
    optional_amount_of,
    payment_error,
    payment_intent_id,
    short,
    subscription_id,
    time_of,
)
from paypilot.disputes import DisputeReport


def translate(*, payload: dict[str, Any], event_type: str, context: Credentials) -> DomainEvent:
    handler = _HANDLERS.get(event_type)
    if handler is None:
        return Ignored("unhandled_event_type")
    obj = data_object(payload)
    if not obj.get("id"):
        return Ignored("object_missing")
    return handler(obj, _EventInfo(at=time_of(payload.get("created")),
                                   api_version=str(payload.get("api_version") or "")))


@dataclass(frozen=True)
class _EventInfo:
    at: datetime | None  # the event's `created`: when the change happened at Stripe
    api_version: str

    @property
    def basil_or_later(self) -> bool:
        # Versions are "YYYY-MM-DD.name": the date part orders them.
        return self.api_version[:10] >= BASIL[:10]


BASIL = "2025-03-31.basil"  # Charge lost its `invoice` field here


def _transition_time(invoice: Mapping[str, Any], key: str, event: _EventInfo) -> datetime | None:
    transitions = invoice.get("status_transitions")
    found = time_of(transitions.get(key)) if isinstance(transitions, dict) else None
    return found or event.at


def _payment_failed(invoice: dict[str, Any], event: _EventInfo) -> DomainEvent:
    error = payment_error(invoice)
    return PaymentFailed(
        external_invoice_id=str(invoice["id"]),
        amount_minor=amount_of(invoice, "amount_due"),
        currency=currency_of(invoice),
        failure_code=failure_code_for(invoice=invoice, error=error),
        attempt=max(1, int_or_none(invoice.get("attempt_count")) or 1),
        subscription_id=subscription_id(invoice),
        provider_customer_id=id_of(invoice.get("customer")),
        customer_email=str(invoice.get("customer_email") or ""),
        customer_name=str(invoice.get("customer_name") or ""),
        hosted_invoice_url=str(invoice.get("hosted_invoice_url") or ""),
        retry_at=time_of(invoice.get("next_payment_attempt")),
        occurred_at=event.at,
        **network_answer(error),
    )


def _payment_succeeded(invoice: dict[str, Any], event: _EventInfo) -> DomainEvent:
    return PaymentSucceeded(
        external_invoice_id=str(invoice["id"]),
        amount_paid_minor=amount_of(invoice, "amount_paid"),
        currency=currency_of(invoice),
        occurred_at=_transition_time(invoice, "paid_at", event),
    )


def _subscription_deleted(subscription: dict[str, Any], event: _EventInfo) -> DomainEvent:
    return SubscriptionCancelled(subscription_id=str(subscription["id"]),
                                 occurred_at=time_of(subscription.get("ended_at")) or event.at)


def _marked_uncollectible(invoice: dict[str, Any], event: _EventInfo) -> DomainEvent:
    return RetriesExhausted(external_invoice_id=str(invoice["id"]),
                            occurred_at=_transition_time(invoice, "marked_uncollectible_at", event))


def _voided(invoice: dict[str, Any], event: _EventInfo) -> DomainEvent:
    return InvoiceVoided(external_invoice_id=str(invoice["id"]),
                         occurred_at=_transition_time(invoice, "voided_at", event))


def _charge_refunded(charge: dict[str, Any], event: _EventInfo) -> DomainEvent:
    """Cumulative per charge: `amount_refunded` is everything refunded so far, so a
    redelivery, a second partial refund or an out-of-order event all compute the right part."""
    invoice_id = id_of(charge.get("invoice"))
    if not invoice_id:
        # basil+ (or a charge outside billing): the refund is counted from its credit note.
        return Ignored("charge_without_invoice")
    refunds = charge.get("refunds")
    times = [time_of(item.get("created")) for item in (refunds.get("data") or [])
             if isinstance(item, dict)] if isinstance(refunds, dict) else []
    return PaymentRefunded(
        external_invoice_id=invoice_id, refund_ref=str(charge["id"]), currency=currency_of(charge),
        cumulative_minor=amount_of(charge, "amount_refunded"),
        occurred_at=max((t for t in times if t), default=None) or event.at,
    )


def _credit_note_created(note: dict[str, Any], event: _EventInfo) -> DomainEvent:
    """The money a credit note returned: the out-of-band part always, its Stripe refunds only
    from basil on (before, `charge.refunded` reports them; see the module docstring)."""
    invoice_id = id_of(note.get("invoice"))
    if not invoice_id:
        raise PayloadInvalid("invoice_missing")
    returned = optional_amount_of(note, "out_of_band_amount")
    if event.basil_or_later:
        for item in note.get("refunds") or []:
            if isinstance(item, dict):
                returned += optional_amount_of(item, "amount_refunded")
    if returned == 0:
        return Ignored("credit_note_without_refund")
    return PaymentRefunded(
        external_invoice_id=invoice_id, refund_ref=str(note["id"]), currency=currency_of(note),
        amount_minor=returned, occurred_at=time_of(note.get("created")) or event.at,
    )


def _dispute(dispute: dict[str, Any], event: _EventInfo, *, event_type: str) -> DomainEvent:
    """Any `charge.dispute.*` event: the dispute object as it stands after the change
    (docs.stripe.com/api/disputes/object): amount in minor units, currency lower case,
    `evidence_details.due_by` a Unix time, `balance_transactions` the funds withdrawn and
    reinstated. Only facts are kept; evidence texts and files are never read."""
    opened = time_of(dispute.get("created"))
    if opened is None:
        raise PayloadInvalid("created_invalid")
    details = dispute.get("evidence_details")
    details = details if isinstance(details, dict) else {}
    due_at = time_of(details.get("due_by"))
    method = dispute.get("payment_method_details")
    card = method.get("card") if isinstance(method, dict) else None
    card = card if isinstance(card, dict) else {}
    moves = [bt for bt in dispute.get("balance_transactions") or [] if isinstance(bt, dict)]
    facts: dict[str, Any] = {
        "payment_intent": id_of(dispute.get("payment_intent")),
        "is_charge_refundable": bool(dispute.get("is_charge_refundable")),
        "has_evidence": bool(details.get("has_evidence")),
        "past_due": bool(details.get("past_due")),
        "submission_count": int_or_none(details.get("submission_count")) or 0,
        "due_by": due_at.isoformat() if due_at else None,
        "network_reason_code": _reason_code(card.get("network_reason_code")),
        "card_brand": short(card.get("brand"), 32),
        "payment_method_type": short(method.get("type") if isinstance(method, dict) else "", 32),
        "funds_withdrawn_minor": -sum(int_or_none(bt.get("amount")) or 0 for bt in moves
                                      if (int_or_none(bt.get("amount")) or 0) < 0),
        "funds_reinstated_minor": sum(int_or_none(bt.get("amount")) or 0 for bt in moves
                                      if (int_or_none(bt.get("amount")) or 0) > 0),
        "dispute_fee_minor": sum(int_or_none(bt.get("fee")) or 0 for bt in moves),
    }
    return DisputeReport(
        dispute_id=str(dispute["id"])[:128], charge_id=id_of(dispute.get("charge"))[:128],
        amount_minor=amount_of(dispute, "amount"), currency=currency_of(dispute),
        reason=short(dispute.get("reason"), 64).lower(), status=short(dispute.get("status"), 64).lower(),
        evidence_due_by=due_at.date() if due_at else None, created_at=opened,
        event_type=event_type, occurred_at=event.at or opened, details=facts,
    )


def _reason_code(value: Any) -> str:
    """A card network's dispute reason code: Visa "12.6.1", "10.4", Mastercard "4853"."""
    text = str(value or "").strip()
    return text if len(text) <= 16 and text.replace(".", "").replace("-", "").isalnum() else ""


# Every dispute event carries the whole dispute object; one translation serves them all.
DISPUTE_EVENT_TYPES = ("charge.dispute.created", "charge.dispute.updated", "charge.dispute.closed",
                       "charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated")


_HANDLERS: dict[str, Callable[[dict[str, Any], _EventInfo], DomainEvent]] = {
    "invoice.payment_failed": _payment_failed,
    "invoice.paid": _payment_succeeded,
    "invoice.payment_succeeded": _payment_succeeded,
    "customer.subscription.deleted": _subscription_deleted,
    "invoice.marked_uncollectible": _marked_uncollectible,
    "invoice.voided": _voided,
    "charge.refunded": _charge_refunded,
    "credit_note.created": _credit_note_created,
    **{name: partial(_dispute, event_type=name) for name in DISPUTE_EVENT_TYPES},
}
HANDLED_TYPES = frozenset(_HANDLERS)


def enrich(
    *, payload: dict[str, Any], event_type: str, api_key: str,
    fetch: Callable[..., dict[str, Any] | None],
) -> dict[str, Any]:
    """Add the decline details a failed invoice's payload lacks, fetched with the tenant's
    restricted key through `fetch` (integrations.stripe_api). Returns a new payload; the
    stored body is never touched. Without a key, or when the fetch fails, the payload
    comes back as is and the code falls back to generic_decline."""
    if event_type != "invoice.payment_failed" or not api_key:
        return payload
    invoice = data_object(payload)
    if not invoice.get("id") or payment_error(invoice) is not None:
        return payload
    error = fetch(api_key=api_key, invoice_id=str(invoice["id"]), payment_intent_id=payment_intent_id(invoice))
    if not error:
        return payload
    enriched = {**invoice, "payment_intent": {"id": payment_intent_id(invoice), "last_payment_error": error}}
    return {**payload, "data": {**payload["data"], "object": enriched}}
