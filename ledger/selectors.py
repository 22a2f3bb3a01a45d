"""Ledger reads: the honest recovery report (three arms, baseline, withheld lift) and its sample.

`report_compute()` is pure over `ReportRow`s, so the real report (`report_build`) and the
public sample (`report_sample`, a fixed invented cohort) share every line of arithmetic
while the sample never touches the database.
"""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.utils import timezone

from ledger.models import Invoice
from ledger.money import currency_exponent, format_minor
from paypilot.models import Tenant

ARM_HOLDOUT = "holdout"  # randomly withheld from dunning
ARM_TREATED = "treated"  # treatment arm with at least one real send
ARM_UNTOUCHED = "untouched"  # treatment arm never really sent to (dry run, suppressed, pending)
REPORT_ARMS = (ARM_HOLDOUT, ARM_TREATED, ARM_UNTOUCHED)

BASELINE_HOLDOUT = "randomised_holdout"  # a randomised control exists: lift is causal
BASELINE_UNTOUCHED = "observational_untouched"  # only unsent invoices to compare: not causal
BASELINE_NONE = "none"  # nothing to compare against

# Below this many invoices in either compared arm a rate difference is noise, so the lift
# is withheld (null) with a note rather than printed as a confident percentage.
LIFT_MIN_PER_ARM = 30


@dataclass(frozen=True)
class ReportRow:
    """What the report needs from one invoice: no ids, names or emails."""

    arm: str  # Invoice.Arm value
    state: str  # Invoice.State value
    messaged: bool  # at least one real send
    amount_minor: int
    recovered_minor: int
    currency: str
    failed_at: datetime
    recovered_at: datetime | None


def report_arm_of(row: ReportRow) -> str:
    if row.arm == Invoice.Arm.HOLDOUT:
        return ARM_HOLDOUT
    return ARM_TREATED if row.messaged else ARM_UNTOUCHED


