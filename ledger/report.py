"""The recovery report, computed from rollup cells: pure (no ORM), so the real report, the
public sample and the tests' recomputation share every line of arithmetic.

Headline: the intention-to-treat lift over mature cohorts. Every invoice randomised to the
treatment arm counts, whatever happened to its draft (paid before any send, suppressed, still
awaiting approval), against every invoice randomised to the holdout; an outcome counts only
when it came within the window after the failure, and only cohorts (failure weeks) whose
whole window has passed are compared. See docs/ledger.md for how to read it. The same
report as CSV: `ledger.report_export`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from ledger.money import currency_exponent, format_minor
from ledger.rollup import ROLLUP_DELAY_CAP_HOURS, RollupCell, bucket_width
from ledger.stats import bucket_percentile, invoices_for_half_width, newcombe_interval

ARM_HOLDOUT = "holdout"  # randomised to the holdout: never drafted or messaged
ARM_TREATMENT = "treatment"  # randomised to treatment, whatever happened to its draft
ARM_TREATED = "treated"  # secondary: treatment-arm invoices that really got an email
ARM_UNTOUCHED = "untouched"  # secondary: treatment-arm invoices never sent to
REPORT_ARMS = (ARM_HOLDOUT, ARM_TREATMENT, ARM_TREATED, ARM_UNTOUCHED)
ITT_ARMS = (ARM_HOLDOUT, ARM_TREATMENT)

BASELINE_HOLDOUT = "randomised_holdout"  # a randomised control exists: the lift is causal
BASELINE_NONE = "none"  # no holdout invoices: nothing to attribute against
INTERVAL_METHOD = "newcombe_hybrid_score"  # Newcombe (1998) method 10, from Wilson intervals

# Below this many mature invoices in either arm a rate difference is noise: the lift (and
# every figure derived from it) is withheld, null with a note.
LIFT_MIN_PER_ARM = 30
TARGET_HALF_WIDTH_PP = 5.0  # "how many more weeks to +/- 5 pp"
VOLUME_WEEKS = 4  # recent complete weeks averaged for the current weekly volume

STATE_RECOVERED, STATE_CHURNED, STATE_EXHAUSTED, STATE_VOIDED = "recovered", "churned", "exhausted", "voided"
OPEN_STATES = frozenset({"failed", "messaged", "clicked"})
# What an invoice's row counts as, given the window: the states above, with `recovered`
# split into within the window and after it; failed/messaged/clicked are all "open".
OUTCOME_WITHIN, OUTCOME_LATER, OUTCOME_OPEN = "recovered", "recovered_later", "open"
PERIOD_MATURE, PERIOD_MATURING, PERIOD_BEFORE = "mature", "maturing", "before_holdout"


@dataclass(frozen=True)
class HoldoutInfo:
    """The tenant's holdout as it stands: what the report explains and plans with."""

    pct: int
    start: date | None  # cohorts before this week were not randomised: left out of the lift
    source: str  # "tenant" (set in the admin) or "default" (PAYPILOT_HOLDOUT_PCT)


@dataclass
class _Group:
    """Tallies of one arm (or subgroup) over some cohorts."""

    all_time: bool = False  # True for the totals: recoveries after the window count too
    count: int = 0
    recovered: int = 0  # within the window
    recovered_later: int = 0  # after the window (not an outcome of this cohort's lift)
    churned: int = 0
    exhausted: int = 0
    open: int = 0
    voided: int = 0  # outside every denominator; shown so nothing disappears silently
    delays: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    failed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    recovered_gross: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    refunded: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, outcome: str, currency: str, sums: list[int]) -> None:
        """One aggregate row: `sums` = [invoices, failed, recovered gross, refunded]."""
        n = sums[0]
        if outcome == STATE_VOIDED:
            self.voided += n
            return
        self.count += n
        self.failed[currency] += sums[1]
        if outcome == OUTCOME_WITHIN:
            self.recovered += n
            self.recovered_gross[currency] += sums[2]
            self.refunded[currency] += sums[3]
        elif outcome == OUTCOME_LATER:
            self.recovered_later += n
            if self.all_time:  # the totals count every recovery, whenever it came
                self.recovered += n
                self.recovered_gross[currency] += sums[2]
                self.refunded[currency] += sums[3]
        elif outcome == STATE_CHURNED:
            self.churned += n
        elif outcome == STATE_EXHAUSTED:
            self.exhausted += n
        else:
            self.open += n

    def percentile_hours(self, q: float) -> float | None:
        buckets = [(low, bucket_width(low), n) for low, n in self.delays.items()
                   if low < ROLLUP_DELAY_CAP_HOURS]
        value = bucket_percentile(buckets, q)
        return None if value is None else round(value, 1)

    def as_dict(self) -> dict[str, Any]:
        return {
            "count": self.count, "recovered": self.recovered, "recovered_later": self.recovered_later,
            "churned": self.churned, "exhausted": self.exhausted, "open": self.open, "voided": self.voided,
            "recovery_rate": round(self.recovered / self.count, 4) if self.count else None,
            "median_hours_to_recovery": self.percentile_hours(0.5),
            "p90_hours_to_recovery": self.percentile_hours(0.9),
            "amounts": _amounts(self.failed, self.recovered_gross, self.refunded),
        }


