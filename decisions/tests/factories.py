"""factory-boy factories for the decisions app."""

from __future__ import annotations

import factory

from decisions.models import DecisionOutcome, DecisionRecord
from decisions.rules import RULES_VERSION
from decisions.services import now_ms


class DecisionRecordFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DecisionRecord

    invoice_ref = factory.Sequence(lambda n: f"in_{n:05d}")
    source = DecisionRecord.Source.API
    failure_code = "card_expired"
    attempt = 1
    prior_failures = 0
    rule_fired = "card_expired"
    matched = True
    churn_risk = "low"
    action = "request_card_update"
    retry_in_days = 1
    offer = "Update the card on file."
    escalated = False
    retry_at = None
    schedule_source = "none"
    likelihood = 0.7
    rules_version = RULES_VERSION
    decided_at = factory.LazyFunction(now_ms)


class DecisionOutcomeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DecisionOutcome

    invoice_ref = factory.Sequence(lambda n: f"in_{n:05d}")
    outcome = DecisionOutcome.Outcome.PAID
    report_key = factory.Sequence(lambda n: f"rk_{n}")
    reported_at = factory.LazyFunction(now_ms)
