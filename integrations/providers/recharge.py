"""Recharge adapter: both signature schemes and charge translation (API 2021-01 and 2021-11).

Sources:
- `shared/facts/recharge_webhooks.md` (docs.getrecharge.com "Using webhooks", the changelog
  entry "Webhook signatures now support timestamp verification", Recharge's Python
  validation sample as quoted by hookdeck/webhook-skills, the 2021-01 and 2021-11 webhook
  example sets): the legacy `X-Recharge-Hmac-Sha256` (plain SHA-256 of client secret +
  body), the timestamped `X-Recharge-Webhook-Signature` (HMAC-SHA256 of "<t>.<body>",
  48 h window), the charge fields per API version.
- `integrations/data/recharge_error_map.csv`, copied from `shared/facts/recharge_error_map.csv`:
  all 109 Recharge error types with whether Recharge retries, PayPilot's classification and
  whether the customer is emailed.

Times (ISO-8601 without an offset, read as UTC like the other Recharge times): a failure at
the charge's `updated_at` (2021-01 also `last_charge_attempt_date`), a payment at its
`processed_at`, a cancellation at the subscription's `cancelled_at`, each falling back to
`updated_at`. Refunds: the `charge/refunded` topic (recharge_webhooks.md lists it; statuses
`refunded` and `partially_refunded`) carries the charge with `total_refunds`, the total
refunded so far in major units (a 2021-11 Charge field, from Recharge's API reference as I
recall it; not in the stored facts), so it is applied as a cumulative total per charge.
Recharge has no void of a charge; a skipped or cancelled upcoming charge never failed.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from types import MappingProxyType
from typing import Any

from integrations.domain import (
    DomainEvent,
    Ignored,
    PaymentFailed,
    PaymentRefunded,
    PaymentSucceeded,
    SubscriptionCancelled,
)
from integrations.providers.base import Credentials, Envelope, PayloadInvalid, VerificationFailed, load_json
from ledger.money import to_minor

NAME = "recharge"
REPLAY_WINDOW_SECONDS = 172_800  # 48 h, symmetric, as the changelog states
HEADERS = (
    "X-Recharge-Topic",
    "X-Recharge-Webhook-Signature",
    "X-Recharge-Webhook-Timestamp",
    "X-Recharge-Hmac-Sha256",
)
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
TOPICS = frozenset(
    {"charge/failed", "charge/max_retries_reached", "charge/paid", "charge/refunded", "subscription/cancelled"}
)
REFUNDED_STATUSES = frozenset({"refunded", "partially_refunded"})
NOT_CUSTOMER = "not_customer"  # classification: a store or platform problem, never emailed


@dataclass(frozen=True)
class ErrorType:
    """One row of recharge_error_map.csv."""

    retried_by_recharge: bool
    hard_decline: bool
    classification: str  # a PayPilot failure code, or not_customer
    customer_emailed: str  # "yes", "no", "suppressed while Recharge retry_date set"

    @property
    def suppressed_while_retrying(self) -> bool:
        return self.customer_emailed.startswith("suppressed")


def _load_error_map() -> Mapping[str, ErrorType]:
    with (DATA_DIR / "recharge_error_map.csv").open(newline="", encoding="utf-8") as fh:
        return MappingProxyType(
            {
                row["error_type"]: ErrorType(
                    retried_by_recharge=row["retried_by_recharge"] == "yes",
                    hard_decline=row["hard_decline"] == "yes",
                    classification=row["paypilot_classification"],
                    customer_emailed=row["customer_emailed"],
                )
                for row in csv.DictReader(fh)
            }
        )


ERROR_TYPES: Mapping[str, ErrorType] = _load_error_map()


# --- verification -------------------------------------------------------------------------

def verify(
    *, body: bytes, headers: Mapping[str, str], credential: Credentials, url_key: str = "",
    now: float | None = None,
) -> None:
    """Check the timestamped signature when present (never falling back), else the legacy one.

    Raises VerificationFailed with signature_missing, signature_malformed,
    signature_mismatch or timestamp_stale.
    """
    secret = credential.secret.encode()
    timestamped = headers.get("X-Recharge-Webhook-Signature", "")
    if timestamped:
        fields = dict(
            item.strip().partition("=")[::2] for item in timestamped.split(",") if "=" in item
        )
        stamp, given = fields.get("t", ""), fields.get("v1", "")
        if not stamp.isdigit() or not given:
            raise VerificationFailed("signature_malformed")
        header_stamp = headers.get("X-Recharge-Webhook-Timestamp", "")
        if header_stamp and header_stamp != stamp:
            raise VerificationFailed("signature_mismatch")
        expected = hmac.new(secret, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, given.lower()):
            raise VerificationFailed("signature_mismatch")
        current = int(time.time() if now is None else now)  # whole seconds: boundary inclusive
        if abs(current - int(stamp)) > REPLAY_WINDOW_SECONDS:
            raise VerificationFailed("timestamp_stale")
        return
    legacy = headers.get("X-Recharge-Hmac-Sha256", "")
    if not legacy:
        raise VerificationFailed("signature_missing")
    # Not an HMAC despite the name: SHA-256 over the secret followed by the raw body.
    expected = hashlib.sha256(secret + body).hexdigest()
    if not hmac.compare_digest(expected, legacy.strip().lower()):
        raise VerificationFailed("signature_mismatch")


def sign_timestamped(*, body: bytes, secret: str, timestamp: int | None = None) -> dict[str, str]:
    """Headers of the timestamped scheme for `body` (tests and fixtures)."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"X-Recharge-Webhook-Signature": f"t={stamp},v1={digest}", "X-Recharge-Webhook-Timestamp": stamp}