def _amounts(failed: dict[str, int], gross: dict[str, int], refunded: dict[str, int]) -> dict[str, Any]:
    """Per-currency sums in minor units plus display strings; never summed across currencies.
    `recovered_minor` is net of refunds."""
    out: dict[str, dict[str, Any]] = {}
    for code in sorted(set(failed) | set(gross)):
        net = gross.get(code, 0) - refunded.get(code, 0)
        out[code] = {
            "exponent": currency_exponent(code),
            "failed_minor": failed.get(code, 0), "recovered_minor": net,
            "recovered_gross_minor": gross.get(code, 0), "refunded_minor": refunded.get(code, 0),
            "failed": format_minor(failed.get(code, 0), code), "recovered": format_minor(net, code),
        }
    return out


def _pp(value: float) -> float:
    return round(value * 100, 1)


def _lift(treatment: _Group, holdout: _Group) -> tuple[float, tuple[float, float]] | None:
    """(difference, 95% interval) as proportions, or None below the per-arm minimum."""
    if treatment.count < LIFT_MIN_PER_ARM or holdout.count < LIFT_MIN_PER_ARM:
        return None
    difference = treatment.recovered / treatment.count - holdout.recovered / holdout.count
    interval = newcombe_interval(x1=treatment.recovered, n1=treatment.count,
                                 x2=holdout.recovered, n2=holdout.count)
    return difference, interval


def _attributable(lift: tuple[float, tuple[float, float]], treatment: _Group) -> dict[str, Any]:
    """Lift times the treatment arm's failed amount, per currency, never summed across them."""
    difference, (low, high) = lift
    out = {}
    for code, failed in sorted(treatment.failed.items()):
        out[code] = {"minor": round(difference * failed), "ci95_minor": [round(low * failed), round(high * failed)],
                     "treatment_failed_minor": failed, "display": format_minor(round(difference * failed), code)}
    return out


def _attribution(groups: dict[str, _Group]) -> dict[str, Any]:
    treatment, holdout, treated = groups[ARM_TREATMENT], groups[ARM_HOLDOUT], groups[ARM_TREATED]
    result: dict[str, Any] = {
        "baseline": BASELINE_HOLDOUT if holdout.count else BASELINE_NONE,
        "method": INTERVAL_METHOD, "min_per_arm": LIFT_MIN_PER_ARM,
        "treatment_count": treatment.count, "holdout_count": holdout.count,
        "baseline_count": holdout.count, "treated_count": treated.count,
        "treatment_rate": treatment.as_dict()["recovery_rate"], "holdout_rate": holdout.as_dict()["recovery_rate"],
        "lift_pp": None, "lift_ci95_pp": None, "recovered_attributable": None,
        "secondary": None,
    }
    if not holdout.count:
        result["note"] = (
            "Lift withheld: no mature invoice was randomised to the holdout, so recoveries "
            "cannot be attributed to PayPilot. Set a holdout percentage for this tenant in the "
            "admin (or PAYPILOT_HOLDOUT_PCT) to run a randomised comparison.")
        return result
    lift = _lift(treatment, holdout)
    if lift is None:
        result["note"] = (
            f"Lift withheld: both arms need at least {LIFT_MIN_PER_ARM} invoices in mature cohorts "
            f"(treatment {treatment.count}, holdout {holdout.count}); a rate difference on fewer "
            f"is noise, not a result.")
        return result
    difference, (low, high) = lift
    result.update(lift_pp=_pp(difference), lift_ci95_pp=[_pp(low), _pp(high)],
                  recovered_attributable=_attributable(lift, treatment))
    result["note"] = (
        "Intention-to-treat: recovery rate within the window of every invoice randomised to "
        "treatment (sent to or not) minus the holdout's, in percentage points, over mature "
        "cohorts; 95% interval by Newcombe's hybrid score method.")
    result["secondary"] = _secondary(difference, groups)
    return result


