"""The strategy rules table and the pure functions that decide from it.

Source of the table: `facts/strategy_rules.csv` (copied verbatim to
`decisions/data/strategy_rules.csv`) for action, cadence, tone and base likelihood, and
`facts/failure_codes.json` for the seven codes, the no-retry codes and the no-retry actions
(encoded below). The risk, escalation and impact formulas are the ones stated in
`facts/README.md`. Offer texts are PayPilot's own words. Nothing here touches the database,
the network or a clock unless the caller leaves `now` unset.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from decisions.network import NETWORK_RULES, NetworkVerdict, network_verdict
from decisions.tables import ESCALATE_HIGH, RuleTable, TableRow

DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_RULE = "default"

# From facts/failure_codes.json ("failure_codes", "no_retry_codes", "no_retry_actions").
FAILURE_CODES: tuple[str, ...] = (
    "card_expired",
    "insufficient_funds",
    "generic_decline",
    "issuer_do_not_retry",
    "card_details_invalid",
    "direct_debit_not_retried",
    "retries_exhausted",
)
NO_RETRY_CODES: frozenset[str] = frozenset(
    {"issuer_do_not_retry", "card_details_invalid", "direct_debit_not_retried", "retries_exhausted"}
)
NO_RETRY_ACTIONS: frozenset[str] = frozenset({"request_new_payment_method", "request_manual_payment"})

# Our own customer-facing offer per action; the facts file gives only the intent.
OFFERS: Mapping[str, str] = MappingProxyType(
    {
        "request_card_update": "Update the card on file in a minute from the secure link; nothing else changes.",
        "wait_and_retry": (
            "No action needed: we will try again in a few days, and we can give you a short grace period "
            "if that helps."
        ),
        "request_new_payment_method": (
            "Add a different payment method from the secure link; this card will not be charged again."
        ),
        "request_manual_payment": (
            "Pay this invoice directly from the secure link, or set up a new mandate for the next ones."
        ),
        "retry_and_verify": (
            "We will try once more shortly; if it fails again, your bank or another card can sort it out."
        ),
        # A tenant version's "don't email for this code": nothing is drafted or sent; a retry
        # the table and the networks allow still goes ahead. Not a customer-facing text.
        "no_email": "No email: the customer is not contacted about this failure.",
    }
)
# The action after which the pipeline writes no draft. Never in the built-in table: only a
# tenant version chooses it (decisions.versions).
NO_EMAIL_ACTION = "no_email"


def action_drafts(action: str) -> bool:
    """Whether a decision with `action` leads the pipeline to draft an email."""
    return action != NO_EMAIL_ACTION

CHURN_RISKS = ("low", "medium", "high")
LIKELIHOOD_DECAY = 0.82  # per prior failure (facts/README.md)
HISTORY_WINDOW = 6  # history entries before the current failure that count


@dataclass(frozen=True)
class Rule:
    """One row of the strategy table."""

    name: str  # the failure code, or "default"
    action: str
    retry_in_days: int
    retry_in_days_when_escalated: int
    tone: str
    likelihood_base: float
    intent: str


def _load_rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    with open(DATA_DIR / "strategy_rules.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            name = row["failure_code"]
            if name.startswith("<default"):
                name = DEFAULT_RULE
            if name in rules:
                raise ValueError(f"strategy table: duplicate row {name}")
            tone = row["tone"]
            rules[name] = Rule(
                name=name,
                action=row["action"],
                retry_in_days=int(row["retry_in_days"]),
                retry_in_days_when_escalated=int(row["retry_in_days_when_escalated"]),
                # The facts state no tone for the default row; it shares generic_decline's
                # action, so it shares its tone.
                tone="Calm, helpful" if tone.startswith("(none") else tone,
                likelihood_base=float(row["recovery_likelihood_base"]),
                intent=row["intent"],
            )
    missing = set(FAILURE_CODES) - set(rules)
    if missing or DEFAULT_RULE not in rules:
        raise ValueError(f"strategy table: missing rows {sorted(missing) or [DEFAULT_RULE]}")
    for rule in rules.values():
        if rule.action not in OFFERS:
            raise ValueError(f"strategy table: no offer for action {rule.action}")
        if rule.retry_in_days < 0 or rule.retry_in_days_when_escalated < 0:
            raise ValueError(f"strategy table: negative cadence on {rule.name}")
        # The escalated column must agree with the stated rule: max(1, days - 1), 0 stays 0.
        expected = max(1, rule.retry_in_days - 1) if rule.retry_in_days > 0 else 0
        if rule.retry_in_days_when_escalated != expected:
            raise ValueError(f"strategy table: escalated cadence of {rule.name} breaks the rule")
    return rules


RULES: Mapping[str, Rule] = MappingProxyType(_load_rules())


def _digest() -> str:
    content = {
        "rules": {name: asdict(rule) for name, rule in sorted(RULES.items())},
        "offers": dict(sorted(OFFERS.items())),
        "no_retry_codes": sorted(NO_RETRY_CODES),
        "no_retry_actions": sorted(NO_RETRY_ACTIONS),
        "decay": LIKELIHOOD_DECAY,
        "network_rules": [rule.citation() | {"values": sorted(rule.values), "wait_hours": rule.wait_hours,
                                             "max_attempts": rule.max_attempts, "window_days": rule.window_days}
                          for rule in NETWORK_RULES],
    }
    blob = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
    return "r-" + hashlib.sha256(blob).hexdigest()[:12]


# Changes whenever any row, offer, retry list or network rule changes, so a stored decision
# names the exact table it came from.
RULES_VERSION: str = _digest()

# The table every tenant uses until it activates a version of its own.
BUILTIN_TABLE = RuleTable(
    rows=MappingProxyType({
        name: TableRow(action=rule.action, retry_in_days=rule.retry_in_days, offer=OFFERS[rule.action],
                       escalate_at=ESCALATE_HIGH, max_attempts=None)
        for name, rule in RULES.items()
    }),
    digest=RULES_VERSION,
)


@dataclass(frozen=True)
class Strategy:
    action: str
    retry_in_days: int
    offer: str
    escalated: bool
    tone: str


@dataclass(frozen=True)
class Schedule:
    retry_at: datetime | None
    source: str  # the provider name the caller passed, "paypilot_suggestion", "network_rule" or "none"


@dataclass(frozen=True)
class Impact:
    likelihood: float
    expected_recovered_minor: int
    annual_value_at_risk_minor: int


@dataclass(frozen=True)
class Decision:
    rule_fired: str
    matched: bool
    failure_code: str
    attempt: int
    prior_failures: int
    churn_risk: str
    strategy: Strategy
    schedule: Schedule
    impact: Impact | None
    rules_version: str
    likelihood: float
    # The card-network rules that shaped this decision, each with its id and source; empty
    # when none applied (no network signal, or nothing it forbids).
    network_rules: tuple[dict[str, str], ...] = ()
    card_brand: str = ""
    network_advice_code: str = ""
    network_decline_code: str = ""
    rule_version_id: int | None = None  # the tenant's rule version; None: the built-in table

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (datetimes as ISO 8601 UTC with milliseconds)."""
        return {
            "rule_fired": self.rule_fired,
            "matched": self.matched,
            "input": {
                "failure_code": self.failure_code,
                "attempt": self.attempt,
                "prior_failures": self.prior_failures,
                "card_brand": self.card_brand or None,
                "network_advice_code": self.network_advice_code or None,
                "network_decline_code": self.network_decline_code or None,
            },
            "churn_risk": self.churn_risk,
            "strategy": {
                "action": self.strategy.action,
                "retry_in_days": self.strategy.retry_in_days,
                "offer": self.strategy.offer,
                "escalated": self.strategy.escalated,
            },
            "schedule": {
                "retry_at": iso_ms(self.schedule.retry_at),
                "source": self.schedule.source,
            },
            "impact": impact_dict(self.impact, self.likelihood),
            "rules_version": self.rules_version,
            "rule_version_id": self.rule_version_id,
            "network_rules": list(self.network_rules),
        }


