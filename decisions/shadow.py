"""Shadow replay: what a candidate rules table would have decided over a tenant's stored window.

Read-only by construction: one aggregate SELECT over the tenant's DecisionRecord rows in the
window, grouped by the decision inputs (a decision is a pure function of them and the table),
then `rules.decide()` once per distinct input tuple with the candidate table. Nothing is
written to any table; a test diffs every table before and after.

What is replayed is what DecisionRecord stores: failure code, attempt, prior failures, card
brand and the network's codes, and whether the billing system had proposed its own retry time
(a schedule source that is a provider's name). The stored answer (action, wait, whether a
retry was proposed) is compared with the candidate's.

Money is reported per currency, never summed across currencies: the stored
expected_recovered_minor and annual_value_at_risk_minor of the decisions that change, grouped
by the row's currency; a row written before the currency was stored gets the currency of the
invoice behind it (the ledger invoice it names, or the invoice of the draft written for it),
and a row whose currency cannot be known is counted under "unknown".

Drafts: a pipeline decision wrote a draft unless its action was `no_email`. The replay joins
each decision to the drafts actually stored and counts those whose candidate answer would not
draft (`drafts_not_written`), and the pipeline decisions that wrote none but would now
(`drafts_added`).

decisions imports no other app's models: the apps below it register the expressions that
reach their tables in the core (`paypilot.shadow_sources.register_currency_source`,
`register_draft_source`, from their AppConfig.ready()).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Count,
    Expression,
    F,
    Q,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from tqdm import tqdm

from decisions.models import DecisionRecord
from decisions.rules import action_drafts, decide, iso_ms
from decisions.tables import RuleTable
from paypilot.models import Tenant
from paypilot.shadow_sources import currency_sources, draft_sources

INPUT_FIELDS = ("failure_code", "attempt", "prior_failures", "card_brand", "network_advice_code",
                "network_decline_code")
# Schedule sources that are PayPilot's own; any other stored source is the billing system's name.
OWN_SCHEDULE_SOURCES = ("paypilot_suggestion", "none", "network_rule")
MAX_DAYS = 366
UNKNOWN_CURRENCY = "unknown"
# A fixed instant for the replay: only whether a retry exists and its wait in days are compared,
# so the clock must not matter.
_REPLAY_NOW = datetime(2000, 1, 3, tzinfo=UTC)

@dataclass
class Money:
    decisions: int = 0
    expected_recovered_minor: int = 0
    annual_value_at_risk_minor: int = 0

    def add(self, n: int, expected: int, at_risk: int) -> None:
        self.decisions += n
        self.expected_recovered_minor += expected
        self.annual_value_at_risk_minor += at_risk

    def as_dict(self) -> dict[str, int]:
        return {"decisions": self.decisions, "expected_recovered_minor": self.expected_recovered_minor,
                "annual_value_at_risk_minor": self.annual_value_at_risk_minor}


def _money_dict(money: dict[str, Money]) -> dict[str, dict[str, int]]:
    """Currencies in order, the unknown bucket last."""
    order = sorted(money, key=lambda c: (c == UNKNOWN_CURRENCY, c))
    return {c: money[c].as_dict() for c in order}


@dataclass
class Transition:
    from_answer: tuple[str, int, bool]  # (action, retry_in_days, retry proposed)
    to_answer: tuple[str, int, bool]
    decisions: int = 0
    drafts_not_written: int = 0
    money: dict[str, Money] = field(default_factory=lambda: defaultdict(Money))

    def as_dict(self) -> dict[str, Any]:
        def answer(a: tuple[str, int, bool]) -> dict[str, Any]:
            return {"action": a[0], "retry_in_days": a[1], "retry": a[2], "drafts": action_drafts(a[0])}

        return {"from": answer(self.from_answer), "to": answer(self.to_answer), "decisions": self.decisions,
                "drafts_not_written": self.drafts_not_written, "money": _money_dict(self.money)}


@dataclass
class CodeSummary:
    decisions: int = 0
    changed: int = 0
    drafts_not_written: int = 0
    drafts_added: int = 0
    transitions: dict[tuple[Any, ...], Transition] = field(default_factory=dict)


@dataclass
class ShadowReport:
    tenant: str
    candidate_version_id: int | None
    candidate_number: int | None
    candidate_digest: str
    days: int
    window_from: datetime
    window_to: datetime
    decisions: int = 0
    changed: int = 0
    retries_forbidden: int = 0  # a retry was proposed; the candidate proposes none
    retries_added: int = 0  # no retry was proposed; the candidate proposes one
    wait_shorter: int = 0  # both retry, the candidate waits fewer days
    wait_longer: int = 0
    drafts_written: int = 0  # decisions in the window with a stored draft
    drafts_not_written: int = 0  # ... whose candidate answer would write none
    drafts_added: int = 0  # pipeline decisions that wrote no draft (no_email) but would now
    pipeline_drafts_changed: int = 0  # decisions with a stored draft whose action changes
    money: dict[str, Money] = field(default_factory=lambda: defaultdict(Money))  # changed decisions, per currency
    input_groups: int = 0
    by_failure_code: dict[str, CodeSummary] = field(default_factory=lambda: defaultdict(CodeSummary))

    def as_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "candidate": {"version_id": self.candidate_version_id, "number": self.candidate_number,
                          "rules_version": self.candidate_digest},
            "window": {"days": self.days, "from": iso_ms(self.window_from), "to": iso_ms(self.window_to)},
            "decisions": self.decisions,
            "changed": self.changed,
            "unchanged": self.decisions - self.changed,
            "retries_forbidden": self.retries_forbidden,
            "retries_added": self.retries_added,
            "wait_shorter": self.wait_shorter,
            "wait_longer": self.wait_longer,
            "drafts_written": self.drafts_written,
            "drafts_not_written": self.drafts_not_written,
            "drafts_added": self.drafts_added,
            "pipeline_drafts_changed": self.pipeline_drafts_changed,
            "money": {
                "by_currency": _money_dict(self.money),
                "note": "stored amounts of the decisions that change, in minor units of each currency, never "
                        "added across currencies; rows whose currency cannot be known are under \"unknown\"",
            },
            "input_groups": self.input_groups,
            "by_failure_code": {
                code: {"decisions": s.decisions, "changed": s.changed, "drafts_not_written": s.drafts_not_written,
                       "drafts_added": s.drafts_added,
                       "transitions": [t.as_dict() for t in sorted(s.transitions.values(),
                                                                    key=lambda t: -t.decisions)]}
                for code, s in sorted(self.by_failure_code.items())
            },
        }


def _currency_expression() -> Expression:
    sources = [source() for source in currency_sources()]
    return Coalesce(F("currency"), *sources, Value(UNKNOWN_CURRENCY), output_field=CharField())


def _drafted_expression() -> Expression:
    if not draft_sources():
        return Value(False, output_field=BooleanField())
    found = Q()
    for source in draft_sources():
        found |= Q(source())
    # Only the pipeline drafts: an API decision is never looked up.
    return Case(When(Q(source=DecisionRecord.Source.PIPELINE) & found, then=Value(True)), default=Value(False),
                output_field=BooleanField())


def _groups(*, tenant: Tenant, since: datetime, until: datetime) -> Any:
    return (
        DecisionRecord.objects.filter(tenant=tenant, decided_at__gte=since, decided_at__lte=until)
        .annotate(
            retried=Case(When(retry_at__isnull=True, then=Value(False)), default=Value(True),
                         output_field=BooleanField()),
            provider_time=Case(When(schedule_source__in=OWN_SCHEDULE_SOURCES, then=Value(False)),
                               default=Value(True), output_field=BooleanField()),
            money_currency=_currency_expression(),
            drafted=_drafted_expression(),
        )
        .values(*INPUT_FIELDS, "action", "retry_in_days", "retried", "provider_time", "money_currency", "drafted")
        .annotate(n=Count("id"), pipeline=Count("id", filter=Q(source=DecisionRecord.Source.PIPELINE)),
                  expected=Sum("expected_recovered_minor"), at_risk=Sum("annual_value_at_risk_minor"))
        .order_by()
    )


def shadow_replay(*, tenant: Tenant, candidate: RuleTable, days: int, now: datetime | None = None,
                  progress: bool = False) -> ShadowReport:
    """Replay `tenant`'s decisions of the last `days` days through `candidate`. Reads only.

    Raises ValueError for a window outside 1..366 days.
    """
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"days must be 1 to {MAX_DAYS}")
    until = (now or datetime.now(UTC)).astimezone(UTC)
    since = until - timedelta(days=days)
    report = ShadowReport(tenant=tenant.slug, candidate_version_id=candidate.version_id,
                          candidate_number=candidate.version_number, candidate_digest=candidate.digest,
                          days=days, window_from=since, window_to=until)
    groups = list(_groups(tenant=tenant, since=since, until=until))
    report.input_groups = len(groups)
    answers: dict[tuple[Any, ...], tuple[str, int, bool]] = {}  # groups differing only in currency/draft
    for g in tqdm(groups, desc="replaying input groups", unit="group", disable=not progress):
        key = tuple(g[f] for f in INPUT_FIELDS) + (g["provider_time"],)
        new_answer = answers.get(key)
        if new_answer is None:
            new = decide(failure_code=g["failure_code"], attempt=max(1, g["attempt"]),
                         prior_failures=g["prior_failures"], card_brand=g["card_brand"] or None,
                         network_advice_code=g["network_advice_code"] or None,
                         network_decline_code=g["network_decline_code"] or None,
                         provider_retry_at=_REPLAY_NOW + timedelta(days=1) if g["provider_time"] else None,
                         now=_REPLAY_NOW, table=candidate)
            new_answer = answers[key] = (new.strategy.action, new.strategy.retry_in_days,
                                         new.schedule.retry_at is not None)
        old_answer = (g["action"], g["retry_in_days"], bool(g["retried"]))
        n = g["n"]
        drafted = n if g["drafted"] else 0
        code = report.by_failure_code[g["failure_code"]]
        report.decisions += n
        code.decisions += n
        report.drafts_written += drafted
        if old_answer == new_answer:
            continue
        report.changed += n
        code.changed += n
        expected, at_risk = g["expected"] or 0, g["at_risk"] or 0
        report.money[g["money_currency"]].add(n, expected, at_risk)
        not_written = drafted if not action_drafts(new_answer[0]) else 0
        report.drafts_not_written += not_written
        code.drafts_not_written += not_written
        if not g["drafted"] and not action_drafts(old_answer[0]) and action_drafts(new_answer[0]):
            report.drafts_added += g["pipeline"]
            code.drafts_added += g["pipeline"]
        if old_answer[0] != new_answer[0]:
            report.pipeline_drafts_changed += drafted
        if old_answer[2] and not new_answer[2]:
            report.retries_forbidden += n
        elif new_answer[2] and not old_answer[2]:
            report.retries_added += n
        elif old_answer[2] and new_answer[2]:
            if new_answer[1] < old_answer[1]:
                report.wait_shorter += n
            elif new_answer[1] > old_answer[1]:
                report.wait_longer += n
        step = code.transitions.setdefault((old_answer, new_answer),
                                           Transition(from_answer=old_answer, to_answer=new_answer))
        step.decisions += n
        step.drafts_not_written += not_written
        step.money[g["money_currency"]].add(n, expected, at_risk)
    return report
