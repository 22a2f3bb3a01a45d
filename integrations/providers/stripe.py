"""Stripe adapter: `Stripe-Signature` verification through the SDK, and invoice translation.

Sources (copied into `integrations/data/`, checked against the facts by a test):
- `stripe_decline_codes.csv`: every decline code on docs.stripe.com/declines/codes (copy of
  2026-04-15, 50 card + 12 local-payment-method codes) with PayPilot's failure code.
- `stripe_decline_map.csv`: the precedence (advice_code, then the non-card rule, then the
  decline code, then `generic_decline`) and the advice-code overrides.
- `shared/facts/stripe_webhooks.md` (stripe-python 15.3.1 `_webhook.py`, `_invoice.py`;
  Stripe's basil changelog): signature scheme, 300 s tolerance, the invoice fields before
  and after API version `2025-03-31.basil`, where decline and advice codes live.
- Event times: the event's `created` (Unix seconds) is when the change happened at Stripe;
  payments use the invoice's `status_transitions.paid_at`, voids `voided_at`, uncollectible
  `marked_uncollectible_at`, cancellations the subscription's `ended_at`.
- Refunds (docs.stripe.com/api/charges/object, /api/credit_notes/object): a Charge carries
  `amount_refunded`, the cumulative total refunded; before basil it also names its `invoice`
  (basil removed `invoice` from Charge). A credit note names its `invoice` in every version,
  with `out_of_band_amount` (money returned outside Stripe) and, on current versions,
  `refunds[]` (`{refund, amount_refunded}`, the Stripe refunds it created or linked).
  To count each refunded unit once: before basil, money returned through Stripe is read from
  `charge.refunded` (cumulative per charge) and credit notes add only their out-of-band part;
  from basil on, a charge no longer names its invoice, so credit notes carry both parts and
  `charge.refunded` is acknowledged and ignored (`charge_without_invoice`).
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

from stripe import SignatureVerificationError, WebhookSignature

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
from integrations.providers import (
    Credentials,
    Envelope,
    PayloadInvalid,
    VerificationFailed,
    age_exceeds,
    load_json,
)
from paypilot.disputes import DisputeReport

NAME = "stripe"
TOLERANCE_SECONDS = 300  # stripe.Webhook.DEFAULT_TOLERANCE, inclusive; one-sided (old only)
HEADERS = ("Stripe-Signature",)
DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def _load_decline_codes() -> Mapping[str, str]:
    with (DATA_DIR / "stripe_decline_codes.csv").open(newline="", encoding="utf-8") as fh:
        table = {row["decline_code"]: row["proposed_failure_code"] for row in csv.DictReader(fh)}
    # stripe_decline_map.csv precedence-3 rows name codes outside the decline table too
    # (card_declined is an error code, not a decline code); they are added, never overridden.
    for row in _MAP_ROWS:
        if row["source_field"] == "decline_code" and row["precedence"] == "3":
            table.setdefault(row["stripe_value"], row["paypilot_failure_code"])
    return MappingProxyType(table)


def _load_map_rows() -> list[dict[str, str]]:
    with (DATA_DIR / "stripe_decline_map.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


_MAP_ROWS = _load_map_rows()
DECLINE_CODES: Mapping[str, str] = _load_decline_codes()
ADVICE_OVERRIDES: Mapping[str, str] = MappingProxyType(
    {
        row["stripe_value"]: row["paypilot_failure_code"]
        for row in _MAP_ROWS
        if row["source_field"] == "advice_code"
    }
)
# Stripe retries card and ACH Direct Debit (us_bank_account) invoices itself; any other
# method that failed with no next attempt scheduled will not be retried (map precedence 2).
RETRIED_METHOD_TYPES = frozenset({"card", "us_bank_account"})
FALLBACK_CODE = "generic_decline"
# Codes whose strategy relies on a retry; with no retry left they become retries_exhausted
# (the stripe_webhooks.md proposal: "unless a stronger code applies").
_RETRY_DEPENDENT = frozenset({"generic_decline", "insufficient_funds"})


# --- verification -------------------------------------------------------------------------

def verify(
    *, body: bytes, headers: Mapping[str, str], credential: Credentials, url_key: str = "",
    now: float | None = None,
) -> None:
    """Check `Stripe-Signature` with the SDK's own `WebhookSignature.verify_header`.

    Any `v1` entry may match (secret rotation); a timestamp more than 300 whole seconds old
    is refused (300 s is accepted).
    Raises VerificationFailed(reason) with signature_missing, signature_malformed,
    signature_mismatch or timestamp_stale.
    """
    header = headers.get("Stripe-Signature", "")
    if not header:
        raise VerificationFailed("signature_missing")
    timestamp = _header_timestamp(header)
    if timestamp is None:
        raise VerificationFailed("signature_malformed")
    try:
        payload = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VerificationFailed("body_not_utf8") from exc
    try:
        # tolerance=None: the SDK then checks the signature only (its age check is below).
        WebhookSignature.verify_header(payload, header, credential.secret, tolerance=None)
    except SignatureVerificationError as exc:
        raise VerificationFailed(_reason_for(str(exc))) from exc
    # The SDK's own check, `timestamp < time.time() - tolerance` on a float clock, refuses a
    # stamp 300 s old part-way through that second (and 299 s when the request was slow).
    # The age is counted in whole seconds so the boundary is inclusive: 300 s in, 301 s out.
    if age_exceeds(timestamp=timestamp, now=now, limit=TOLERANCE_SECONDS):
        raise VerificationFailed("timestamp_stale")


def _header_timestamp(header: str) -> int | None:
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "t":
            return int(value) if value.isdigit() else None
    return None


def _reason_for(message: str) -> str:
    if message.startswith("Timestamp outside"):
        return "timestamp_stale"
    if message.startswith("No signatures found with expected scheme"):
        return "signature_malformed"
    if message.startswith("Unable to extract"):
        return "signature_malformed"
    return "signature_mismatch"


def sign(*, body: bytes, secret: str, timestamp: int | None = None) -> str:
    """A `Stripe-Signature` header for `body` (tests, fixtures and the benchmark)."""
    return WebhookSignature.generate_signature_header(
        body.decode("utf-8"), secret, timestamp=int(time.time()) if timestamp is None else timestamp
    )


# --- envelope -----------------------------------------------------------------------------

def envelope(*, body: bytes, headers: Mapping[str, str]) -> Envelope:
    payload = load_json(body)
    event_id, event_type = payload.get("id"), payload.get("type")
    if not isinstance(event_id, str) or not event_id or len(event_id) > 200:
        raise PayloadInvalid("event_id_missing")
    if not isinstance(event_type, str) or not event_type or len(event_type) > 100:
        raise PayloadInvalid("event_type_missing")
    obj = _data_object(payload)
    # No resource_version: Stripe's `created` has one-second resolution and two events of
    # one invoice often share it; out-of-order protection is the ledger's state machine.
    return Envelope(event_key=event_id, event_type=event_type, resource_key=str(obj.get("id") or "")[:200])


# --- translation --------------------------------------------------------------------------

def translate(*, payload: dict[str, Any], event_type: str, context: Credentials) -> DomainEvent:
    handler = _HANDLERS.get(event_type)
    if handler is None:
        return Ignored("unhandled_event_type")
    obj = _data_object(payload)
    if not obj.get("id"):
        return Ignored("object_missing")
    return handler(obj, _EventInfo(at=_timestamp(payload.get("created")),
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
    found = _timestamp(transitions.get(key)) if isinstance(transitions, dict) else None
    return found or event.at


def _payment_failed(invoice: dict[str, Any], event: _EventInfo) -> DomainEvent:
    error = payment_error(invoice)
    return PaymentFailed(
        external_invoice_id=str(invoice["id"]),
        amount_minor=_amount(invoice, "amount_due"),
        currency=_currency(invoice),
        failure_code=failure_code_for(invoice=invoice, error=error),
        attempt=max(1, _int_or_none(invoice.get("attempt_count")) or 1),
        subscription_id=subscription_id(invoice),
        provider_customer_id=_id_of(invoice.get("customer")),
        customer_email=str(invoice.get("customer_email") or ""),
        customer_name=str(invoice.get("customer_name") or ""),
        hosted_invoice_url=str(invoice.get("hosted_invoice_url") or ""),
        retry_at=_timestamp(invoice.get("next_payment_attempt")),
        occurred_at=event.at,
        **network_answer(error),
    )


def network_answer(error: Mapping[str, Any] | None) -> dict[str, str]:
    """The card brand and the network's codes from a decline, for the network retry rules.

    Stripe added `network_advice_code` and `network_decline_code` to
    `PaymentIntent.last_payment_error` and `Charge.outcome` in 2024-12-18.acacia
    (docs.stripe.com/changelog/acacia/2024-12-18/network-advice-code-network-decline-code);
    the brand is `payment_method.card.brand` on the error, `payment_method_details.card.brand`
    on a charge. Values are cut to what the decision row stores; absent means "".
    """
    error = error or {}
    return {
        "card_brand": _short(error.get("card_brand"), 32),
        "network_advice_code": _short(error.get("network_advice_code"), 4),
        "network_decline_code": _short(error.get("network_decline_code"), 4),
    }


def _short(value: Any, limit: int) -> str:
    text = str(value or "").strip()
    # Only plain codes go on: anything else (an object, markup) is not a network answer.
    return text if len(text) <= limit and text.replace("_", "").replace(" ", "").isalnum() else ""


def _payment_succeeded(invoice: dict[str, Any], event: _EventInfo) -> DomainEvent:
    return PaymentSucceeded(
        external_invoice_id=str(invoice["id"]),
        amount_paid_minor=_amount(invoice, "amount_paid"),
        currency=_currency(invoice),
        occurred_at=_transition_time(invoice, "paid_at", event),
    )


def _subscription_deleted(subscription: dict[str, Any], event: _EventInfo) -> DomainEvent:
    return SubscriptionCancelled(subscription_id=str(subscription["id"]),
                                 occurred_at=_timestamp(subscription.get("ended_at")) or event.at)


def _marked_uncollectible(invoice: dict[str, Any], event: _EventInfo) -> DomainEvent:
    return RetriesExhausted(external_invoice_id=str(invoice["id"]),
                            occurred_at=_transition_time(invoice, "marked_uncollectible_at", event))


def _voided(invoice: dict[str, Any], event: _EventInfo) -> DomainEvent:
    return InvoiceVoided(external_invoice_id=str(invoice["id"]),
                         occurred_at=_transition_time(invoice, "voided_at", event))


def _charge_refunded(charge: dict[str, Any], event: _EventInfo) -> DomainEvent:
    """Cumulative per charge: `amount_refunded` is everything refunded so far, so a
    redelivery, a second partial refund or an out-of-order event all compute the right part."""
    invoice_id = _id_of(charge.get("invoice"))
    if not invoice_id:
        # basil+ (or a charge outside billing): the refund is counted from its credit note.
        return Ignored("charge_without_invoice")
    refunds = charge.get("refunds")
    times = [_timestamp(item.get("created")) for item in (refunds.get("data") or [])
             if isinstance(item, dict)] if isinstance(refunds, dict) else []
    return PaymentRefunded(
        external_invoice_id=invoice_id, refund_ref=str(charge["id"]), currency=_currency(charge),
        cumulative_minor=_amount(charge, "amount_refunded"),
        occurred_at=max((t for t in times if t), default=None) or event.at,
    )


def _credit_note_created(note: dict[str, Any], event: _EventInfo) -> DomainEvent:
    """The money a credit note returned: the out-of-band part always, its Stripe refunds only
    from basil on (before, `charge.refunded` reports them; see the module docstring)."""
    invoice_id = _id_of(note.get("invoice"))
    if not invoice_id:
        raise PayloadInvalid("invoice_missing")
    returned = _optional_amount(note, "out_of_band_amount")
    if event.basil_or_later:
        for item in note.get("refunds") or []:
            if isinstance(item, dict):
                returned += _optional_amount(item, "amount_refunded")
    if returned == 0:
        return Ignored("credit_note_without_refund")
    return PaymentRefunded(
        external_invoice_id=invoice_id, refund_ref=str(note["id"]), currency=_currency(note),
        amount_minor=returned, occurred_at=_timestamp(note.get("created")) or event.at,
    )


def _dispute(dispute: dict[str, Any], event: _EventInfo, *, event_type: str) -> DomainEvent:
    """Any `charge.dispute.*` event: the dispute object as it stands after the change
    (docs.stripe.com/api/disputes/object): amount in minor units, currency lower case,
    `evidence_details.due_by` a Unix time, `balance_transactions` the funds withdrawn and
    reinstated. Only facts are kept; evidence texts and files are never read."""
    opened = _timestamp(dispute.get("created"))
    if opened is None:
        raise PayloadInvalid("created_invalid")
    details = dispute.get("evidence_details")
    details = details if isinstance(details, dict) else {}
    due_at = _timestamp(details.get("due_by"))
    method = dispute.get("payment_method_details")
    card = method.get("card") if isinstance(method, dict) else None
    card = card if isinstance(card, dict) else {}
    moves = [bt for bt in dispute.get("balance_transactions") or [] if isinstance(bt, dict)]
    facts: dict[str, Any] = {
        "payment_intent": _id_of(dispute.get("payment_intent")),
        "is_charge_refundable": bool(dispute.get("is_charge_refundable")),
        "has_evidence": bool(details.get("has_evidence")),
        "past_due": bool(details.get("past_due")),
        "submission_count": _int_or_none(details.get("submission_count")) or 0,
        "due_by": due_at.isoformat() if due_at else None,
        "network_reason_code": _reason_code(card.get("network_reason_code")),
        "card_brand": _short(card.get("brand"), 32),
        "payment_method_type": _short(method.get("type") if isinstance(method, dict) else "", 32),
        "funds_withdrawn_minor": -sum(_int_or_none(bt.get("amount")) or 0 for bt in moves
                                      if (_int_or_none(bt.get("amount")) or 0) < 0),
        "funds_reinstated_minor": sum(_int_or_none(bt.get("amount")) or 0 for bt in moves
                                      if (_int_or_none(bt.get("amount")) or 0) > 0),
        "dispute_fee_minor": sum(_int_or_none(bt.get("fee")) or 0 for bt in moves),
    }
    return DisputeReport(
        dispute_id=str(dispute["id"])[:128], charge_id=_id_of(dispute.get("charge"))[:128],
        amount_minor=_amount(dispute, "amount"), currency=_currency(dispute),
        reason=_short(dispute.get("reason"), 64).lower(), status=_short(dispute.get("status"), 64).lower(),
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
    invoice = _data_object(payload)
    if not invoice.get("id") or payment_error(invoice) is not None:
        return payload
    error = fetch(api_key=api_key, invoice_id=str(invoice["id"]), payment_intent_id=payment_intent_id(invoice))
    if not error:
        return payload
    enriched = {**invoice, "payment_intent": {"id": payment_intent_id(invoice), "last_payment_error": error}}
    return {**payload, "data": {**payload["data"], "object": enriched}}


def failure_code_for(*, invoice: Mapping[str, Any], error: Mapping[str, Any] | None) -> str:
    """PayPilot failure code for a failed invoice, in stripe_decline_map.csv's precedence.

    1. advice_code (do_not_try_again, confirm_card_data) outranks everything;
    2. a method Stripe does not retry (not card, not us_bank_account) with no next attempt;
    3. the decline code (every code Stripe publishes), else the error code;
    4. generic_decline.
    A retry-dependent result with no automatic retry left becomes retries_exhausted.
    """
    error = error or {}
    advice = error.get("advice_code") or (error.get("outcome") or {}).get("advice_code")
    if isinstance(advice, str) and advice in ADVICE_OVERRIDES:
        return ADVICE_OVERRIDES[advice]
    next_attempt = invoice.get("next_payment_attempt")
    method = error.get("payment_method_type") or ""
    if method and method not in RETRIED_METHOD_TYPES and next_attempt is None:
        return "direct_debit_not_retried"
    code = FALLBACK_CODE
    for candidate in (error.get("decline_code"), error.get("code"), error.get("failure_code")):
        if isinstance(candidate, str) and candidate in DECLINE_CODES:
            code = DECLINE_CODES[candidate]
            break
    if (
        code in _RETRY_DEPENDENT
        and next_attempt is None
        and invoice.get("status") == "open"
        and invoice.get("collection_method", "charge_automatically") == "charge_automatically"
    ):
        return "retries_exhausted"
    return code


def payment_error(invoice: Mapping[str, Any]) -> dict[str, Any] | None:
    """The decline details carried by the invoice payload, in either API shape.

    basil and later: `payments.data[].payment.payment_intent` (newest first) when expanded.
    Before basil: `payment_intent` or `charge` when expanded. A plain id carries nothing;
    the worker may then fetch the error through `integrations.stripe_api`.
    """
    payments = invoice.get("payments")
    if isinstance(payments, dict):
        for item in payments.get("data") or []:
            intent = ((item or {}).get("payment") or {}).get("payment_intent")
            found = _error_of_intent(intent)
            if found:
                return found
    found = _error_of_intent(invoice.get("payment_intent"))
    if found:
        return found
    charge = invoice.get("charge")
    if isinstance(charge, dict) and charge.get("failure_code"):
        outcome = charge.get("outcome") or {}
        details = charge.get("payment_method_details") or {}
        card = details.get("card")
        card = card if isinstance(card, dict) else {}
        return {
            "code": charge.get("failure_code"),
            "decline_code": charge.get("failure_code"),
            "advice_code": outcome.get("advice_code"),
            "network_advice_code": outcome.get("network_advice_code"),
            "network_decline_code": outcome.get("network_decline_code"),
            "card_brand": card.get("brand") or "",
            "payment_method_type": details.get("type") or "",
        }
    return None


def _error_of_intent(intent: Any) -> dict[str, Any] | None:
    if not isinstance(intent, dict):
        return None
    error = intent.get("last_payment_error")
    if not isinstance(error, dict):
        return None
    found = dict(error)
    method = error.get("payment_method") or {}
    if not found.get("payment_method_type"):
        found["payment_method_type"] = method.get("type", "") if isinstance(method, dict) else ""
    card = method.get("card") if isinstance(method, dict) else None
    found["card_brand"] = card.get("brand") or "" if isinstance(card, dict) else ""
    return found


def payment_intent_id(invoice: Mapping[str, Any]) -> str:
    """The id of the invoice's newest payment intent, in either API shape ("" if none)."""
    payments = invoice.get("payments")
    if isinstance(payments, dict):
        for item in payments.get("data") or []:
            intent = ((item or {}).get("payment") or {}).get("payment_intent")
            if intent:
                return _id_of(intent)
    return _id_of(invoice.get("payment_intent"))


