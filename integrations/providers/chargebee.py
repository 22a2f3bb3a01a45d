"""Chargebee adapter (API v2 webhooks): shared-secret authentication and event translation.

Follows Chargebee's own documents as summarised in `shared/facts/chargebee_webhooks.md`:
apidocs.chargebee.com/docs/api/events (event object, at-least-once delivery, dedupe on
event `id`, ordering by `resource_version`), chargebee.com/docs/2.0/webhook_settings.html
(HTTP Basic auth per webhook; no HMAC or signature exists), chargebee-node v3.31.0
`basicAuthValidator`, support articles 257385 and 260019 (the last failed dunning attempt
carries `invoice.dunning_status: "exhausted"`), and the payment-errors catalogue
(chargebee.com/docs/payments/2.0/payment-errors, apidocs .../errors/<id>) for
`error_detail.error_cause_id`.

Times: the event's `occurred_at` (Unix seconds); payments prefer the invoice's `paid_at`,
cancellations the subscription's `cancelled_at`, refunds the refund transaction's `date`.
Refunds and voids (chargebee_webhooks.md: `payment_refunded` is an event type; transaction
`type` is `refund` and its `amount` in the currency's minor unit; invoice `status` includes
`voided`): `payment_refunded` carries the refund transaction (its id is the refund id) and
the invoice; `invoice_deleted`, and `invoice_updated` with `status: "voided"`, void it.

Chargebee cannot sign, so the strongest check available is a shared secret compared in
constant time, carried by HTTP Basic auth, plus an unguessable per-tenant URL segment.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, cast

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
from integrations.providers.base import Credentials, Envelope, PayloadInvalid, VerificationFailed, load_json
from integrations.providers.stripe_codes import DECLINE_CODES

NAME = "chargebee"
HEADERS = ("User-Agent",)
# Chargebee retries for about 3 days 6.5 hours (7 retries: +2 min ... +2 days); its docs
# advise a 3 d 7 h idempotency window. An authenticated event older than this is a replay.
MAX_EVENT_AGE_SECONDS = 4 * 24 * 3600

# error_detail.recommendation_code (filled by the Stripe gateway; it appears to carry
# Stripe's advice_code) -> failure code. Proposal 2 of chargebee_webhooks.md.
RECOMMENDATION_CODES: Mapping[str, str] = MappingProxyType(
    {"do_not_try_again": "issuer_do_not_retry", "confirm_card_data": "card_details_invalid"}
)
# Chargebee's published error_cause_id values -> failure code (proposal 5). The merchant-side
# ids are not the customer's fault; they still map to generic_decline as the facts propose,
# and are listed in MERCHANT_SIDE_CAUSES so the outcome records that.
ERROR_CAUSES: Mapping[str, str] = MappingProxyType(
    {
        "gateway.transaction_processing.low_balance": "insufficient_funds",
        "gateway.payment_method.not_found": "card_details_invalid",
        "gateway.transaction_processing.card_declined": "generic_decline",
        "gateway.payment_method.card_issue": "generic_decline",
        "gateway.transaction_processing.could_not_process": "generic_decline",
        "gateway.technical.server_error": "generic_decline",
        "gateway.general.decline": "generic_decline",
        "gateway.transaction_processing.payment_code_incorrect": "generic_decline",
        "gateway.transaction_processing.invalid_config": "generic_decline",
        "gateway.transaction_processing.resource_missing": "generic_decline",
        "gateway.transaction_processing.payment_intent_unexpected_state": "generic_decline",
        "gateway.merchant_account.test_only": "generic_decline",
    }
)
MERCHANT_SIDE_CAUSES = frozenset(
    {
        "gateway.transaction_processing.invalid_config",
        "gateway.transaction_processing.resource_missing",
        "gateway.transaction_processing.payment_intent_unexpected_state",
        "gateway.merchant_account.test_only",
    }
)
FALLBACK_CODE = "generic_decline"


# --- verification -------------------------------------------------------------------------

def verify(
    *, body: bytes, headers: Mapping[str, str], credential: Credentials, url_key: str = "",
    now: float | None = None,
) -> None:
    """HTTP Basic user and password, and the URL segment, each compared in constant time.

    All three comparisons always run, so timing does not tell which part was wrong.
    Raises VerificationFailed with signature_missing (no Basic credentials),
    signature_malformed, signature_mismatch, or timestamp_stale (event too old).
    """
    header = headers.get("Authorization", "")
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic" or not encoded:
        raise VerificationFailed("signature_missing")
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise VerificationFailed("signature_malformed") from exc
    username, sep, password = decoded.partition(":")
    if not sep:
        raise VerificationFailed("signature_malformed")
    ok_user = hmac.compare_digest(username.encode(), credential.username.encode())
    ok_password = hmac.compare_digest(password.encode(), credential.secret.encode())
    ok_url = bool(credential.url_key) and hmac.compare_digest(url_key.encode(), credential.url_key.encode())
    if not (ok_user & ok_password & ok_url):
        raise VerificationFailed("signature_mismatch")
    occurred = _occurred_at(body)
    current = int(time.time() if now is None else now)  # whole seconds: boundary inclusive
    if occurred is not None and current - occurred > MAX_EVENT_AGE_SECONDS:
        raise VerificationFailed("timestamp_stale")


def basic_auth_header(*, username: str, password: str) -> str:
    """The Authorization header Chargebee sends (tests and fixtures)."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def _occurred_at(body: bytes) -> int | None:
    try:
        value = load_json(body).get("occurred_at")
    except PayloadInvalid:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- envelope -----------------------------------------------------------------------------

