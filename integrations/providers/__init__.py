"""Provider adapters: verify a delivery on its raw bytes and translate its payload.

Each adapter module exposes the same four names, so the view and the worker never branch
on the provider:

- `verify(*, body, headers, credential, url_key, now) -> None` raises `VerificationFailed`
  with a reason code; it reads only the raw bytes and the headers.
- `envelope(*, body, headers) -> Envelope` the event key, type and ordering hints read
  from an already verified body; raises `PayloadInvalid`.
- `translate(*, payload, event_type, context) -> DomainEvent` pure translation.
- `HEADERS`: the request headers worth keeping beside the raw body.

The names they share are in `base`; the package re-exports them with `adapter()`.
"""

from __future__ import annotations

from types import ModuleType

from integrations.providers import chargebee, recharge, stripe
from integrations.providers.base import (
    PROVIDER_NAMES,
    Credentials,
    Envelope,
    PayloadInvalid,
    VerificationFailed,
    age_exceeds,
    currency_checked,
    load_json,
)

__all__ = [
    "PROVIDER_NAMES", "Credentials", "Envelope", "PayloadInvalid", "VerificationFailed", "adapter", "age_exceeds",
    "chargebee", "currency_checked", "load_json", "recharge", "stripe",
]

_ADAPTERS: dict[str, ModuleType] = {"stripe": stripe, "recharge": recharge, "chargebee": chargebee}


def adapter(provider: str) -> ModuleType:
    """The adapter module for `provider`; KeyError for an unknown name."""
    return _ADAPTERS[provider]
