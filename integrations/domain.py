"""Provider-neutral domain events: what an adapter turns one webhook payload into.

Adapters only translate; the processing service decides what each event does to the
ledger. Every field is already normalised: amounts in integer minor units, currencies
upper case, times timezone-aware UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from paypilot.disputes import DisputeReport


@dataclass(frozen=True)
class PaymentFailed:
    """A payment attempt for one invoice (or charge) failed."""

    external_invoice_id: str
    amount_minor: int
    currency: str
    failure_code: str  # one of decisions' seven failure codes
    attempt: int = 1
    subscription_id: str = ""
    provider_customer_id: str = ""
    customer_email: str = ""
    customer_name: str = ""
    hosted_invoice_url: str = ""
    retry_at: datetime | None = None  # the provider's own next attempt, when it will retry
    # When set, the provider retries by itself and no email is drafted (Recharge).
    suppressed_reason: str = ""
    occurred_at: datetime | None = None  # the provider's time of this failure
    # The card network's own answer, when the provider passes it on (decisions applies the
    # network's retry rules from them): "visa", "mastercard"... and the raw codes.
    card_brand: str = ""
    network_advice_code: str = ""
    network_decline_code: str = ""


@dataclass(frozen=True)
class PaymentSucceeded:
    """An invoice (or charge) was paid."""

    external_invoice_id: str
    amount_paid_minor: int
    currency: str
    occurred_at: datetime | None = None  # the provider's payment time (Stripe: status_transitions.paid_at)


@dataclass(frozen=True)
class SubscriptionCancelled:
    """A subscription ended; its open invoices are churned."""

    subscription_id: str
    occurred_at: datetime | None = None  # the provider's cancellation time


@dataclass(frozen=True)
class RetriesExhausted:
    """The provider gave up collecting this invoice (terminal).

    `failure` carries the last failure when the payload has one, so an invoice first seen
    through this event is still recorded before it is closed.
    """

    external_invoice_id: str
    failure: PaymentFailed | None = None
    occurred_at: datetime | None = None  # when the provider gave up


@dataclass(frozen=True)
class InvoiceVoided:
    """The provider voided (or deleted) an invoice: nothing is owed any more (terminal)."""

    external_invoice_id: str
    occurred_at: datetime | None = None


@dataclass(frozen=True)
class PaymentRefunded:
    """Money paid on an invoice went back to the customer (full or partial).

    Either `amount_minor` (this refund alone, `refund_ref` the provider's refund id) or
    `cumulative_minor` (everything refunded so far under the scope `refund_ref`, e.g. a
    Stripe charge's `amount_refunded`); exactly one is set.
    """

    external_invoice_id: str
    refund_ref: str
    currency: str
    amount_minor: int | None = None
    cumulative_minor: int | None = None
    occurred_at: datetime | None = None


@dataclass(frozen=True)
class Ignored:
    """Acknowledged and left alone, with a snake_case reason."""

    reason: str


DomainEvent = (
    PaymentFailed | PaymentSucceeded | SubscriptionCancelled | RetriesExhausted | InvoiceVoided
    | PaymentRefunded | DisputeReport | Ignored
)
