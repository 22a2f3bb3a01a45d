"""Demo deliveries: provider events of the real shapes, signed with the tenant's stored secret
and received through the same service as the webhook view (or POSTed to a running server).

`demo_story()` plays a short, fixed story for the demo customers so a first `make run` shows
drafts waiting; `demo_deliveries()` makes any number of random, realistic deliveries for
`manage.py demo_webhooks` (load, staging, a quick look at the console). Every event is
labelled: ids start with `evt_demo_` / `in_demo_`, so demo data is never mistaken for a
tenant's own.
"""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from integrations.models import ProviderCredential
from integrations.providers import Credentials, chargebee, recharge, stripe
from integrations.services import credential_read, credential_set
from integrations.services.inbox import Receipt, webhook_receive
from paypilot.models import Tenant

PROVIDERS = ("stripe", "recharge", "chargebee")
ACTOR = "demo"

# Stripe decline codes PayPilot maps (integrations/data/stripe_decline_map.csv), with the
# message Stripe's API gives for each.
STRIPE_DECLINES = {
    "insufficient_funds": "Your card has insufficient funds.",
    "expired_card": "Your card has expired.",
    "generic_decline": "Your card was declined.",
    "do_not_honor": "Your card was declined.",
    "processing_error": "An error occurred while processing your card. Try again in a little bit.",
    "try_again_later": "Your card was declined. Try again later.",
    "transaction_not_allowed": "Your card does not support this type of purchase.",
}
# Recharge `error_type` values PayPilot maps (integrations/data/recharge_error_map.csv).
RECHARGE_ERRORS = {
    "CARD_DECLINED": "Your card was declined.",
    "INSUFFICIENT_FUNDS": "Your card has insufficient funds.",
    "CARD_EXPIRED": "Your card has expired.",
}
CURRENCIES = (("USD", (2900, 4900, 9900, 14900, 29900)), ("EUR", (1900, 4900, 9900)),
              ("GBP", (2500, 7900)), ("JPY", (3000, 12000)))


@dataclass(frozen=True)
class Delivery:
    """One signed delivery: the path under the server and the exact bytes and headers."""

    provider: str
    path: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True)
class DemoFailure:
    """One failed charge of the story, in the shape every provider builder takes."""

    key: str  # stable per story line: makes the event and invoice ids
    customer_id: str
    email: str
    name: str
    amount_minor: int
    currency: str
    decline_code: str
    attempt: int = 1