def iso_ms(value: datetime | None) -> str | None:
    """UTC ISO 8601 with millisecond precision and a Z, or None."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def impact_dict(impact: Impact | None, likelihood: float) -> dict[str, Any]:
    """Impact as far as it is computable: the likelihood always, money only with an amount."""
    if impact is None:
        return {"recovery_likelihood": likelihood, "expected_recovered_minor": None,
                "annual_value_at_risk_minor": None}
    return {
        "recovery_likelihood": impact.likelihood,
        "expected_recovered_minor": impact.expected_recovered_minor,
        "annual_value_at_risk_minor": impact.annual_value_at_risk_minor,
    }


def churn_risk(*, attempt: int, prior_failures: int) -> str:
    """low / medium / high from the attempt number and the recent failure streak."""
    score = attempt + prior_failures
    if attempt >= 3 or score >= 4:
        return "high"
    if attempt >= 2 or score >= 2:
        return "medium"
    return "low"


def prior_failures_from_history(history: Sequence[str]) -> int:
    """Failed entries among the six history entries before the current failure.

    `history` is oldest first and ends with the current failure, which does not count.
    """
    before = list(history)[:-1] if history else []
    return sum(1 for entry in before[-HISTORY_WINDOW:] if str(entry).lower() == "failed")


def rule_for(failure_code: str) -> tuple[Rule, bool]:
    """The row that fires for `failure_code` and whether it matched a listed code."""
    rule = RULES.get(failure_code)
    if rule is None or failure_code == DEFAULT_RULE:
        return RULES[DEFAULT_RULE], False
    return rule, True


def _strategy(rule: Rule, row: TableRow, *, escalate: bool) -> Strategy:
    # Escalation tightens the cadence by the stated rule max(1, days - 1), 0 stays 0 (the
    # built-in CSV's escalated column is checked on load to say the same).
    days = row.retry_in_days
    if escalate and days > 0:
        days = max(1, days - 1)
    return Strategy(action=row.action, retry_in_days=days, offer=row.offer, escalated=escalate, tone=rule.tone)


def _schedule(*, failure_code: str, strategy: Strategy, provider_retry_at: datetime | None,
              provider_retry_source: str, now: datetime) -> Schedule:
    # A no-retry code or action means no retry at all, whatever time a provider sent.
    if failure_code in NO_RETRY_CODES or strategy.action in NO_RETRY_ACTIONS:
        return Schedule(retry_at=None, source="none")
    if provider_retry_at is not None:
        return Schedule(retry_at=provider_retry_at.astimezone(UTC), source=provider_retry_source)
    if strategy.retry_in_days <= 0:
        return Schedule(retry_at=None, source="none")
    return Schedule(retry_at=now + timedelta(days=strategy.retry_in_days), source="paypilot_suggestion")


# Actions that need no further attempt on the same card, for when a network rule forbids one.
NETWORK_NO_RETRY_ACTION = "request_new_payment_method"
NETWORK_UPDATE_ACTION = "request_card_update"


def _apply_network(verdict: NetworkVerdict, *, strategy: Strategy, schedule: Schedule,
                   now: datetime) -> tuple[Strategy, Schedule]:
    """Bend the table's answer to the network's rules: never propose an attempt they forbid
    (never again, not before the card changes, no attempts left in the window) or one sooner
    than they allow. The provider's own retry time is moved as well: a retry we report is a
    retry we stand behind."""
    if verdict.forbids_retry and strategy.action == NO_EMAIL_ACTION:
        # The network forbids the retry; the tenant said no email for this code, and the
        # networks ask for no email either: nothing happens, and the reasons say why.
        return (Strategy(action=NO_EMAIL_ACTION, retry_in_days=0, offer=strategy.offer,
                         escalated=strategy.escalated, tone=strategy.tone),
                Schedule(retry_at=None, source="network_rule"))
    if verdict.forbids_retry:
        action = NETWORK_UPDATE_ACTION if verdict.update_required and not (
            verdict.never_retry or verdict.attempts_exhausted) else NETWORK_NO_RETRY_ACTION
        return (Strategy(action=action, retry_in_days=0, offer=OFFERS[action], escalated=strategy.escalated,
                         tone=strategy.tone),
                Schedule(retry_at=None, source="network_rule"))
    if verdict.min_wait is not None and schedule.retry_at is not None:
        earliest = now + verdict.min_wait
        if schedule.retry_at < earliest:
            days = max(strategy.retry_in_days, -(-verdict.min_wait.total_seconds() // 86400))
            return (Strategy(action=strategy.action, retry_in_days=int(days), offer=strategy.offer,
                             escalated=strategy.escalated, tone=strategy.tone),
                    Schedule(retry_at=earliest, source="network_rule"))
    return strategy, schedule


def likelihood_for(rule: Rule, prior_failures: int) -> float:
    return round(rule.likelihood_base * LIKELIHOOD_DECAY ** max(0, prior_failures), 4)


def _impact(likelihood: float, *, amount_minor: int | None, mrr_minor: int | None) -> Impact | None:
    if amount_minor is None:
        return None
    yearly_base = mrr_minor if mrr_minor is not None else amount_minor
    return Impact(
        likelihood=likelihood,
        expected_recovered_minor=int(round(amount_minor * likelihood)),
        annual_value_at_risk_minor=12 * yearly_base,
    )


def decide(
    *,
    failure_code: str,
    attempt: int = 1,
    prior_failures: int = 0,
    amount_minor: int | None = None,
    mrr_minor: int | None = None,
    provider_retry_at: datetime | None = None,
    provider_retry_source: str = "provider",
    now: datetime | None = None,
    card_brand: str | None = None,
    network_advice_code: str | None = None,
    network_decline_code: str | None = None,
    table: RuleTable | None = None,
) -> Decision:
    """One decision from `table` (the built-in table when None), then bent to the card
    networks' rules when the card brand and the network's answer are known; pure apart from
    reading the clock when `now` is None. Tone and likelihood always come from the built-in
    row: a tenant version changes what we do, not how likely the money is to come back."""
    if attempt < 1 or prior_failures < 0:
        raise ValueError("attempt must be >= 1 and prior_failures >= 0")
    now = (now or datetime.now(UTC)).astimezone(UTC)
    rule, matched = rule_for(failure_code)
    risk = churn_risk(attempt=attempt, prior_failures=prior_failures)
    table = table or BUILTIN_TABLE
    row = table.rows.get(rule.name) or BUILTIN_TABLE.rows[rule.name]
    strategy = _strategy(rule, row, escalate=row.escalates(risk))
    if row.max_attempts is not None and attempt >= row.max_attempts:
        # The version's own attempt limit: this failure was the last attempt it allows.
        strategy = Strategy(action=strategy.action, retry_in_days=0, offer=strategy.offer,
                            escalated=strategy.escalated, tone=strategy.tone)
        provider_retry_at = None
    likelihood = likelihood_for(rule, prior_failures)
    schedule = _schedule(failure_code=failure_code, strategy=strategy, provider_retry_at=provider_retry_at,
                         provider_retry_source=provider_retry_source, now=now)
    verdict = network_verdict(card_brand=card_brand, network_advice_code=network_advice_code,
                              network_decline_code=network_decline_code, attempt=attempt)
    strategy, schedule = _apply_network(verdict, strategy=strategy, schedule=schedule, now=now)
    return Decision(
        rule_fired=rule.name,
        matched=matched,
        failure_code=failure_code,
        attempt=attempt,
        prior_failures=prior_failures,
        churn_risk=risk,
        strategy=strategy,
        schedule=schedule,
        impact=_impact(likelihood, amount_minor=amount_minor, mrr_minor=mrr_minor),
        rules_version=table.digest,
        likelihood=likelihood,
        network_rules=tuple(verdict.citations()),
        card_brand=(card_brand or "").strip().lower(),
        network_advice_code=(network_advice_code or "").strip(),
        network_decline_code=(network_decline_code or "").strip().upper(),
        rule_version_id=table.version_id,
    )
