"""Provider adapters: verify a delivery on its raw bytes and translate its payload.

Each adapter module exposes the same four names, so the view and the worker never branch
on the provider:

- `verify(*, body, headers, credential, url_key, now) -> None` raises `VerificationFailed`
  with a reason code; it reads only the raw bytes and the headers.
- `envelope(*, body, headers) -> Envelope` the event key, type and ordering hints read
  from an already verified body; raises `PayloadInvalid`.
- `translate(*, payload, event_type, context) -> DomainEvent` pure translation.
- `HEADERS`: the request headers worth keeping beside the raw body.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

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
    """Parse a JSON object body, or raise PayloadInvalid."""
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PayloadInvalid("body_not_json") from exc
    if not isinstance(value, dict):
        raise PayloadInvalid("body_not_object")
    return value


def adapter(provider: str) -> ModuleType:
    """The adapter module for `provider`; KeyError for an unknown name."""
    from integrations.providers import chargebee, recharge, stripe

    return {"stripe": stripe, "recharge": recharge, "chargebee": chargebee}[provider]