def sign_legacy(*, body: bytes, secret: str) -> dict[str, str]:
    """Header of the legacy scheme for `body`."""
    return {"X-Recharge-Hmac-Sha256": hashlib.sha256(secret.encode() + body).hexdigest()}


# --- envelope -----------------------------------------------------------------------------

def envelope(*, body: bytes, headers: Mapping[str, str]) -> Envelope:
    """Recharge sends no event id: the key is topic + charge id + number of tries."""
    payload = load_json(body)
    topic = topic_of(payload, headers.get("X-Recharge-Topic", ""))
    charge = payload.get("charge")
    if isinstance(charge, dict) and charge.get("id") is not None:
        # A refund does not change the tries; two partial refunds differ by their total.
        tries = charge.get("total_refunds") if topic == "charge/refunded" else _tries(charge)
        return Envelope(
            event_key=f"{topic}:{charge['id']}:{tries}",
            event_type=topic,
            resource_key=f"charge:{charge['id']}",
        )
    subscription = payload.get("subscription")
    if isinstance(subscription, dict) and subscription.get("id") is not None:
        stamp = str(subscription.get("updated_at") or subscription.get("cancelled_at") or "")
        return Envelope(
            event_key=f"{topic}:{subscription['id']}:{stamp}",
            event_type=topic,
            resource_key=f"subscription:{subscription['id']}",
        )
    digest = hashlib.sha256(topic.encode() + b"\n" + body).hexdigest()
    return Envelope(event_key=f"{topic}:sha256:{digest}", event_type=topic)


def topic_of(payload: Mapping[str, Any], header: str) -> str:
    """The delivery's topic. The topic header is not covered by either signature, so it is
    believed only when the payload agrees with it; otherwise the payload decides.

    Handled topics need a matching payload (a replayed failure cannot be relabelled
    `charge/paid`); an unhandled topic header is kept when the payload does not describe a
    handled topic, so it is acknowledged under its own name.
    """
    inferred = _inferred_topic(payload)
    if not _TOPIC_SHAPE.match(header or ""):
        return inferred
    if header in TOPICS:
        return header if _CONSISTENT[header](payload) else inferred
    return inferred if inferred in TOPICS else header