def _secondary(itt: float, groups: dict[str, _Group]) -> dict[str, Any]:
    """Labelled secondary figures: never the headline (see docs/ledger.md)."""
    treatment, holdout, treated = groups[ARM_TREATMENT], groups[ARM_HOLDOUT], groups[ARM_TREATED]
    out: dict[str, Any] = {"label": "Secondary figures, not randomised comparisons: read the lift above."}
    per_protocol = _lift(treated, holdout)
    out["per_protocol"] = {
        "lift_pp": _pp(per_protocol[0]) if per_protocol else None,
        "lift_ci95_pp": [_pp(v) for v in per_protocol[1]] if per_protocol else None,
        "treated_count": treated.count,
        "note": ("Invoices actually messaged minus the holdout. Biased: invoices that pay "
                 "before any send leave the messaged group but stay in the holdout."),
    }
    share = treated.count / treatment.count if treatment.count else 0.0
    out["complier"] = {
        "share_messaged": round(share, 4),
        "lift_pp": _pp(itt / share) if share else None,
        "note": ("The lift divided by the share of the treatment arm that was messaged: the "
                 "effect among invoices an email reached, assuming the email is the only way "
                 "PayPilot acts. No interval: the share's own uncertainty is not modelled."),
    }
    return out


def _cohort_entry(week: date, *, mature: bool, in_experiment: bool, groups: dict[str, _Group],
                  totals: _Group) -> dict[str, Any]:
    lift = _lift(groups[ARM_TREATMENT], groups[ARM_HOLDOUT]) if mature and in_experiment else None
    return {
        "week": week.isoformat(), "mature": mature, "in_experiment": in_experiment,
        "arms": {arm: {"count": groups[arm].count, "recovered": groups[arm].recovered} for arm in ITT_ARMS},
        "lift_pp": _pp(lift[0]) if lift else None,
        "lift_ci95_pp": [_pp(v) for v in lift[1]] if lift else None,
        "amounts": _amounts(totals.failed, totals.recovered_gross, totals.refunded),
    }


def _holdout_block(holdout: HoldoutInfo | None, attribution: dict[str, Any], groups: dict[str, _Group],
                   weekly_volume: float, window_days: int) -> dict[str, Any]:
    pct = holdout.pct if holdout else 0
    block: dict[str, Any] = {"pct": pct, "start": holdout.start.isoformat() if holdout and holdout.start else None,
                             "source": holdout.source if holdout else "default",
                             "weekly_volume": round(weekly_volume, 1), "weeks_to_target": None,
                             "target_half_width_pp": TARGET_HALF_WIDTH_PP}
    held = groups[ARM_HOLDOUT]
    cost = "the recoveries dunning would have made on the held-out invoices"
    if attribution["lift_pp"] is not None and held.failed:
        lift = attribution["lift_pp"] / 100
        cost += " (at the measured lift about " + ", ".join(
            f"{code} {format_minor(round(lift * amount), code)}" for code, amount in sorted(held.failed.items())
        ) + " over the mature cohorts)"
    block["cost_note"] = (
        f"Holding out {pct}% of failed invoices costs {cost}; it buys the only comparison that "
        f"makes the lift causal: invoices chosen at random that PayPilot leaves alone.")
    if not 0 < pct < 100:
        block["target_note"] = "Without a holdout between 1% and 99% no interval can narrow."
        return block
    lift_ci = attribution["lift_ci95_pp"]
    if lift_ci is not None and (lift_ci[1] - lift_ci[0]) / 2 <= TARGET_HALF_WIDTH_PP:
        block["weeks_to_target"] = 0
        block["target_note"] = f"The interval is already within +/- {TARGET_HALF_WIDTH_PP:g} pp."
        return block
    if weekly_volume <= 0:
        block["target_note"] = "No recent failed invoices: no volume to project from."
        return block
    rates = [g.recovered / g.count if g.count else 0.5 for g in (groups[ARM_TREATMENT], held)]
    needed = invoices_for_half_width(p_treatment=rates[0], p_holdout=rates[1], holdout_share=pct / 100,
                                     half_width=TARGET_HALF_WIDTH_PP / 100)
    have = groups[ARM_TREATMENT].count + held.count
    # New invoices also need the window (and their week) to pass before they count.
    weeks = math.ceil(max(0.0, needed - have) / weekly_volume) + math.ceil((window_days + 7) / 7)
    block["weeks_to_target"] = weeks
    block["target_note"] = (
        f"At the current volume (about {weekly_volume:.0f} failed invoices a week, {pct}% held out) "
        f"the interval should narrow to +/- {TARGET_HALF_WIDTH_PP:g} pp in about {weeks} more weeks "
        f"(an estimate: about {math.ceil(needed)} mature invoices are needed, {have} are mature now).")
    return block