def subscription_id(invoice: Mapping[str, Any]) -> str:
    """`parent.subscription_details.subscription` (basil+), else the old `subscription`."""
    parent = invoice.get("parent") or {}
    details = parent.get("subscription_details") or {}
    found = _id_of(details.get("subscription"))
    return found or _id_of(invoice.get("subscription"))


def _data_object(payload: Mapping[str, Any]) -> dict[str, Any]:
    data = payload.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    return obj if isinstance(obj, dict) else {}


def _id_of(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("id") or "")
    return str(value or "")


def _amount(invoice: Mapping[str, Any], key: str) -> int:
    value = invoice.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise PayloadInvalid(f"{key}_invalid")
    return value  # Stripe amounts are already in the currency's smallest unit


def _optional_amount(obj: Mapping[str, Any], key: str) -> int:
    """An amount that may be absent or null (0 then); present, it must be valid."""
    return 0 if obj.get(key) is None else _amount(obj, key)


def _currency(invoice: Mapping[str, Any]) -> str:
    value = invoice.get("currency")
    if not isinstance(value, str) or len(value) != 3 or not value.isalpha():
        raise PayloadInvalid("currency_invalid")
    return value.upper()


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _timestamp(value: Any) -> datetime | None:
    seconds = _int_or_none(value)
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None
