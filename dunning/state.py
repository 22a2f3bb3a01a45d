"""The recovery pipeline's typed state: the failed payment in, the customer's facts, and what each step fills in.

Its own module, below both the pipeline and the LLM redraft (`dunning.drafting`), so each
can import it without importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from decisions.rules import Decision
from dunning.catalogue import LocaleChoice
from dunning.guards import GuardVerdict
from dunning.retrieval import Passage
from dunning.selectors import CustomerRow
from ledger.models import Customer
from paypilot.models import Tenant


@dataclass(frozen=True)
class RecoveryInput:
    """One failed payment as the pipeline sees it. Every string here is untrusted."""

    customer_id: str
    amount_minor: int
    currency: str
    failure_code: str
    attempt: int = 1
    customer_name: str = ""  # used only when the customer is not on record
    customer_email: str = ""
    plan: str = ""
    locale: str = ""
    provider_retry_at: datetime | None = None
    provider_retry_source: str = "provider"
    invoice_ref: str = ""  # names the decision row when one is stored
    # The card network's answer (brand, advice and decline codes) when the provider passed it.
    card_brand: str = ""
    network_advice_code: str = ""
    network_decline_code: str = ""


@dataclass(frozen=True)
class CustomerFacts:
    on_record: bool
    name: str | None  # already through dunning.slots
    email: str | None  # masked on the LLM path, never rendered
    plan: str | None  # already through dunning.slots
    locale_tag: str
    mrr_minor: int | None
    history: tuple[str, ...]  # statuses, oldest first
    dropped: tuple[dict[str, str], ...] = ()  # {"field", "reason"} per value left out of the copy


@dataclass
class RecoveryState:
    event: RecoveryInput
    tenant: Tenant | None
    now: datetime
    customer_record: Customer | CustomerRow | None = None
    preloaded: bool = False  # the caller already looked the customer up (batch)
    # filled by the steps, in order
    customer: CustomerFacts | None = None
    failure_code: str = ""
    locale: LocaleChoice | None = None
    business: str | None = None
    passages: tuple[Passage, ...] = ()
    prior_failures: int = 0
    churn_risk: str = ""
    diagnosis: str = ""
    decision: Decision | None = None
    schedule: dict[str, Any] = field(default_factory=dict)
    subject: str = ""
    body: str = ""
    source: str = "template"
    fallback_used: bool = False
    guard_verdict: GuardVerdict | None = None
    dropped_fields: list[dict[str, str]] = field(default_factory=list)  # name, plan, business
    result: dict[str, Any] = field(default_factory=dict)
