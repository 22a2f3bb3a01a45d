"""What every provider adapter shares: its errors, the envelope, credentials, the JSON and age checks."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from integrations.domain import DomainEvent, Ignored
from ledger.money import REASON_CURRENCY_UNKNOWN, currency_known
from paypilot.jsonlimits import REASON_INVALID_BODY, JsonRefused, json_loads_strict

PROVIDER_NAMES = ("stripe", "recharge", "chargebee")


class VerificationFailed(Exception):
    """The delivery is not proven to come from the provider; `reason` is a snake_case code."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail or reason


class PayloadInvalid(Exception):
    """The verified body is not the shape the provider documents; `reason` is a code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Envelope:
    """What the inbox needs before any processing: the dedupe key and the event type."""

    event_key: str
    event_type: str
    resource_key: str = ""  # the object whose state the event reports (ordering)
    resource_version: int | None = None  # larger is newer, when the provider gives one


@dataclass(frozen=True)
class Credentials:
    """Decrypted per-tenant provider settings handed to `verify` and `translate`."""

    secret: str = ""  # Stripe signing secret, Recharge client secret, Chargebee password
    username: str = ""  # Chargebee Basic-auth user name
    url_key: str = ""  # Chargebee unguessable URL segment
    default_currency: str = "USD"  # Recharge 2021-01 payloads carry no currency
    extra: dict[str, Any] = field(default_factory=dict)


def load_json(body: bytes) -> dict[str, Any]:
    """Parse a JSON object body, or raise PayloadInvalid: `body_not_json`, `body_not_object`,
    or the strict parser's own code (`json_too_deep`, `json_duplicate_key`, ...). The depth
    is checked before parsing: 1,500 levels used to be a RecursionError and a 500."""
    try:
        value = json_loads_strict(body)
    except JsonRefused as exc:
        raise PayloadInvalid("body_not_json" if exc.reason == REASON_INVALID_BODY else exc.reason) from exc
    if not isinstance(value, dict):
        raise PayloadInvalid("body_not_object")
    return value


def currency_checked(event: DomainEvent) -> DomainEvent:
    """The one currency gate every adapter's output passes (processing calls it on what
    `translate` returns): an event naming a currency outside ISO 4217 (XXX, QQQ) becomes
    `Ignored("currency_unknown")`, so it is marked ignored and never reaches the ledger or
    a draft. Any domain event with a `currency` (or a nested `failure`) is covered, so new
    event kinds need no change here."""
    for part in (event, getattr(event, "failure", None)):
        currency = getattr(part, "currency", None)
        if currency is not None and not currency_known(currency):
            return Ignored(REASON_CURRENCY_UNKNOWN)
    return event


def age_exceeds(*, timestamp: int, now: float | None, limit: int) -> bool:
    """True when `timestamp` is more than `limit` whole seconds before `now` (the clock when
    None). Whole seconds because the stamps are: `limit` itself is inside the window."""
    current = int(time.time() if now is None else now)
    return current - timestamp > limit