@dataclass(frozen=True)
class ReportBounds:
    """Which cohort weeks are mature and which were randomised, for one `now`."""

    last_mature_week: date  # weeks up to this Monday have had their whole window
    first_experiment_week: date | None  # weeks before this Monday predate the holdout
    window_hours: int

    def in_experiment(self, week: date) -> bool:
        return self.first_experiment_week is None or week >= self.first_experiment_week

    def period(self, week: date) -> str:
        if week > self.last_mature_week:
            return PERIOD_MATURING
        return PERIOD_MATURE if self.in_experiment(week) else PERIOD_BEFORE

    def outcome(self, state: str, delay_hours: int) -> str:
        if state == STATE_RECOVERED:
            return OUTCOME_WITHIN if delay_hours < self.window_hours else OUTCOME_LATER
        return state if state in (STATE_CHURNED, STATE_EXHAUSTED, STATE_VOIDED) else OUTCOME_OPEN


def report_bounds(*, now: datetime, window_days: int, holdout: HoldoutInfo | None) -> ReportBounds:
    # A cohort is mature when its last day has had the window: week + 7 days + window <= now.
    start = holdout.start if holdout is not None else None
    return ReportBounds(
        last_mature_week=(now - timedelta(days=7 + window_days)).astimezone(UTC).date(),
        first_experiment_week=start - timedelta(days=start.weekday()) if start else None,
        window_hours=window_days * 24,
    )


@dataclass
class ReportAggregates:
    """Everything the report reads, already summed: small whatever the ledger's size. Built
    in SQL from the rollup (`ledger.selectors.report_aggregates`) or in Python from cells
    (`report_aggregate_cells`); the tests hold the two equal."""

    # (period, arm, messaged, outcome, currency) -> [invoices, failed, recovered gross, refunded]
    groups: dict[tuple[str, str, bool, str, str], list[int]] = field(default_factory=dict)
    # (week, arm, outcome, currency) -> the same sums
    weekly: dict[tuple[date, str, str, str], list[int]] = field(default_factory=dict)
    # (arm, messaged, delay_hours) -> invoices: mature cohorts' recoveries within the window
    delays: dict[tuple[str, bool, int], int] = field(default_factory=dict)


def _bump(table: dict, key: tuple, sums: tuple[int, ...]) -> None:  # type: ignore[type-arg]
    row = table.setdefault(key, [0, 0, 0, 0])
    for i, value in enumerate(sums):
        row[i] += value


def report_aggregates_add(agg: ReportAggregates, *, bounds: ReportBounds, week: date, arm: str, messaged: bool,
                          outcome: str, currency: str, sums: Iterable[int]) -> None:
    """Add one (week, arm, messaged, outcome, currency) sum to the groups and the weeks."""
    values = tuple(sums)
    _bump(agg.groups, (bounds.period(week), arm, messaged, outcome, currency), values)
    _bump(agg.weekly, (week, arm, outcome, currency), values)


def report_aggregate_cells(cells: Iterable[RollupCell], *, bounds: ReportBounds) -> ReportAggregates:
    """The aggregates from rollup cells, in Python (the from-scratch path and the sample)."""
    agg = ReportAggregates()
    for cell in cells:
        sums = (cell.invoices, cell.failed_minor, cell.recovered_minor, cell.refunded_minor)
        period, outcome = bounds.period(cell.week), bounds.outcome(cell.state, cell.delay_hours)
        report_aggregates_add(agg, bounds=bounds, week=cell.week, arm=cell.arm, messaged=cell.messaged,
                              outcome=outcome, currency=cell.currency, sums=sums)
        if period == PERIOD_MATURE and outcome == OUTCOME_WITHIN:
            key = (cell.arm, cell.messaged, cell.delay_hours)
            agg.delays[key] = agg.delays.get(key, 0) + cell.invoices
    return agg


