"""Stripe payload shapes: ids, amounts, currencies, times and decline details read from either API version.

Before and after API version `2025-03-31.basil` (`shared/facts/stripe_webhooks.md`): an
invoice's payment intent moved to `payments.data[].payment.payment_intent` and its
subscription to `parent.subscription_details.subscription`. A malformed amount or currency
raises PayloadInvalid with a reason code.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from integrations.providers.base import PayloadInvalid


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
        "card_brand": short(error.get("card_brand"), 32),
        "network_advice_code": short(error.get("network_advice_code"), 4),
        "network_decline_code": short(error.get("network_decline_code"), 4),
    }


def short(value: Any, limit: int) -> str:
    text = str(value or "").strip()
    # Only plain codes go on: anything else (an object, markup) is not a network answer.
    return text if len(text) <= limit and text.replace("_", "").replace(" ", "").isalnum() else ""


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
                return id_of(intent)
    return id_of(invoice.get("payment_intent"))


def subscription_id(invoice: Mapping[str, Any]) -> str:
    """`parent.subscription_details.subscription` (basil+), else the old `subscription`."""
    parent = invoice.get("parent") or {}
    details = parent.get("subscription_details") or {}
    found = id_of(details.get("subscription"))
    return found or id_of(invoice.get("subscription"))


def data_object(payload: Mapping[str, Any]) -> dict[str, Any]:
    data = payload.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    return obj if isinstance(obj, dict) else {}


def id_of(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("id") or "")
    return str(value or "")


def amount_of(invoice: Mapping[str, Any], key: str) -> int:
    value = invoice.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise PayloadInvalid(f"{key}_invalid")
    return value  # Stripe amounts are already in the currency's smallest unit


def optional_amount_of(obj: Mapping[str, Any], key: str) -> int:
    """An amount that may be absent or null (0 then); present, it must be valid."""
    return 0 if obj.get(key) is None else amount_of(obj, key)


def currency_of(invoice: Mapping[str, Any]) -> str:
    value = invoice.get("currency")
    if not isinstance(value, str) or len(value) != 3 or not value.isalpha():
        raise PayloadInvalid("currency_invalid")
    return value.upper()


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def time_of(value: Any) -> datetime | None:
    seconds = int_or_none(value)
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None
