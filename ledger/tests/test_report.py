"""The report computation: intention-to-treat lift and its interval, mature cohorts, withheld
lift, voided and refunds, currencies, time to recovery, holdout planning, CSV."""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from ledger.report import (
    BASELINE_HOLDOUT,
    BASELINE_NONE,
    INTERVAL_METHOD,
    HoldoutInfo,
    report_compute,
)
from ledger.report_export import report_csv
from ledger.rollup import rollup_cells_recompute
from ledger.stats import newcombe_interval

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # a Monday
NOW = datetime(2026, 9, 1, tzinfo=UTC)  # every June cohort is mature with a 30-day window


def inv(arm: str = "treatment", *, state: str = "failed", messaged: bool = False, amount: int = 1000,
        currency: str = "USD", failed_at: datetime = T0, hours: float = 10.0, refunded: int = 0) -> dict[str, Any]:
    recovered = state == "recovered"
    return {"arm": arm, "state": state, "currency": currency, "failed_at": failed_at,
            "first_messaged_at": failed_at + timedelta(hours=1) if messaged else None,
            "recovered_at": failed_at + timedelta(hours=hours) if recovered else None,
            "amount_minor": amount, "recovered_minor": amount if recovered else 0, "refunded_minor": refunded}


def compute(rows: list[dict[str, Any]], *, now: datetime = NOW, window_days: int = 30,
            holdout: HoldoutInfo | None = None) -> dict[str, Any]:
    return report_compute(rollup_cells_recompute(rows), now=now, window_days=window_days, holdout=holdout)


def cohort(arm: str, n: int, recovered: int, **kw: Any) -> list[dict[str, Any]]:
    return [inv(arm, state="recovered" if i < recovered else "failed", **kw) for i in range(n)]


def issue_cohort() -> list[dict[str, Any]]:
    """Issue 12: 2,000 per arm; treatment recovers 42%, holdout 30%; a quarter of the
    treatment arm (500) pays before any send, so only 340 of the 1,500 messaged recover."""
    treatment = ([inv(state="recovered", hours=5) for _ in range(500)]  # self-cure, never messaged
                 + [inv(state="recovered", messaged=True, hours=72) for _ in range(340)]
                 + [inv(state="messaged", messaged=True) for _ in range(1160)])
    holdout = [inv("holdout", state="recovered", hours=30) for _ in range(600)] + cohort("holdout", 1400, 0)
    return treatment + holdout


def test_issue_cohort_gives_the_intention_to_treat_lift_with_an_interval_around_it() -> None:
    report = compute(issue_cohort())
    a = report["attribution"]
    realised = (840 / 2000 - 600 / 2000) * 100  # 12.0 pp
    assert a["baseline"] == BASELINE_HOLDOUT and a["method"] == INTERVAL_METHOD
    assert a["treatment_count"] == 2000 and a["holdout_count"] == 2000
    assert a["lift_pp"] == pytest.approx(realised, abs=0.05)
    low, high = a["lift_ci95_pp"]
    assert low < realised < high
    expected = newcombe_interval(x1=840, n1=2000, x2=600, n2=2000)
    assert [low, high] == [round(expected[0] * 100, 1), round(expected[1] * 100, 1)]
    assert 8.5 < low < 9.5 and 14.5 < high < 15.5  # about +/- 3 pp at 2,000 per arm
    # The old treated-vs-holdout figure survives only as a labelled secondary number.
    per_protocol = a["secondary"]["per_protocol"]
    assert per_protocol["lift_pp"] == pytest.approx((340 / 1500 - 0.30) * 100, abs=0.05)  # -7.3
    assert a["secondary"]["complier"]["share_messaged"] == 0.75
    assert a["secondary"]["complier"]["lift_pp"] == pytest.approx(16.0, abs=0.05)


def test_lift_is_withheld_at_29_per_arm_and_given_at_30() -> None:
    at_29 = compute(cohort("treatment", 29, 15) + cohort("holdout", 29, 6))["attribution"]
    assert at_29["lift_pp"] is None and at_29["lift_ci95_pp"] is None
    assert at_29["recovered_attributable"] is None
    assert "withheld" in at_29["note"].lower() and "30" in at_29["note"]
    at_30 = compute(cohort("treatment", 30, 15) + cohort("holdout", 30, 6))["attribution"]
    assert at_30["lift_pp"] == pytest.approx(30.0)  # 50% - 20%
    assert at_30["lift_ci95_pp"][0] < 30.0 < at_30["lift_ci95_pp"][1]
    assert "withheld" not in at_30["note"].lower()
    one_arm = compute(cohort("treatment", 200, 100) + cohort("holdout", 29, 5))["attribution"]
    assert one_arm["lift_pp"] is None


