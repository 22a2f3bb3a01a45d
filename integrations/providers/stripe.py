"""Stripe adapter: `Stripe-Signature` verification through the SDK and the event envelope.

The payload's translation is `stripe_events` (with `stripe_payloads`, the API versions'
shapes, and `stripe_codes`, the decline tables); this module re-exports their names so the
adapter keeps one surface (`verify`, `envelope`, `translate`, `enrich`, `HEADERS`, `NAME`).

Source: `shared/facts/stripe_webhooks.md` (stripe-python 15.3.1 `_webhook.py`): the
signature scheme and the 300 s tolerance.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from stripe import SignatureVerificationError, WebhookSignature

from integrations.providers.base import (
    Credentials,
    Envelope,
    PayloadInvalid,
    VerificationFailed,
    age_exceeds,
    load_json,
)
from integrations.providers.stripe_codes import ADVICE_OVERRIDES, DECLINE_CODES, FALLBACK_CODE, failure_code_for
from integrations.providers.stripe_events import BASIL, DISPUTE_EVENT_TYPES, HANDLED_TYPES, enrich, translate
from integrations.providers.stripe_payloads import (
    data_object,
    network_answer,
    payment_error,
    payment_intent_id,
    subscription_id,
)

__all__ = [
    "ADVICE_OVERRIDES", "BASIL", "DECLINE_CODES", "DISPUTE_EVENT_TYPES", "FALLBACK_CODE", "HANDLED_TYPES", "HEADERS",
    "NAME", "TOLERANCE_SECONDS", "Credentials", "PayloadInvalid", "VerificationFailed", "enrich", "envelope",
    "failure_code_for", "network_answer", "payment_error", "payment_intent_id", "sign", "subscription_id",
    "translate", "verify",
]

NAME = "stripe"
TOLERANCE_SECONDS = 300  # stripe.Webhook.DEFAULT_TOLERANCE, inclusive; one-sided (old only)
HEADERS = ("Stripe-Signature",)


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
    obj = data_object(payload)
    # No resource_version: Stripe's `created` has one-second resolution and two events of
    # one invoice often share it; out-of-order protection is the ledger's state machine.
    return Envelope(event_key=event_id, event_type=event_type, resource_key=str(obj.get("id") or "")[:200])