def envelope(*, body: bytes, headers: Mapping[str, str]) -> Envelope:
    payload = load_json(body)
    event_id, event_type = payload.get("id"), payload.get("event_type")
    if not isinstance(event_id, str) or not event_id or len(event_id) > 200:
        raise PayloadInvalid("event_id_missing")
    if not isinstance(event_type, str) or not event_type or len(event_type) > 100:
        raise PayloadInvalid("event_type_missing")
    key, version = ordering_of(payload)
    return Envelope(event_key=event_id, event_type=event_type, resource_key=key, resource_version=version)


def ordering_of(payload: Mapping[str, Any]) -> tuple[str, int | None]:
    """The resource whose state the event reports and its `resource_version`.

    Invoice first (payments and dunning move the invoice), then subscription.
    """
    content = payload.get("content") or {}
    for kind in ("invoice", "subscription"):
        resource = content.get(kind) if isinstance(content, dict) else None
        if isinstance(resource, dict) and resource.get("id"):
            version = resource.get("resource_version")
            if not isinstance(version, int) or isinstance(version, bool):
                version = None
            return f"{kind}:{resource['id']}", version
    return "", None


# --- translation --------------------------------------------------------------------------

def translate(*, payload: dict[str, Any], event_type: str, context: Credentials) -> DomainEvent:
    handler = _HANDLERS.get(event_type)
    if handler is None:
        return Ignored("unhandled_event_type")
    content = payload.get("content")
    if not isinstance(content, dict):
        raise PayloadInvalid("content_missing")
    return handler(content, _timestamp(payload.get("occurred_at")))


def _payment_failed(content: Mapping[str, Any], at: datetime | None) -> DomainEvent:
    invoice = _resource(content, "invoice")
    transaction = content.get("transaction") or {}
    customer = content.get("customer") or {}
    currency = _currency(invoice.get("currency_code") or transaction.get("currency_code"))
    amount = invoice.get("amount_due")
    if not _is_amount(amount):
        amount = transaction.get("amount")
    if not _is_amount(amount):
        raise PayloadInvalid("amount_invalid")
    exhausted = invoice.get("dunning_status") == "exhausted"
    failure = PaymentFailed(
        external_invoice_id=str(invoice["id"]),
        amount_minor=cast(int, amount),  # "in cents": the currency's minor unit (major for JPY)
        currency=currency,
        failure_code=failure_code_for(invoice=invoice, transaction=transaction),
        attempt=max(1, len(invoice.get("dunning_attempts") or []) or 1),
        subscription_id=str(invoice.get("subscription_id") or transaction.get("subscription_id") or ""),
        provider_customer_id=str(invoice.get("customer_id") or customer.get("id") or ""),
        customer_email=str(customer.get("email") or ""),
        customer_name=" ".join(filter(None, [customer.get("first_name"), customer.get("last_name")]))
        or str(customer.get("company") or ""),
        retry_at=_timestamp(invoice.get("next_retry_at")),
        occurred_at=at,
        **network_answer(content, transaction),
    )
    if exhausted:
        return RetriesExhausted(external_invoice_id=failure.external_invoice_id, failure=failure, occurred_at=at)
    return failure


def network_answer(content: Mapping[str, Any], transaction: Mapping[str, Any]) -> dict[str, str]:
    """The card brand and the network's decline code, for the network retry rules, where
    Chargebee passes them on: the transaction's `gateway_error_detail.network_error_code`
    (Chargebee's Transaction resource, `GatewayErrorDetail`: rubydoc.info/gems/chargebee/
    ChargeBee/Transaction/GatewayErrorDetail) and the card's `card_type` (the event's `card`
    resource). Chargebee names no Merchant Advice Code field, so none is read. Absent: ""."""
    detail = transaction.get("gateway_error_detail")
    card = content.get("card")
    code = str((detail or {}).get("network_error_code") or "").strip() if isinstance(detail, Mapping) else ""
    brand = str((card or {}).get("card_type") or "").strip() if isinstance(card, Mapping) else ""
    return {
        "card_brand": brand if len(brand) <= 32 and brand.replace("_", "").isalnum() else "",
        "network_decline_code": code if len(code) <= 4 and code.isalnum() else "",
    }


