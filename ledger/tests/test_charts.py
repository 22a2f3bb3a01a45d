"""SVG charts: sample sizes on the rate chart, amounts by currency exponent, cohort lift."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import timedelta

from ledger.charts import cohort_lift_chart, recovery_rate_chart, weekly_amounts_chart
from ledger.tests.test_report import NOW, T0, cohort, compute, inv


def test_rate_chart_names_each_arm_with_its_sample_size() -> None:
    report = compute([inv(state="recovered", messaged=True), inv(state="messaged", messaged=True), inv("holdout")])
    svg = str(recovery_rate_chart(report["arms"]))
    ET.fromstring(svg)  # well-formed
    assert "50.0%  (1 of n=2)" in svg
    assert "0.0%  (0 of n=1)" in svg
    assert "no invoices (n=0)" in svg  # untouched: empty subgroup, no rate drawn


def test_weekly_chart_uses_the_currency_exponent() -> None:
    report = compute([inv(currency="KWD", amount=12345, state="recovered"), inv(currency="JPY", amount=1500)])
    kwd = str(weekly_amounts_chart(report["weekly"], "KWD"))
    jpy = str(weekly_amounts_chart(report["weekly"], "JPY"))
    ET.fromstring(kwd)
    assert "failed 12.345 KWD" in kwd and "recovered 12.345 KWD" in kwd
    assert "failed 1,500 JPY" in jpy and "1,500.00" not in jpy
    assert "no invoices yet" in str(weekly_amounts_chart([], "USD"))


def test_cohort_lift_chart_draws_intervals_and_marks_withheld_weeks() -> None:
    young = NOW - timedelta(days=3)
    rows = cohort("treatment", 40, 20) + cohort("holdout", 40, 10) + cohort("treatment", 5, 1, failed_at=young)
    report = compute(rows)
    svg = str(cohort_lift_chart(report["weekly"], overall=report["attribution"]["lift_ci95_pp"]))
    ET.fromstring(svg)
    ci = report["weekly"][0]["lift_ci95_pp"]
    assert f"{T0.date().isoformat()}: 25.0 pp ({ci[0]} to {ci[1]})" in svg
    assert "lift withheld (maturing)" in svg
    assert "no cohorts yet" in str(cohort_lift_chart([], overall=None))
