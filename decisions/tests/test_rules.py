"""The rules table: property tests over every code x attempt x prior_failures, and examples."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decisions import rules

NOW = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
codes = st.sampled_from(list(rules.FAILURE_CODES)) | st.from_regex(r"[a-z0-9_]{1,64}", fullmatch=True)
attempts = st.integers(min_value=1, max_value=50)
priors = st.integers(min_value=0, max_value=50)
provider_times = st.none() | st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2027, 1, 1), timezones=st.just(UTC))


@settings(deadline=None)  # no timing in tests: a busy machine must not fail them
@given(code=codes, attempt=attempts, prior=priors, provider_at=provider_times)
def test_every_input_gives_exactly_one_well_formed_decision(code, attempt, prior, provider_at):  # type: ignore[no-untyped-def]
    decision = rules.decide(failure_code=code, attempt=attempt, prior_failures=prior,
                            provider_retry_at=provider_at, provider_retry_source="billing", now=NOW)
    # Exactly one row fires: the code's own when listed, otherwise the default.
    assert decision.rule_fired == (code if code in rules.FAILURE_CODES else rules.DEFAULT_RULE)
    assert decision.matched is (code in rules.FAILURE_CODES)
    risk = rules.churn_risk(attempt=attempt, prior_failures=prior)
    assert decision.churn_risk == risk
    # Escalation only on high risk.
    assert decision.strategy.escalated is (risk == "high")
    days = decision.strategy.retry_in_days
    assert isinstance(days, int) and not isinstance(days, bool) and days >= 0
    # No-retry codes and actions never get a retry time, whatever a provider sent.
    if code in rules.NO_RETRY_CODES or decision.strategy.action in rules.NO_RETRY_ACTIONS:
        assert decision.schedule.retry_at is None and decision.schedule.source == "none"
    elif provider_at is not None:
        assert decision.schedule == rules.Schedule(retry_at=provider_at, source="billing")
    else:
        assert decision.schedule.source == "paypilot_suggestion"
        assert decision.schedule.retry_at == NOW + timedelta(days=days)
    assert 0 <= decision.likelihood <= 1
    assert decision.rules_version == rules.RULES_VERSION


@settings(deadline=None)  # no timing in tests: a busy machine must not fail them
@given(attempt=attempts, prior=priors)
def test_risk_buckets_follow_the_stated_rule(attempt, prior):  # type: ignore[no-untyped-def]
    score = attempt + prior
    expected = "high" if attempt >= 3 or score >= 4 else "medium" if attempt >= 2 or score >= 2 else "low"
    assert rules.churn_risk(attempt=attempt, prior_failures=prior) == expected


@settings(deadline=None)  # no timing in tests: a busy machine must not fail them
@given(amount=st.integers(min_value=0, max_value=10**12), mrr=st.none() | st.integers(min_value=0, max_value=10**12),
       prior=priors)
def test_impact_is_integer_minor_units(amount, mrr, prior):  # type: ignore[no-untyped-def]
    impact = rules.decide(failure_code="card_expired", prior_failures=prior, amount_minor=amount,
                          mrr_minor=mrr, now=NOW).impact
    assert impact is not None
    assert impact.likelihood == round(0.7 * 0.82**prior, 4)
    assert impact.expected_recovered_minor == round(amount * impact.likelihood)
    assert impact.annual_value_at_risk_minor == 12 * (mrr if mrr is not None else amount)


def test_escalation_tightens_cadence() -> None:
    assert rules.decide(failure_code="insufficient_funds", attempt=1, now=NOW).strategy.retry_in_days == 3
    high = rules.decide(failure_code="insufficient_funds", attempt=3, now=NOW).strategy
    assert (high.retry_in_days, high.escalated) == (2, True)
    assert rules.decide(failure_code="card_expired", attempt=3, now=NOW).strategy.retry_in_days == 1
    never = rules.decide(failure_code="issuer_do_not_retry", attempt=5, now=NOW).strategy
    assert (never.retry_in_days, never.escalated) == (0, True)


def test_impact_worked_example() -> None:
    d = rules.decide(failure_code="card_expired", amount_minor=149900, mrr_minor=149900, now=NOW)
    assert d.impact == rules.Impact(likelihood=0.7, expected_recovered_minor=104930,
                                    annual_value_at_risk_minor=1798800)
    assert rules.decide(failure_code="card_expired", now=NOW).impact is None


def test_prior_failures_from_history_counts_six_before_current() -> None:
    history = ["failed", "failed", "paid", "failed", "paid", "failed", "paid", "failed"]
    # The last entry is the current failure; the six before it hold three failures.
    assert rules.prior_failures_from_history(history) == 3
    assert rules.prior_failures_from_history([]) == 0
    assert rules.prior_failures_from_history(["failed"]) == 0


def test_version_is_a_digest_of_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    before = rules._digest()
    assert before == rules.RULES_VERSION
    changed = dict(rules.OFFERS) | {"wait_and_retry": "different words"}
    monkeypatch.setattr(rules, "OFFERS", changed)
    assert rules._digest() != before


def test_table_matches_the_facts_file() -> None:
    facts = Path(__file__).resolve().parents[3] / "shared" / "facts" / "strategy_rules.csv"
    if not facts.exists():
        pytest.skip("the shared facts directory is not present")
    with open(facts, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            name = rules.DEFAULT_RULE if row["failure_code"].startswith("<default") else row["failure_code"]
            rule = rules.RULES[name]
            assert (rule.action, rule.retry_in_days, rule.retry_in_days_when_escalated) == (
                row["action"], int(row["retry_in_days"]), int(row["retry_in_days_when_escalated"]))
            assert rule.likelihood_base == float(row["recovery_likelihood_base"])


def test_as_dict_is_json_ready() -> None:
    import json

    out = rules.decide(failure_code="generic_decline", now=NOW).as_dict()
    assert json.loads(json.dumps(out)) == out
    assert out["schedule"]["retry_at"] == "2026-07-03T09:00:00.000Z"
