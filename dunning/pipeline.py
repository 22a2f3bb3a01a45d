"""The recovery pipeline: seven plain steps over one typed state object.

retrieve_context -> assess_risk -> diagnose_reason -> choose_strategy -> schedule_retry ->
draft_message -> finalize. Risk, strategy, schedule and impact come from `decisions.rules`
(this module holds no rule of its own). The default path renders the committed catalogue
and constructs no model client; the LLM path (see `dunning.drafting`) runs only when
drafting is switched on and a key is configured. The state the steps fill in is
`dunning.state` (re-exported here: `RecoveryInput`, `RecoveryState`, `CustomerFacts`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC

from django.conf import settings

from decisions.rules import (
    FAILURE_CODES,
    action_drafts,
    churn_risk,
    decide,
    prior_failures_from_history,
)
from decisions.selectors import rule_table_active
from dunning.catalogue import catalogue
from dunning.drafting import llm_redraft
from dunning.retrieval import get_retriever
from dunning.selectors import CustomerRow, customer_row_get
from dunning.slots import dropped_entry, slot_check
from dunning.state import CustomerFacts, RecoveryInput, RecoveryState
from ledger.models import Customer
from ledger.money import currency_normalise, to_major

_CODE = re.compile(r"^[a-z0-9_]{1,64}$")
UNRECOGNISED_CODE = "unrecognised"  # stands in for a failure code that is not code-shaped

__all__ = ["STEPS", "CustomerFacts", "RecoveryInput", "RecoveryState", "run_pipeline"]


def _slots(name: str | None, plan: str | None) -> tuple[str | None, str | None, tuple[dict[str, str], ...]]:
    checks = {"name": slot_check(name), "plan": slot_check(plan)}
    dropped = tuple(e for f, c in checks.items() if (e := dropped_entry(f, c)) is not None)
    return checks["name"].value, checks["plan"].value, dropped


def _facts_from(record: Customer | CustomerRow | None, event: RecoveryInput, currency: str) -> CustomerFacts:
    if record is None:
        name, plan, dropped = _slots(event.customer_name, event.plan)
        return CustomerFacts(on_record=False, name=name, email=event.customer_email or None, plan=plan,
                             locale_tag=event.locale, mrr_minor=None, history=(), dropped=dropped)
    statuses = tuple(str(e.get("status", "")) for e in record.payment_history if isinstance(e, dict))
    # MRR recorded in another currency cannot be added to this amount.
    same_currency = (record.currency or "").upper() == currency
    name, plan, dropped = _slots(record.name, record.plan)
    return CustomerFacts(on_record=True, name=name, email=record.email or None, plan=plan,
                         locale_tag=record.locale, mrr_minor=record.mrr_minor if same_currency else None,
                         history=statuses, dropped=dropped)


def retrieve_context(state: RecoveryState) -> None:
    """The customer record (names only from there or the event), the locale, the playbook."""
    event = state.event
    currency = currency_normalise(event.currency)
    record = state.customer_record
    if not state.preloaded and record is None and state.tenant is not None and event.customer_id:
        record = customer_row_get(tenant_id=state.tenant.pk, external_id=event.customer_id)
    state.customer = _facts_from(record, event, currency)
    state.failure_code = event.failure_code if _CODE.match(event.failure_code or "") else UNRECOGNISED_CODE
    # The language comes from the customer record (or the event's own field), never a currency.
    state.locale = catalogue().resolve(state.customer.locale_tag)
    state.dropped_fields = list(state.customer.dropped)
    tenant_check = slot_check(state.tenant.name if state.tenant is not None else "")
    if (entry := dropped_entry("business", tenant_check)) is not None:
        state.dropped_fields.append(entry)
    state.business = tenant_check.value or slot_check(settings.PAYPILOT_BUSINESS_NAME).value
    topic = state.failure_code if state.failure_code in FAILURE_CODES else "unknown decline reasons"
    state.passages = get_retriever().search(topic.replace("_", " "))


def assess_risk(state: RecoveryState) -> None:
    customer = state.customer
    assert customer is not None
    history = list(customer.history)
    if not history or history[-1].lower() != "failed":
        history.append("failed")  # the record does not show this failure yet
    state.prior_failures = prior_failures_from_history(history) if customer.on_record else 0
    state.churn_risk = churn_risk(attempt=state.event.attempt, prior_failures=state.prior_failures)


def diagnose_reason(state: RecoveryState) -> None:
    assert state.locale is not None
    state.diagnosis = catalogue().diagnosis(state.locale.used, state.failure_code,
                                            high_risk=state.churn_risk == "high")


def choose_strategy(state: RecoveryState) -> None:
    assert state.customer is not None
    event = state.event
    state.decision = decide(
        failure_code=state.failure_code, attempt=event.attempt, prior_failures=state.prior_failures,
        amount_minor=event.amount_minor, mrr_minor=state.customer.mrr_minor,
        provider_retry_at=event.provider_retry_at, provider_retry_source=event.provider_retry_source,
        now=state.now,
        card_brand=event.card_brand or None, network_advice_code=event.network_advice_code or None,
        network_decline_code=event.network_decline_code or None,
        # The tenant's active rule version (cached per process), the built-in table without one.
        table=rule_table_active(tenant_id=state.tenant.pk) if state.tenant is not None else None,
    )


def schedule_retry(state: RecoveryState) -> None:
    decision = state.decision
    assert decision is not None
    retry_at = decision.schedule.retry_at
    state.schedule = {
        "retry_in_days": decision.strategy.retry_in_days if retry_at else 0,
        "next_retry_at": retry_at.astimezone(UTC).isoformat() if retry_at else None,
        "retry_on": retry_at.astimezone(UTC).date().isoformat() if retry_at else None,
        "timezone": "UTC",
        "source": decision.schedule.source,
    }


def draft_message(state: RecoveryState) -> None:
    assert state.locale is not None and state.customer is not None and state.decision is not None
    if not action_drafts(state.decision.strategy.action):
        # The tenant's rule version says "no email" for this code: no copy, no model call.
        state.subject, state.body = "", ""
        return
    rendered = catalogue().render(
        locale=state.locale.used, failure_code=state.failure_code, name=state.customer.name,
        plan=state.customer.plan, business=state.business,
    )
    state.subject, state.body = rendered.subject, rendered.body
    llm_redraft(state)  # the LLM path; a no-op without a client


def _money(amount_minor: int | None, currency: str) -> float | None:
    # Floats only here, at the presentation edge; the *_minor integers are the record.
    return None if amount_minor is None else float(to_major(amount_minor, currency))


def finalize(state: RecoveryState) -> None:
    decision, locale = state.decision, state.locale
    assert decision is not None and locale is not None
    currency = currency_normalise(state.event.currency)
    impact = decision.impact
    expected = impact.expected_recovered_minor if impact else None
    annual = impact.annual_value_at_risk_minor if impact else None
    state.result = {
        "diagnosis": state.diagnosis,
        "risk": {"attempt": decision.attempt, "prior_failures": decision.prior_failures,
                 "churn_risk": decision.churn_risk, "escalate": decision.strategy.escalated},
        "strategy": {"action": decision.strategy.action, "retry_in_days": decision.strategy.retry_in_days,
                     "offer": decision.strategy.offer, "escalated": decision.strategy.escalated,
                     "tone": decision.strategy.tone, "rule_fired": decision.rule_fired,
                     "matched": decision.matched, "rules_version": decision.rules_version},
        "schedule": state.schedule,
        "subject": state.subject,
        "message": state.body,
        "locale": locale.used,
        "locale_reason": locale.reason,
        "impact": {
            "currency": currency,
            "amount_at_risk": _money(state.event.amount_minor, currency),
            "amount_at_risk_minor": state.event.amount_minor,
            "recovery_likelihood": decision.likelihood,
            "expected_recovered": _money(expected, currency),
            "expected_recovered_minor": expected,
            "annual_value_at_risk": _money(annual, currency),
            "annual_value_at_risk_minor": annual,
            "churn_risk": decision.churn_risk,
        },
        "source": state.source,
        "fallback_used": state.fallback_used,
        "playbook": [p.id for p in state.passages],
        "dropped_fields": list(state.dropped_fields),
    }


Step = Callable[[RecoveryState], None]
STEPS: Sequence[Step] = (
    retrieve_context, assess_risk, diagnose_reason, choose_strategy, schedule_retry, draft_message, finalize,
)


def run_pipeline(state: RecoveryState) -> RecoveryState:
    for step in STEPS:
        step(state)
    return state
