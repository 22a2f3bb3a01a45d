"""The ONE seam between PayPilot and the Stripe API (tests replace these functions).

Used with a tenant's restricted key, which needs: Invoices read (invoice payments), Payment
Intents read (decline details) and Customer portal write (billing-portal sessions). Every
call has a short timeout; a Stripe outage degrades to the next link candidate or to a
generic failure code, never to a failed webhook.
"""

from __future__ import annotations

import logging
from typing import Any

import stripe

logger = logging.getLogger("paypilot.integrations")

TIMEOUT_SECONDS = 5
MAX_NETWORK_RETRIES = 1


class StripeUnavailable(Exception):
    """The Stripe API call failed (network, auth, permission); the caller falls back."""


def _client(api_key: str) -> stripe.StripeClient:
    return stripe.StripeClient(
        api_key,
        http_client=stripe.new_default_http_client(timeout=TIMEOUT_SECONDS),
        max_network_retries=MAX_NETWORK_RETRIES,
    )


def billing_portal_session_url(*, api_key: str, customer: str, return_url: str) -> str:
    """A fresh billing-portal session URL for `customer` (valid for a short while only)."""
    try:
        session = _client(api_key).v1.billing_portal.sessions.create(
            params={"customer": customer, "return_url": return_url}
        )
    except stripe.StripeError as exc:
        logger.warning("stripe billing portal session failed: %s", type(exc).__name__)
        raise StripeUnavailable(type(exc).__name__) from exc
    return str(session.url)


def invoice_payment_error(*, api_key: str, invoice_id: str, payment_intent_id: str = "") -> dict[str, Any] | None:
    """`last_payment_error` of the invoice's newest payment intent, or None.

    API 2025-03-31.basil and later: through `GET /v1/invoice_payments?invoice=...`; the
    older `invoice.payment_intent` id is used when the payload carried one.
    """
    client = _client(api_key)
    intent: Any = None
    try:
        if payment_intent_id:
            intent = client.v1.payment_intents.retrieve(payment_intent_id)
        else:
            payments = client.v1.invoice_payments.list(
                params={"invoice": invoice_id, "limit": 1, "expand": ["data.payment.payment_intent"]}
            )
            first = payments.data[0] if payments.data else None
            intent = first.payment.payment_intent if first is not None else None
    except stripe.StripeError as exc:
        logger.warning("stripe payment error lookup failed: %s", type(exc).__name__)
        return None
    if intent is None or isinstance(intent, str) or intent.last_payment_error is None:
        return None
    return dict(intent.last_payment_error.to_dict())