def _inferred_topic(payload: Mapping[str, Any]) -> str:
    charge = payload.get("charge")
    if isinstance(charge, dict):
        status = str(charge.get("status") or "").lower()
        if status == "error":
            if charge.get("error_type") == "CLOSED_MAX_RETRIES_REACHED":
                return "charge/max_retries_reached"
            return "charge/failed"
        if status == "success":
            return "charge/paid"
        if status in REFUNDED_STATUSES:
            return "charge/refunded"
        return f"charge/{status or 'unknown'}"[:100]
    subscription = payload.get("subscription")
    if isinstance(subscription, dict):
        status = str(subscription.get("status") or "").lower()
        return "subscription/cancelled" if status == "cancelled" else f"subscription/{status or 'unknown'}"[:100]
    return "unknown"


def _charge_status(payload: Mapping[str, Any]) -> str:
    charge = payload.get("charge")
    return str(charge.get("status") or "").lower() if isinstance(charge, dict) else ""


_TOPIC_SHAPE = re.compile(r"^[a-z_]{1,40}/[a-z_]{1,60}$")
_CONSISTENT: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "charge/failed": lambda p: _charge_status(p) == "error",
    "charge/max_retries_reached": lambda p: _charge_status(p) == "error"
    and not (p.get("charge") or {}).get("retry_date"),
    "charge/paid": lambda p: _charge_status(p) == "success",
    "charge/refunded": lambda p: _charge_status(p) in REFUNDED_STATUSES,
    "subscription/cancelled": lambda p: isinstance(p.get("subscription"), dict)
    and str(p["subscription"].get("status") or "").lower() == "cancelled",
}


# --- translation --------------------------------------------------------------------------

def translate(*, payload: dict[str, Any], event_type: str, context: Credentials) -> DomainEvent:
    handler = _HANDLERS.get(event_type)
    if handler is None:
        return Ignored("unhandled_event_type")
    return handler(payload, context)


def _charge_failed(payload: Mapping[str, Any], context: Credentials) -> DomainEvent:
    charge = _charge(payload)
    error_type = str(charge.get("error_type") or "")
    row = ERROR_TYPES.get(error_type)
    if row is None:
        return Ignored("unmapped_error_type")
    if row.classification == NOT_CUSTOMER:
        return Ignored("not_customer_error")
    retry_at = _parse_time(charge.get("retry_date"))
    suppressed = "recharge_retry_scheduled" if retry_at and row.suppressed_while_retrying else ""
    return _failure(charge, context, failure_code=row.classification, retry_at=retry_at,
                    suppressed_reason=suppressed)


def _max_retries_reached(payload: Mapping[str, Any], context: Credentials) -> DomainEvent:
    # recharge_webhooks.md proposal: retries_exhausted whatever the error_type. Recharge can
    # still process the charge by hand, so the customer is asked for a new payment method.
    return _failure(_charge(payload), context, failure_code="retries_exhausted", retry_at=None,
                    suppressed_reason="")


def _charge_paid(payload: Mapping[str, Any], context: Credentials) -> DomainEvent:
    charge = _charge(payload)
    currency = _currency(charge, context)
    return PaymentSucceeded(
        external_invoice_id=str(charge["id"]),
        amount_paid_minor=_minor(charge.get("total_price"), currency),
        currency=currency,
        occurred_at=_parse_time(charge.get("processed_at")) or _parse_time(charge.get("updated_at")),
    )


def _charge_refunded(payload: Mapping[str, Any], context: Credentials) -> DomainEvent:
    charge = _charge(payload)
    currency = _currency(charge, context)
    if charge.get("total_refunds") is None:
        raise PayloadInvalid("total_refunds_missing")
    return PaymentRefunded(
        external_invoice_id=str(charge["id"]), refund_ref=f"charge:{charge['id']}", currency=currency,
        cumulative_minor=_minor(charge.get("total_refunds"), currency, field="total_refunds"),
        occurred_at=_parse_time(charge.get("updated_at")),
    )


