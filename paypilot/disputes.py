"""The seam between the webhook inbox and the dispute table: neither app may import the other.

`integrations` translates Stripe's `charge.dispute.*` events into a `DisputeReport`;
`reconciliation` registers the sink that stores it (its AppConfig.ready). The sink runs
inside the event's processing transaction, so the row, its audit event and the event's
status commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any


@dataclass(frozen=True)
class DisputeReport:
    """One provider event about one dispute (a chargeback or an inquiry), normalised:
    amount in minor units, currency upper case, times aware UTC."""

    dispute_id: str
    charge_id: str
    amount_minor: int
    currency: str
    reason: str  # the provider's reason code (Stripe: fraudulent, duplicate, ...)
    status: str  # the provider's status (Stripe: needs_response, under_review, won, lost, ...)
    evidence_due_by: date | None
    created_at: datetime  # when the dispute was opened
    event_type: str  # e.g. charge.dispute.funds_withdrawn
    occurred_at: datetime  # the event's own time (ordering)
    details: dict[str, Any] = field(default_factory=dict)


# sink(tenant=..., report=..., event_ref=...) -> outcome code (snake_case)
DisputeSink = Callable[..., str]
_sinks: list[DisputeSink] = []


def register_dispute_sink(sink: DisputeSink) -> None:
    if sink not in _sinks:
        _sinks.append(sink)


def dispute_report(*, tenant: Any, report: DisputeReport, event_ref: str) -> str | None:
    """Hand `report` to the registered sink; None when no app stores disputes."""
    outcome = None
    for sink in _sinks:
        outcome = sink(tenant=tenant, report=report, event_ref=event_ref)
    return outcome
