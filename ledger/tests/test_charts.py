"""SVG charts: sample sizes on the rate chart, amounts shown by currency exponent."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ledger.charts import recovery_rate_chart, weekly_amounts_chart
from ledger.selectors import report_compute
from ledger.tests.test_report import row


def test_rate_chart_names_each_arm_with_its_sample_size() -> None:
    report = report_compute([row("treated", recovered=True), row("treated"), row("holdout")])
    svg = str(recovery_rate_chart(report["arms"]))
    ET.fromstring(svg)  # well-formed
    assert "50.0%  (1 of n=2)" in svg
    assert "0.0%  (0 of n=1)" in svg
    assert "no invoices (n=0)" in svg  # untouched: empty arm, no rate drawn


def test_weekly_chart_uses_the_currency_exponent() -> None:
    report = report_compute([row(currency="KWD", amount=12345, recovered=True),
                             row(currency="JPY", amount=1500)])
    kwd = str(weekly_amounts_chart(report["weekly"], "KWD"))
    jpy = str(weekly_amounts_chart(report["weekly"], "JPY"))
    ET.fromstring(kwd)
    assert "failed 12.345 KWD" in kwd and "recovered 12.345 KWD" in kwd
    assert "failed 1,500 JPY" in jpy and "1,500.00" not in jpy
    assert "no invoices yet" in str(weekly_amounts_chart([], "USD"))