def _subscription_cancelled(payload: Mapping[str, Any], context: Credentials) -> DomainEvent:
    subscription = payload.get("subscription")
    if not isinstance(subscription, dict) or subscription.get("id") is None:
        raise PayloadInvalid("subscription_missing")
    return SubscriptionCancelled(
        subscription_id=str(subscription["id"]),
        occurred_at=_parse_time(subscription.get("cancelled_at")) or _parse_time(subscription.get("updated_at")),
    )


_HANDLERS = {
    "charge/failed": _charge_failed,
    "charge/max_retries_reached": _max_retries_reached,
    "charge/paid": _charge_paid,
    "charge/refunded": _charge_refunded,
    "subscription/cancelled": _subscription_cancelled,
}
HANDLED_TYPES = frozenset(_HANDLERS)


def _failure(
    charge: Mapping[str, Any], context: Credentials, *, failure_code: str,
    retry_at: datetime | None, suppressed_reason: str,
) -> PaymentFailed:
    currency = _currency(charge, context)
    customer = charge.get("customer")
    if isinstance(customer, dict):  # 2021-11
        customer_id, email = customer.get("id"), customer.get("email")
        billing = charge.get("billing_address") or {}
        name = " ".join(filter(None, [billing.get("first_name"), billing.get("last_name")]))
    else:  # 2021-01
        customer_id, email = charge.get("customer_id"), charge.get("email")
        name = " ".join(filter(None, [charge.get("first_name"), charge.get("last_name")]))
    return PaymentFailed(
        external_invoice_id=str(charge["id"]),
        amount_minor=_minor(charge.get("total_price"), currency),
        currency=currency,
        failure_code=failure_code,
        attempt=max(1, _tries(charge)),
        subscription_id=_subscription_of(charge),
        provider_customer_id=str(customer_id or ""),
        customer_email=str(email or ""),
        customer_name=str(name or ""),
        retry_at=retry_at,
        suppressed_reason=suppressed_reason,
        occurred_at=_parse_time(charge.get("updated_at")) or _parse_time(charge.get("last_charge_attempt_date")),
    )


def _charge(payload: Mapping[str, Any]) -> dict[str, Any]:
    charge = payload.get("charge")
    if not isinstance(charge, dict) or charge.get("id") is None:
        raise PayloadInvalid("charge_missing")
    return charge


def _tries(charge: Mapping[str, Any]) -> int:
    for key in ("charge_attempts", "number_times_tried"):  # 2021-11, then 2021-01
        value = charge.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def _subscription_of(charge: Mapping[str, Any]) -> str:
    for item in charge.get("line_items") or []:
        if not isinstance(item, dict):
            continue
        if item.get("subscription_id"):  # 2021-01
            return str(item["subscription_id"])
        if item.get("purchase_item_type") == "subscription" and item.get("purchase_item_id"):
            return str(item["purchase_item_id"])  # 2021-11
    return ""


def _currency(charge: Mapping[str, Any], context: Credentials) -> str:
    # The 2021-01 charge has no currency: it is the store's, configured per tenant.
    value = charge.get("currency") or context.default_currency or "USD"
    if not isinstance(value, str) or len(value) != 3 or not value.isalpha():
        raise PayloadInvalid("currency_invalid")
    return value.upper()


def _minor(value: Any, currency: str, *, field: str = "total_price") -> int:
    """Recharge money is a string in major units ("349.00")."""
    try:
        amount = to_minor(Decimal(str(value)), currency)
    except (InvalidOperation, ValueError) as exc:
        raise PayloadInvalid(f"{field}_invalid") from exc
    if amount < 0:
        raise PayloadInvalid(f"{field}_invalid")
    return amount


def _parse_time(value: Any) -> datetime | None:
    """ISO-8601 without an offset in Recharge's examples; read as UTC."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