def _body(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


# --- secrets --------------------------------------------------------------------------------

def demo_credentials_ensure(*, tenant: Tenant, providers: tuple[str, ...] = PROVIDERS) -> list[str]:
    """Store a random webhook secret for each provider that has none; returns those created.
    A secret already stored (the tenant's own) is never replaced."""
    created = []
    stored = set(ProviderCredential.objects.filter(tenant=tenant).values_list("provider", flat=True))
    for provider in providers:
        if provider in stored:
            continue
        if provider == "stripe":
            credential_set(tenant=tenant, provider="stripe", secret=f"whsec_{secrets.token_urlsafe(24)}", actor=ACTOR)
        elif provider == "recharge":
            credential_set(tenant=tenant, provider="recharge", secret=secrets.token_urlsafe(24),
                           default_currency="USD", actor=ACTOR)
        else:
            credential_set(tenant=tenant, provider="chargebee", secret=secrets.token_urlsafe(24),
                           username="paypilot-demo", actor=ACTOR)
        created.append(provider)
    return created


def _credentials(tenant: Tenant, provider: str) -> Credentials:
    row = ProviderCredential.objects.filter(tenant=tenant, provider=provider).first()
    if row is None:
        raise LookupError(f"tenant {tenant.slug} has no {provider} webhook secret (run demo_setup)")
    return credential_read(row)


# --- signing --------------------------------------------------------------------------------

def signed(*, tenant: Tenant, provider: str, payload: dict[str, Any], label: str = "",
           topic: str = "") -> Delivery:
    """`payload` as the provider would deliver it to this tenant, signed with its secret."""
    creds = _credentials(tenant, provider)
    body = _body(payload)
    if provider == "stripe":
        return Delivery(provider, f"/t/{tenant.slug}/webhooks/stripe", body,
                        {"Stripe-Signature": stripe.sign(body=body, secret=creds.secret)}, label)
    if provider == "recharge":
        headers = recharge.sign_timestamped(body=body, secret=creds.secret)
        if topic:
            headers["X-Recharge-Topic"] = topic
        return Delivery(provider, f"/t/{tenant.slug}/webhooks/recharge", body, headers, label)
    headers = {"Authorization": chargebee.basic_auth_header(username=creds.username, password=creds.secret)}
    return Delivery(provider, f"/t/{tenant.slug}/webhooks/chargebee/{creds.url_key}", body, headers, label)


def receive(*, tenant: Tenant, delivery: Delivery) -> Receipt:
    """In process, through the webhook view's own service: verified, stored, enqueued."""
    url_key = delivery.path.rsplit("/", 1)[1] if delivery.provider == "chargebee" else ""
    return webhook_receive(tenant_slug=tenant.slug, provider=delivery.provider, body=delivery.body,
                           headers=delivery.headers, url_key=url_key)


# --- Stripe shapes (API version 2026-06-24, as in integrations/tests/fixtures/stripe) ------

def _stripe_event(event_id: str, event_type: str, created: datetime, obj: dict[str, Any]) -> dict[str, Any]:
    return {"id": event_id, "object": "event", "api_version": "2026-06-24.dahlia",
            "created": int(created.timestamp()), "livemode": False, "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None}, "type": event_type, "data": {"object": obj}}


def _stripe_invoice(failure: DemoFailure, *, status: str, paid: bool, at: datetime) -> dict[str, Any]:
    invoice_id = f"in_demo_{failure.key}"
    invoice: dict[str, Any] = {
        "id": invoice_id, "object": "invoice", "customer": failure.customer_id,
        "customer_email": failure.email, "customer_name": failure.name, "currency": failure.currency.lower(),
        "amount_due": failure.amount_minor, "amount_paid": failure.amount_minor if paid else 0,
        "amount_remaining": 0 if paid else failure.amount_minor, "attempt_count": failure.attempt,
        "attempted": True, "billing_reason": "subscription_cycle", "collection_method": "charge_automatically",
        "status": status, "hosted_invoice_url": f"https://invoice.stripe.com/i/acct_demo/{invoice_id}",
        "next_payment_attempt": None if paid else int((at + timedelta(days=3)).timestamp()),
        "parent": {"type": "subscription_details", "quote_details": None,
                   "subscription_details": {"subscription": f"sub_demo_{failure.customer_id}", "metadata": {}}},
    }
    if paid:
        invoice["status_transitions"] = {"paid_at": int(at.timestamp())}
    else:
        invoice["payments"] = {"object": "list", "has_more": False, "url": "/v1/invoice_payments", "data": [{
            "id": f"inpay_demo_{failure.key}", "object": "invoice_payment", "amount_requested": failure.amount_minor,
            "status": "open", "is_default": True, "invoice": invoice_id,
            "payment": {"type": "payment_intent", "payment_intent": {
                "id": f"pi_demo_{failure.key}", "object": "payment_intent", "status": "requires_payment_method",
                "last_payment_error": {
                    "type": "card_error", "code": "expired_card" if failure.decline_code == "expired_card"
                    else "card_declined", "decline_code": failure.decline_code, "advice_code": None,
                    "network_advice_code": None, "network_decline_code": None,
                    "message": STRIPE_DECLINES.get(failure.decline_code, "Your card was declined."),
                    "charge": f"ch_demo_{failure.key}", "payment_method_type": "card"},
            }},
        }]}
    return invoice


def stripe_failed(failure: DemoFailure, *, at: datetime) -> dict[str, Any]:
    return _stripe_event(f"evt_demo_{failure.key}_failed", "invoice.payment_failed", at,
                         _stripe_invoice(failure, status="open", paid=False, at=at))


def stripe_paid(failure: DemoFailure, *, at: datetime) -> dict[str, Any]:
    return _stripe_event(f"evt_demo_{failure.key}_paid", "invoice.paid", at,
                         _stripe_invoice(failure, status="paid", paid=True, at=at))


def stripe_cancelled(failure: DemoFailure, *, at: datetime) -> dict[str, Any]:
    subscription = {
        "id": f"sub_demo_{failure.customer_id}", "object": "subscription", "customer": failure.customer_id,
        "status": "canceled", "cancel_at_period_end": False, "canceled_at": int(at.timestamp()),
        "ended_at": int(at.timestamp()), "collection_method": "charge_automatically",
        "cancellation_details": {"reason": "cancellation_requested", "feedback": None, "comment": None},
        "currency": failure.currency.lower(), "latest_invoice": f"in_demo_{failure.key}",
    }
    return _stripe_event(f"evt_demo_{failure.key}_cancelled", "customer.subscription.deleted", at, subscription)


# --- Recharge and Chargebee shapes (as in integrations/tests/fixtures) ---------------------

def _major(amount_minor: int, currency: str) -> str:
    exponent = 0 if currency.upper() == "JPY" else 2
    return f"{amount_minor / 10 ** exponent:.{exponent}f}"


def recharge_failed(failure: DemoFailure, *, at: datetime, number: int) -> dict[str, Any]:
    error_type = {"insufficient_funds": "INSUFFICIENT_FUNDS", "expired_card": "CARD_EXPIRED"}.get(
        failure.decline_code, "CARD_DECLINED")
    price = _major(failure.amount_minor, failure.currency)
    return {"charge": {
        "id": 990000000 + number, "type": "recurring", "status": "error",
        "customer": {"id": 880000000 + number, "email": failure.email, "hash": f"demo{number:08x}"},
        "billing_address": {"first_name": failure.name, "last_name": "", "country_code": "US"},
        "currency": failure.currency, "total_price": price, "subtotal_price": price, "total_tax": "0.00",
        "error": RECHARGE_ERRORS[error_type], "error_type": error_type, "charge_attempts": failure.attempt,
        "retry_date": (at + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S"),
        "scheduled_at": at.strftime("%Y-%m-%dT00:00:00"), "processed_at": None, "payment_processor": "stripe",
        "created_at": (at - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S"),
        "updated_at": at.strftime("%Y-%m-%dT%H:%M:%S"),
    }}


def chargebee_failed(failure: DemoFailure, *, at: datetime, number: int) -> dict[str, Any]:
    stamp = int(at.timestamp())
    invoice_id = f"inv_demo_{failure.key}"
    return {
        "id": f"ev_demo_{failure.key}", "occurred_at": stamp, "source": "scheduled_job", "object": "event",
        "api_version": "v2", "event_type": "payment_failed", "webhook_status": "scheduled",
        "content": {
            "transaction": {
                "id": f"txn_demo_{failure.key}", "customer_id": failure.customer_id,
                "subscription_id": f"sub_demo_{failure.customer_id}", "payment_method": "card", "gateway": "stripe",
                "type": "payment", "date": stamp, "currency_code": failure.currency, "amount": failure.amount_minor,
                "status": "failure", "error_code": "card_declined",
                "error_text": STRIPE_DECLINES.get(failure.decline_code, "Your card was declined."),
                "error_detail": {"error_category": "card_error", "error_code": "card_declined",
                                 "decline_code": failure.decline_code},
                "linked_invoices": [{"invoice_id": invoice_id, "applied_amount": 0, "applied_at": stamp,
                                     "invoice_status": "payment_due"}],
                "resource_version": stamp * 1000 + 1, "deleted": False, "object": "transaction",
            },
            "invoice": {
                "id": invoice_id, "customer_id": failure.customer_id,
                "subscription_id": f"sub_demo_{failure.customer_id}", "recurring": True, "status": "payment_due",
                "currency_code": failure.currency, "total": failure.amount_minor, "amount_paid": 0,
                "amount_due": failure.amount_minor, "dunning_status": "in_progress",
                "next_retry_at": stamp + 3 * 86400, "due_date": stamp,
                "dunning_attempts": [{"attempt": failure.attempt - 1, "transaction_id": f"txn_demo_{failure.key}",
                                      "dunning_type": "auto_collect", "created_at": stamp, "txn_status": "failure",
                                      "txn_amount": failure.amount_minor}],
                "resource_version": stamp * 1000 + 2, "object": "invoice",
            },
            "customer": {"id": failure.customer_id, "first_name": failure.name, "last_name": "",
                         "email": failure.email, "company": failure.name, "auto_collection": "on",
                         "object": "customer"},
        },
    }


# --- the story ----------------------------------------------------------------------------

# (story key, demo customer id, amount in minor units, currency, Stripe decline code, what happens next)
STORY = (
    ("acme_0601", "cust_001", 149900, "USD", "expired_card", "failed"),
    ("brightleaf_0602", "cust_002", 29900, "EUR", "insufficient_funds", "failed"),
    ("nimbus_0620", "cust_003", 420000, "USD", "generic_decline", "failed"),
    ("pixel_0610", "cust_004", 4900, "USD", "expired_card", "paid_before_failure"),
    ("orbital_0628", "cust_005", 189900, "GBP", "insufficient_funds", "cancelled"),
    ("verdant_0608", "cust_006", 34900, "USD", "expired_card", "failed"),
)


def demo_story(*, tenant: Tenant, customers: dict[str, tuple[str, str]],
               now: datetime | None = None) -> list[tuple[str, Receipt]]:
    """Deliver the story's events for the demo customers (`{id: (name, email)}`), signed and
    received like any webhook. Safe to run again: the same event ids are duplicates."""
    now = now or timezone.now()
    out: list[tuple[str, Receipt]] = []
    for index, (key, customer_id, amount, currency, decline, after) in enumerate(STORY):
        if customer_id not in customers:
            continue
        name, email = customers[customer_id]
        failure = DemoFailure(key=key, customer_id=customer_id, email=email, name=name, amount_minor=amount,
                              currency=currency, decline_code=decline)
        failed_at = now - timedelta(hours=6 * (len(STORY) - index))
        events: list[tuple[str, dict[str, Any]]] = [(f"{key}: payment failed ({decline})",
                                                     stripe_failed(failure, at=failed_at))]
        if after == "paid_before_failure":  # the paid event overtakes the failure in transit
            events.insert(0, (f"{key}: paid (arrives first)", stripe_paid(failure, at=failed_at + timedelta(hours=1))))
        elif after == "cancelled":
            events.append((f"{key}: subscription cancelled",
                           stripe_cancelled(failure, at=failed_at + timedelta(hours=2))))
        for label, payload in events:
            out.append((label, receive(tenant=tenant, delivery=signed(tenant=tenant, provider="stripe",
                                                                       payload=payload, label=label))))
    return out


# --- random deliveries for demo_webhooks ---------------------------------------------------

def demo_deliveries(*, tenant: Tenant, provider: str, count: int, rng: random.Random,
                    run_id: str, now: datetime | None = None) -> Iterator[Delivery]:
    """`count` signed deliveries of realistic shapes: mostly failures (each a new invoice of a
    made-up customer), and on Stripe some later paid or cancelled. Ids carry `run_id`."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; one of {', '.join(PROVIDERS)}")
    now = now or timezone.now()
    made: list[DemoFailure] = []
    for number in range(count):
        if provider == "stripe" and made and rng.random() < 0.25:
            earlier = made.pop(rng.randrange(len(made)))
            at = now - timedelta(minutes=rng.randrange(0, 600))
            payload = stripe_paid(earlier, at=at) if rng.random() < 0.7 else stripe_cancelled(earlier, at=at)
            yield signed(tenant=tenant, provider=provider, payload=payload, label=payload["type"])
            continue
        currency, amounts = rng.choice(CURRENCIES)
        failure = DemoFailure(
            key=f"{run_id}_{number:06d}", customer_id=f"cus_demo_{run_id}_{rng.randrange(10**6):06d}",
            email=f"billing+{run_id}{number}@example.com", name=f"Demo Customer {number}",
            amount_minor=rng.choice(amounts), currency=currency, decline_code=rng.choice(sorted(STRIPE_DECLINES)),
            attempt=rng.randint(1, 3),
        )
        at = now - timedelta(minutes=rng.randrange(0, 24 * 60))
        if provider == "stripe":
            made.append(failure)
            yield signed(tenant=tenant, provider=provider, payload=stripe_failed(failure, at=at),
                         label="invoice.payment_failed")
        elif provider == "recharge":
            yield signed(tenant=tenant, provider=provider, payload=recharge_failed(failure, at=at, number=number),
                         label="charge/failed", topic="charge/failed")
        else:
            yield signed(tenant=tenant, provider=provider, payload=chargebee_failed(failure, at=at, number=number),
                         label="payment_failed")