def test_no_holdout_means_no_lift_and_says_so() -> None:
    report = compute(cohort("treatment", 300, 100, messaged=True) + cohort("treatment", 300, 10))
    assert report["attribution"]["baseline"] == BASELINE_NONE
    assert report["attribution"]["lift_pp"] is None
    assert "holdout" in report["attribution"]["note"].lower()
    assert report["arms"]["holdout"]["recovery_rate"] is None  # empty arm: null, not 0


def test_a_surge_of_young_failures_is_maturing_and_leaves_the_lift_alone() -> None:
    mature = cohort("treatment", 100, 40) + cohort("holdout", 100, 30)
    young = NOW - timedelta(days=10)
    surge = cohort("treatment", 500, 0, failed_at=young) + cohort("holdout", 50, 0, failed_at=young)
    base, with_surge = compute(mature), compute(mature + surge)
    assert with_surge["attribution"]["lift_pp"] == base["attribution"]["lift_pp"] == 10.0
    assert with_surge["maturing"]["count"] == 550
    assert with_surge["maturing"]["by_arm"] == {"holdout": 50, "treatment": 500}
    assert with_surge["totals"]["count"] == 750  # still in the totals
    weeks = {w["week"]: w for w in with_surge["weekly"]}
    assert weeks["2026-06-01"]["mature"] and weeks["2026-06-01"]["lift_pp"] == 10.0
    young_week = [w for w in weeks.values() if not w["mature"]]
    assert young_week and all(w["lift_pp"] is None for w in young_week)


def test_a_cohort_matures_when_its_last_day_has_had_the_window() -> None:
    rows = cohort("treatment", 40, 20) + cohort("holdout", 40, 10)  # week of 2026-06-01
    just_before = datetime(2026, 7, 8, tzinfo=UTC) - timedelta(seconds=1)  # 2026-06-08 + 30 days
    assert compute(rows, now=just_before)["attribution"]["treatment_count"] == 0
    assert compute(rows, now=just_before + timedelta(seconds=1))["attribution"]["treatment_count"] == 40


def test_recoveries_after_the_window_are_not_outcomes() -> None:
    rows = (cohort("treatment", 40, 20, hours=24 * 29) + cohort("treatment", 10, 10, hours=24 * 31)
            + cohort("holdout", 50, 10))
    arm = compute(rows)["arms"]["treatment"]
    assert (arm["count"], arm["recovered"], arm["recovered_later"]) == (50, 20, 10)
    assert compute(rows, window_days=60)["arms"]["treatment"]["recovered"] == 30


def test_voided_invoices_leave_every_denominator_and_refunds_net_recovered() -> None:
    rows = (cohort("treatment", 40, 20, amount=1000) + cohort("holdout", 40, 10)
            + [inv(state="voided", amount=99999) for _ in range(25)]
            + [inv(state="recovered", amount=5000, refunded=2000)])
    report = compute(rows)
    treatment = report["arms"]["treatment"]
    assert treatment["count"] == 41 and treatment["voided"] == 25
    assert treatment["recovery_rate"] == round(21 / 41, 4)
    usd = treatment["amounts"]["USD"]
    assert usd["failed_minor"] == 40 * 1000 + 5000  # the voided amounts are not owed
    assert (usd["recovered_gross_minor"], usd["refunded_minor"], usd["recovered_minor"]) == (25000, 2000, 23000)
    assert report["totals"]["voided"] == 25 and report["totals"]["count"] == 81


def test_currencies_are_never_added_and_attribution_is_per_currency() -> None:
    rows = (cohort("treatment", 40, 20, currency="JPY", amount=3000) + cohort("treatment", 40, 20, currency="USD")
            + cohort("holdout", 80, 20, currency="KWD", amount=12345))
    report = compute(rows)
    amounts = report["totals"]["amounts"]
    assert set(amounts) == {"JPY", "USD", "KWD"}
    assert (amounts["JPY"]["failed_minor"], amounts["JPY"]["failed"]) == (120000, "120,000")
    assert (amounts["USD"]["failed"], amounts["KWD"]["failed"]) == ("400.00", "987.600")
    assert [amounts[c]["exponent"] for c in ("JPY", "USD", "KWD")] == [0, 2, 3]
    a = report["attribution"]
    assert a["lift_pp"] == 25.0
    attributable = a["recovered_attributable"]
    assert set(attributable) == {"JPY", "USD"}  # the treatment arm's currencies, each alone
    assert attributable["JPY"]["minor"] == 30000 and attributable["USD"]["minor"] == 10000
    low, high = a["lift_ci95_pp"]
    assert attributable["JPY"]["ci95_minor"][0] == pytest.approx(low / 100 * 120000, abs=60)
    assert attributable["USD"]["ci95_minor"][1] == pytest.approx(high / 100 * 40000, abs=20)