def report_compute(cells: Iterable[RollupCell], *, now: datetime, window_days: int,
                   holdout: HoldoutInfo | None = None, sample: bool = False) -> dict[str, Any]:
    """The report from rollup cells (see `report_from_aggregates`)."""
    bounds = report_bounds(now=now, window_days=window_days, holdout=holdout)
    return report_from_aggregates(report_aggregate_cells(cells, bounds=bounds), now=now,
                                  window_days=window_days, holdout=holdout, sample=sample)


def _subgroups(arm: str, messaged: bool) -> tuple[str, ...]:
    if arm == ARM_HOLDOUT:
        return (ARM_HOLDOUT,)
    return (ARM_TREATMENT, ARM_TREATED if messaged else ARM_UNTOUCHED)


def report_from_aggregates(agg: ReportAggregates, *, now: datetime, window_days: int,
                           holdout: HoldoutInfo | None = None, sample: bool = False) -> dict[str, Any]:
    """The report as a JSON-ready dict (shape in docs/ledger.md)."""
    bounds = report_bounds(now=now, window_days=window_days, holdout=holdout)
    mature = {arm: _Group() for arm in REPORT_ARMS}
    maturing = {arm: _Group() for arm in ITT_ARMS}
    before = _Group()  # mature cohorts from before the holdout started
    totals = _Group(all_time=True)
    for (period, arm, messaged, outcome, currency), sums in agg.groups.items():
        totals.add(outcome, currency, sums)
        if period == PERIOD_MATURING:
            maturing[_subgroups(arm, messaged)[0]].add(outcome, currency, sums)
        elif period == PERIOD_BEFORE:
            before.add(outcome, currency, sums)
        else:
            for group in _subgroups(arm, messaged):
                mature[group].add(outcome, currency, sums)
    for (arm, messaged, delay), n in agg.delays.items():
        for group in _subgroups(arm, messaged):
            mature[group].delays[delay] += n
    weeks: dict[date, dict[str, _Group]] = defaultdict(lambda: {arm: _Group() for arm in ITT_ARMS})
    week_totals: dict[date, _Group] = defaultdict(lambda: _Group(all_time=True))
    for (week, arm, outcome, currency), sums in agg.weekly.items():
        weeks[week][ARM_HOLDOUT if arm == ARM_HOLDOUT else ARM_TREATMENT].add(outcome, currency, sums)
        week_totals[week].add(outcome, currency, sums)
    attribution = _attribution(mature)
    this_week = now.date() - timedelta(days=now.date().weekday())
    recent_weeks = [this_week - timedelta(days=7 * i) for i in range(1, VOLUME_WEEKS + 1)]
    recent = [week_totals[week].count for week in recent_weeks if week in week_totals]
    cohorts = [
        _cohort_entry(week, mature=week <= bounds.last_mature_week, in_experiment=bounds.in_experiment(week),
                      groups=weeks[week], totals=week_totals[week])
        for week in sorted(weeks)
    ]
    totals_dict = totals.as_dict()
    return {
        "sample": sample,
        "generated_at": now.isoformat(),
        "window_days": window_days,
        "arms": {arm: group.as_dict() for arm, group in mature.items()},
        "maturing": {
            "count": sum(g.count for g in maturing.values()),
            "by_arm": {arm: g.count for arm, g in maturing.items()},
            "note": (f"Invoices from cohorts whose {window_days}-day window has not yet passed: "
                     f"counted here and in the totals, left out of the lift."),
        },
        "before_holdout": {"count": before.count},
        "totals": totals_dict,
        "attribution": attribution,
        "time_to_recovery": {
            arm: {"recovered": mature[arm].recovered, "median_hours": mature[arm].percentile_hours(0.5),
                  "p90_hours": mature[arm].percentile_hours(0.9)}
            for arm in ITT_ARMS
        },
        "holdout": _holdout_block(holdout, attribution, mature, sum(recent) / VOLUME_WEEKS, window_days),
        "weekly": cohorts,
    }