def _rate(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def _week_start(moment: datetime) -> date:
    day = moment.astimezone(UTC).date()
    return day - timedelta(days=day.weekday())


def _amounts(failed: dict[str, int], recovered: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Per-currency sums in minor units plus display strings; never summed across currencies."""
    out: dict[str, dict[str, Any]] = {}
    for code in sorted(set(failed) | set(recovered)):
        out[code] = {
            "exponent": currency_exponent(code),
            "failed_minor": failed.get(code, 0),
            "recovered_minor": recovered.get(code, 0),
            "failed": format_minor(failed.get(code, 0), code),
            "recovered": format_minor(recovered.get(code, 0), code),
        }
    return out


class _Tally:
    def __init__(self) -> None:
        self.count = 0
        self.states: dict[str, int] = defaultdict(int)
        self.hours: list[float] = []
        self.failed: dict[str, int] = defaultdict(int)
        self.recovered: dict[str, int] = defaultdict(int)

    def add(self, row: ReportRow) -> None:
        self.count += 1
        self.states[row.state] += 1
        self.failed[row.currency] += row.amount_minor
        if row.state == Invoice.State.RECOVERED:
            self.recovered[row.currency] += row.recovered_minor
            if row.recovered_at is not None:
                self.hours.append((row.recovered_at - row.failed_at).total_seconds() / 3600)

    def as_dict(self) -> dict[str, Any]:
        recovered = self.states[Invoice.State.RECOVERED]
        return {
            "count": self.count,
            "recovered": recovered,
            "churned": self.states[Invoice.State.CHURNED],
            "exhausted": self.states[Invoice.State.EXHAUSTED],
            "open": sum(self.states[s] for s in Invoice.OPEN_STATES),
            "recovery_rate": _rate(recovered, self.count),
            "median_hours_to_recovery": round(statistics.median(self.hours), 1) if self.hours else None,
            "amounts": _amounts(self.failed, self.recovered),
        }


def _attribution(arms: dict[str, dict[str, Any]]) -> dict[str, Any]:
    treated = arms[ARM_TREATED]
    if arms[ARM_HOLDOUT]["count"]:
        kind, baseline = BASELINE_HOLDOUT, arms[ARM_HOLDOUT]
    elif arms[ARM_UNTOUCHED]["count"]:
        kind, baseline = BASELINE_UNTOUCHED, arms[ARM_UNTOUCHED]
    else:
        kind, baseline = BASELINE_NONE, None
    result: dict[str, Any] = {
        "baseline": kind,
        "treated_count": treated["count"],
        "baseline_count": baseline["count"] if baseline else 0,
        "min_per_arm": LIFT_MIN_PER_ARM,
        "lift_pp": None,
    }
    if baseline is None:
        result["note"] = (
            "Lift withheld: there is no comparison arm (no holdout and no untouched invoices), "
            "so recoveries cannot be attributed to PayPilot. Set PAYPILOT_HOLDOUT_PCT to run "
            "a randomised holdout."
        )
        return result
    if treated["count"] < LIFT_MIN_PER_ARM or baseline["count"] < LIFT_MIN_PER_ARM:
        result["note"] = (
            f"Lift withheld: both the treated arm and the baseline arm need at least "
            f"{LIFT_MIN_PER_ARM} invoices (treated {treated['count']}, baseline "
            f"{baseline['count']}); a rate difference on fewer is noise, not a result."
        )
        return result
    lift = (treated["recovery_rate"] - baseline["recovery_rate"]) * 100
    result["lift_pp"] = round(lift, 1)
    if kind == BASELINE_HOLDOUT:
        result["note"] = (
            "Treated recovery rate minus the randomised holdout's, in percentage points."
        )
    else:
        result["note"] = (
            "Observational: untouched invoices were not chosen at random (dry runs, suppressed "
            "sends), so this difference is a comparison, not a measured effect."
        )
    return result


def report_compute(rows: Iterable[ReportRow], *, sample: bool = False,
                   now: datetime | None = None) -> dict[str, Any]:
    """The report as a JSON-ready dict (see docs/ledger.md for its shape)."""
    tallies = {arm: _Tally() for arm in REPORT_ARMS}
    total = _Tally()
    weekly_failed: dict[date, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    weekly_recovered: dict[date, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        tallies[report_arm_of(row)].add(row)
        total.add(row)
        weekly_failed[_week_start(row.failed_at)][row.currency] += row.amount_minor
        if row.state == Invoice.State.RECOVERED and row.recovered_at is not None:
            weekly_recovered[_week_start(row.recovered_at)][row.currency] += row.recovered_minor
    arms = {arm: tally.as_dict() for arm, tally in tallies.items()}
    weeks = sorted(set(weekly_failed) | set(weekly_recovered))
    return {
        "sample": sample,
        "generated_at": (now or timezone.now()).isoformat(),
        "arms": arms,
        "totals": total.as_dict(),
        "attribution": _attribution(arms),
        "weekly": [
            {"week": week.isoformat(),
             "amounts": _amounts(weekly_failed.get(week, {}), weekly_recovered.get(week, {}))}
            for week in weeks
        ],
    }


def report_rows_for(*, tenant: Tenant) -> Iterable[ReportRow]:
    fields = ("arm", "state", "first_messaged_at", "amount_minor", "recovered_minor",
              "currency", "failed_at", "recovered_at")
    for arm, state, messaged_at, amount, recovered, currency, failed_at, recovered_at in (
        Invoice.objects.filter(tenant=tenant).values_list(*fields).iterator(chunk_size=2000)
    ):
        yield ReportRow(arm=arm, state=state, messaged=messaged_at is not None,
                        amount_minor=amount, recovered_minor=recovered, currency=currency,
                        failed_at=failed_at, recovered_at=recovered_at)


def report_build(*, tenant: Tenant, now: datetime | None = None) -> dict[str, Any]:
    """The real report for one tenant."""
    report = report_compute(report_rows_for(tenant=tenant), now=now)
    report["tenant"] = tenant.slug
    return report


# --- the public sample: a fixed, invented cohort ----------------------------------------------

SAMPLE_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # a Monday
SAMPLE_SEED = 20260105
# (report arm, invoices, recovery probability): invented numbers, chosen to look like a
# plausible cohort; they are not measurements of anything.
SAMPLE_COHORT = ((ARM_HOLDOUT, 40, 0.30), (ARM_TREATED, 72, 0.55), (ARM_UNTOUCHED, 12, 0.25))
SAMPLE_CURRENCIES = (("USD", (2900, 4900, 14900, 29900)), ("EUR", (1900, 9900)), ("JPY", (3000, 12000)))


def report_sample_rows() -> list[ReportRow]:
    rng = random.Random(SAMPLE_SEED)  # seeded: the same cohort on every request and restart
    rows: list[ReportRow] = []
    for arm, count, p_recover in SAMPLE_COHORT:
        for _ in range(count):
            currency, amounts = rng.choice(SAMPLE_CURRENCIES)
            amount = rng.choice(amounts)
            failed_at = SAMPLE_START + timedelta(hours=rng.randrange(0, 24 * 7 * 8))
            roll = rng.random()
            if roll < p_recover:
                state = Invoice.State.RECOVERED
            else:
                state = rng.choice([Invoice.State.CHURNED, Invoice.State.EXHAUSTED,
                                    Invoice.State.FAILED])
            if state == Invoice.State.FAILED and arm == ARM_TREATED:
                state = Invoice.State.MESSAGED
            recovered_at = (failed_at + timedelta(hours=rng.randrange(2, 24 * 14))
                            if state == Invoice.State.RECOVERED else None)
            rows.append(ReportRow(
                arm=Invoice.Arm.HOLDOUT if arm == ARM_HOLDOUT else Invoice.Arm.TREATMENT,
                state=state, messaged=arm == ARM_TREATED, amount_minor=amount,
                recovered_minor=amount if recovered_at else 0, currency=currency,
                failed_at=failed_at, recovered_at=recovered_at,
            ))
    return rows


def report_sample() -> dict[str, Any]:
    """The sample report: invented data, labelled as such; never reads the ledger."""
    report = report_compute(report_sample_rows(), sample=True, now=datetime(2026, 3, 9, tzinfo=UTC))
    report["tenant"] = None
    report["label"] = "Sample data: an invented cohort, not any tenant's ledger."
    return report