def _payment_succeeded(content: Mapping[str, Any], at: datetime | None) -> DomainEvent:
    invoice = _resource(content, "invoice")
    transaction = content.get("transaction") or {}
    amount = invoice.get("amount_paid")
    if not _is_amount(amount):
        amount = transaction.get("amount")
    if not _is_amount(amount):
        raise PayloadInvalid("amount_invalid")
    return PaymentSucceeded(
        external_invoice_id=str(invoice["id"]),
        amount_paid_minor=cast(int, amount),
        currency=_currency(invoice.get("currency_code") or transaction.get("currency_code")),
        occurred_at=_timestamp(invoice.get("paid_at")) or _timestamp(transaction.get("date")) or at,
    )


def _subscription_cancelled(content: Mapping[str, Any], at: datetime | None) -> DomainEvent:
    subscription = _resource(content, "subscription")
    return SubscriptionCancelled(subscription_id=str(subscription["id"]),
                                 occurred_at=_timestamp(subscription.get("cancelled_at")) or at)


def _payment_refunded(content: Mapping[str, Any], at: datetime | None) -> DomainEvent:
    transaction = _resource(content, "transaction")
    if transaction.get("type") != "refund" or transaction.get("status") not in (None, "success"):
        return Ignored("not_a_successful_refund")
    invoice_id = _refunded_invoice_id(content, transaction)
    if not invoice_id:
        raise PayloadInvalid("invoice_missing")
    amount = transaction.get("amount")
    if not _is_amount(amount) or amount == 0:
        raise PayloadInvalid("amount_invalid")
    return PaymentRefunded(
        external_invoice_id=invoice_id, refund_ref=str(transaction["id"]),
        currency=_currency(transaction.get("currency_code")), amount_minor=cast(int, amount),
        occurred_at=_timestamp(transaction.get("date")) or at,
    )


def _refunded_invoice_id(content: Mapping[str, Any], transaction: Mapping[str, Any]) -> str:
    """The invoice the refund belongs to: the event's invoice, else the refund credit note's
    `reference_invoice_id`, else the transaction's linked credit note's reference."""
    invoice = content.get("invoice")
    if isinstance(invoice, dict) and invoice.get("id"):
        return str(invoice["id"])
    note = content.get("credit_note")
    if isinstance(note, dict) and note.get("reference_invoice_id"):
        return str(note["reference_invoice_id"])
    for link in transaction.get("linked_credit_notes") or []:
        if isinstance(link, dict) and link.get("cn_reference_invoice_id"):
            return str(link["cn_reference_invoice_id"])
    return ""


def _invoice_deleted(content: Mapping[str, Any], at: datetime | None) -> DomainEvent:
    return InvoiceVoided(external_invoice_id=str(_resource(content, "invoice")["id"]), occurred_at=at)


def _invoice_updated(content: Mapping[str, Any], at: datetime | None) -> DomainEvent:
    invoice = _resource(content, "invoice")
    if invoice.get("status") != "voided":
        return Ignored("invoice_update_not_void")
    return InvoiceVoided(external_invoice_id=str(invoice["id"]),
                         occurred_at=_timestamp(invoice.get("voided_at")) or at)


_HANDLERS = {
    "payment_failed": _payment_failed,
    "payment_succeeded": _payment_succeeded,
    "subscription_cancelled": _subscription_cancelled,
    "payment_refunded": _payment_refunded,
    "invoice_deleted": _invoice_deleted,
    "invoice_updated": _invoice_updated,
}
HANDLED_TYPES = frozenset(_HANDLERS)


def failure_code_for(*, invoice: Mapping[str, Any], transaction: Mapping[str, Any]) -> str:
    """chargebee_webhooks.md proposal, first match wins (exhaustion is the event itself)."""
    detail = transaction.get("error_detail") or {}
    recommendation = detail.get("recommendation_code") or detail.get("processor_advice_code")
    if isinstance(recommendation, str) and recommendation in RECOMMENDATION_CODES:
        return RECOMMENDATION_CODES[recommendation]
    if transaction.get("payment_method") == "direct_debit" and not invoice.get("next_retry_at"):
        return "direct_debit_not_retried"
    decline = detail.get("decline_code")
    if isinstance(decline, str) and decline in DECLINE_CODES:
        return DECLINE_CODES[decline]
    cause = detail.get("error_cause_id")
    if isinstance(cause, str) and cause in ERROR_CAUSES:
        return ERROR_CAUSES[cause]
    return FALLBACK_CODE


def _resource(content: Mapping[str, Any], kind: str) -> dict[str, Any]:
    resource = content.get(kind)
    if not isinstance(resource, dict) or not resource.get("id"):
        raise PayloadInvalid(f"{kind}_missing")
    return resource


def _is_amount(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _currency(value: Any) -> str:
    if not isinstance(value, str) or len(value) != 3 or not value.isalpha():
        raise PayloadInvalid("currency_invalid")
    return value.upper()


def _timestamp(value: Any) -> datetime | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return datetime.fromtimestamp(value, tz=UTC)
    return None
