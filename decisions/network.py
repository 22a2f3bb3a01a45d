"""Card-network retry rules as data, and the pure check that applies them to one decision.

The table is `decisions/data/network_rules.csv`: one row per rule with the network, the
signal it reads (the network's decline code, its Merchant Advice Code, or any decline at
all), the effect (never retry, update the card first, wait at least, at most N attempts in a
window), a one-line summary in our words, and where it comes from with how sure that source
is. Sources were looked up for this table (processor, acquirer and gateway documentation that
republishes the networks' rules, which the networks sell rather than publish); `confidence`
is "high" where two such sources agree and "medium" where one guide is all there is.
`rules.decide()` applies them after the strategy table, so no row of that table can loosen them.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType

DATA = Path(__file__).resolve().parent / "data" / "network_rules.csv"

NEVER_RETRY = "never_retry"  # no further attempt on these credentials
UPDATE_REQUIRED = "update_required"  # only after the card details change
MIN_WAIT = "min_wait"  # not before `wait_hours` have passed
MAX_ATTEMPTS = "max_attempts"  # at most `max_attempts` in `window_days`
EFFECTS = (NEVER_RETRY, UPDATE_REQUIRED, MIN_WAIT, MAX_ATTEMPTS)
SIGNALS = ("network_decline_code", "network_advice_code", "declined")
NETWORKS = ("visa", "mastercard")
CONFIDENCE = ("high", "medium")
# Card brands as providers spell them -> the network whose rules apply.
BRANDS: Mapping[str, str] = MappingProxyType({
    "visa": "visa", "mastercard": "mastercard", "master": "mastercard", "mc": "mastercard",
    "master_card": "mastercard",
})


class NetworkTableError(ValueError):
    """The network rules file is inconsistent; raised at import, so a bad table never serves."""


@dataclass(frozen=True)
class NetworkRule:
    rule_id: str
    network: str
    signal: str
    values: frozenset[str]  # empty for the "declined" signal: every decline
    effect: str
    wait_hours: int | None
    max_attempts: int | None
    window_days: int | None
    summary: str
    source: str
    source_url: str
    confidence: str

    def citation(self) -> dict[str, str]:
        return {"rule_id": self.rule_id, "effect": self.effect, "summary": self.summary,
                "source": self.source, "source_url": self.source_url, "confidence": self.confidence}


def _int(text: str) -> int | None:
    return int(text) if text.strip() else None


def _load(path: Path = DATA) -> tuple[NetworkRule, ...]:
    rules: list[NetworkRule] = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            rule = NetworkRule(
                rule_id=row["rule_id"], network=row["network"], signal=row["signal"],
                values=frozenset() if row["values"] == "*" else frozenset(row["values"].split("|")),
                effect=row["effect"], wait_hours=_int(row["wait_hours"]), max_attempts=_int(row["max_attempts"]),
                window_days=_int(row["window_days"]), summary=row["summary"], source=row["source"],
                source_url=row["source_url"], confidence=row["confidence"],
            )
            problems = [
                name for name, ok in (
                    ("network", rule.network in NETWORKS), ("signal", rule.signal in SIGNALS),
                    ("effect", rule.effect in EFFECTS), ("confidence", rule.confidence in CONFIDENCE),
                    ("source", bool(rule.source and rule.source_url.startswith("https://"))),
                    ("wait_hours", (rule.wait_hours or 0) > 0 if rule.effect == MIN_WAIT else rule.wait_hours is None),
                    ("max_attempts", bool(rule.max_attempts and rule.window_days) if rule.effect == MAX_ATTEMPTS
                     else rule.max_attempts is None),
                    ("values", (not rule.values) == (rule.signal == "declined")),
                ) if not ok
            ]
            if problems:
                raise NetworkTableError(f"network rule {rule.rule_id}: bad {', '.join(problems)}")
            rules.append(rule)
    if len({rule.rule_id for rule in rules}) != len(rules):
        raise NetworkTableError("network rules: duplicate rule_id")
    return tuple(rules)


NETWORK_RULES: tuple[NetworkRule, ...] = _load()


def network_of(card_brand: str | None) -> str | None:
    return BRANDS.get((card_brand or "").strip().lower().replace(" ", "_"))


@dataclass(frozen=True)
class NetworkVerdict:
    """What the network rules allow for the next attempt, and which rules said so."""

    never_retry: bool  # never again on these credentials
    update_required: bool  # only after the card details change
    min_wait: timedelta | None  # the earliest next attempt, counted from now
    attempts_exhausted: bool  # the window's attempt limit is already used up
    rules: tuple[NetworkRule, ...]

    @property
    def forbids_retry(self) -> bool:
        return self.never_retry or self.update_required or self.attempts_exhausted

    def citations(self) -> list[dict[str, str]]:
        return [rule.citation() for rule in self.rules]


def network_verdict(*, card_brand: str | None = None, network_advice_code: str | None = None,
                    network_decline_code: str | None = None, attempt: int = 1,
                    rules: Sequence[NetworkRule] = NETWORK_RULES) -> NetworkVerdict:
    """The rules that fire for one declined attempt (`attempt` attempts so far, this one
    included). A network's rules apply only when the card brand is known to be its own."""
    network = network_of(card_brand)
    signals = {
        "network_decline_code": (network_decline_code or "").strip().upper(),
        "network_advice_code": (network_advice_code or "").strip(),
    }
    fired: list[NetworkRule] = []
    for rule in rules:
        if rule.network != network:
            continue
        if rule.signal == "declined":
            if rule.max_attempts is not None and attempt >= rule.max_attempts + 1:
                fired.append(rule)
            continue
        value = signals[rule.signal]
        if value and (value in rule.values or value.lstrip("0") in {v.lstrip("0") for v in rule.values}):
            fired.append(rule)
    waits = [rule.wait_hours for rule in fired if rule.effect == MIN_WAIT and rule.wait_hours]
    return NetworkVerdict(
        never_retry=any(rule.effect == NEVER_RETRY for rule in fired),
        update_required=any(rule.effect == UPDATE_REQUIRED for rule in fired),
        min_wait=timedelta(hours=max(waits)) if waits else None,
        attempts_exhausted=any(rule.effect == MAX_ATTEMPTS for rule in fired),
        rules=tuple(fired),
    )