def test_time_to_recovery_per_arm_is_median_and_p90_of_provider_delays() -> None:
    treatment = [inv(state="recovered", hours=h) for h in (1.5, 5.5, 10.5, 20.5, 100, 200, 300, 400, 500, 600)]
    holdout = [inv("holdout", state="recovered", hours=h) for h in (30.5, 40.5, 50.5)]
    ttr = compute(treatment + holdout)["time_to_recovery"]
    assert ttr["treatment"]["recovered"] == 10
    assert 20 < ttr["treatment"]["median_hours"] <= 120  # between the 5th and 6th delay
    assert 480 <= ttr["treatment"]["p90_hours"] <= 504  # the 9th delay's day bucket
    assert 40 <= ttr["holdout"]["median_hours"] <= 41
    empty = compute(cohort("holdout", 3, 0))["time_to_recovery"]["treatment"]
    assert empty == {"recovered": 0, "median_hours": None, "p90_hours": None}


def test_cohorts_before_the_holdout_started_are_left_out_of_the_lift() -> None:
    before = cohort("treatment", 500, 100, failed_at=T0)  # all treatment: nothing randomised yet
    after = (cohort("treatment", 60, 30, failed_at=T0 + timedelta(days=14))
             + cohort("holdout", 60, 15, failed_at=T0 + timedelta(days=14)))
    holdout = HoldoutInfo(pct=50, start=date(2026, 6, 15), source="tenant")
    report = compute(before + after, holdout=holdout)
    assert report["before_holdout"]["count"] == 500
    assert report["attribution"]["treatment_count"] == 60 and report["attribution"]["lift_pp"] == 25.0
    assert report["holdout"]["start"] == "2026-06-15" and report["holdout"]["source"] == "tenant"


def test_holdout_block_explains_cost_and_weeks_to_five_points() -> None:
    holdout = HoldoutInfo(pct=20, start=None, source="tenant")
    weeks = [T0 + timedelta(days=7 * i) for i in range(12)]
    rows = [row for w in weeks
            for row in cohort("treatment", 40, 16, failed_at=w) + cohort("holdout", 10, 3, failed_at=w)]
    block = compute(rows, now=T0 + timedelta(days=7 * 12), holdout=holdout)["holdout"]
    assert block["pct"] == 20 and block["weekly_volume"] == 50.0
    assert "Holding out 20%" in block["cost_note"] and "causal" in block["cost_note"]
    assert block["weeks_to_target"] > 0 and "+/- 5 pp" in block["target_note"]
    big = compute(issue_cohort() * 4, holdout=HoldoutInfo(pct=50, start=None, source="tenant"))["holdout"]
    assert big["weeks_to_target"] == 0  # 8,000 per arm: already within +/- 5 pp
    none = compute(rows, holdout=HoldoutInfo(pct=0, start=None, source="default"))["holdout"]
    assert none["weeks_to_target"] is None and "no interval can narrow" in none["target_note"].lower()


def test_csv_has_arms_currencies_attribution_and_weekly_cohorts() -> None:
    rows = cohort("treatment", 40, 20, currency="JPY", amount=3000) + cohort("holdout", 40, 10)
    lines = list(csv.DictReader(io.StringIO(report_csv(compute(rows)))))
    sections = {line["section"] for line in lines}
    assert sections == {"arm", "currency", "attribution", "cohort"}
    treatment = next(r for r in lines if r["section"] == "arm" and r["arm"] == "treatment")
    assert (treatment["invoices"], treatment["recovered"], treatment["recovery_rate"]) == ("40", "20", "0.5")
    lift = next(r for r in lines if r["section"] == "attribution" and not r["currency"])
    assert lift["lift_pp"] == "25.0" and float(lift["lift_ci95_low_pp"]) < 25.0
    jpy = next(r for r in lines if r["section"] == "attribution" and r["currency"] == "JPY")
    assert jpy["attributable_minor"] == "30000"
    cohort_rows = [r for r in lines if r["section"] == "cohort" and r["week"] == "2026-06-01"]
    assert {r["arm"] for r in cohort_rows} >= {"holdout", "treatment", "treatment-holdout"}
    assert not any(r["currency"] == "USD" and r["section"] == "attribution" for r in lines)
