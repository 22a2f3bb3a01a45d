"""The report selector: arms, empty arms, withheld lift, per-currency sums and display."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ledger.models import Invoice
from ledger.selectors import (
    BASELINE_HOLDOUT,
    BASELINE_NONE,
    BASELINE_UNTOUCHED,
    ReportRow,
    report_build,
    report_compute,
)
from ledger.services import invoice_mark_messaged, invoice_record_payment, invoice_transition
from ledger.tests.factories import InvoiceFactory

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # a Monday


def row(arm: str = "treated", *, recovered: bool = False, state: str | None = None,
        amount: int = 1000, currency: str = "USD", hours: float = 10.0) -> ReportRow:
    state = state or ("recovered" if recovered else ("messaged" if arm == "treated" else "failed"))
    recovered_at = T0 + timedelta(hours=hours) if state == "recovered" else None
    return ReportRow(
        arm="holdout" if arm == "holdout" else "treatment", state=state, messaged=arm == "treated",
        amount_minor=amount, recovered_minor=amount if recovered_at else 0, currency=currency,
        failed_at=T0, recovered_at=recovered_at,
    )


def cohort(arm: str, n: int, recovered: int) -> list[ReportRow]:
    return [row(arm, recovered=i < recovered) for i in range(n)]


def test_lift_is_withheld_at_29_per_arm_and_given_at_30() -> None:
    at_29 = report_compute(cohort("treated", 29, 15) + cohort("holdout", 29, 6))
    assert at_29["attribution"]["baseline"] == BASELINE_HOLDOUT
    assert at_29["attribution"]["lift_pp"] is None
    assert "withheld" in at_29["attribution"]["note"].lower()
    assert "30" in at_29["attribution"]["note"]

    at_30 = report_compute(cohort("treated", 30, 15) + cohort("holdout", 30, 6))
    assert at_30["attribution"]["lift_pp"] == pytest.approx(30.0)  # 50% - 20%
    assert "withheld" not in at_30["attribution"]["note"].lower()


def test_lift_is_withheld_when_only_one_arm_reaches_30() -> None:
    report = report_compute(cohort("treated", 200, 100) + cohort("holdout", 29, 5))
    assert report["attribution"]["lift_pp"] is None


def test_empty_arm_has_a_null_rate_not_zero() -> None:
    report = report_compute(cohort("treated", 3, 1))
    assert report["arms"]["holdout"]["count"] == 0
    assert report["arms"]["holdout"]["recovery_rate"] is None
    assert report["arms"]["holdout"]["median_hours_to_recovery"] is None
    assert report["arms"]["treated"]["recovery_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert report["attribution"]["baseline"] == BASELINE_NONE
    assert report["attribution"]["lift_pp"] is None


def test_observational_baseline_when_no_holdout() -> None:
    report = report_compute(cohort("treated", 30, 12) + cohort("untouched", 30, 6))
    assert report["attribution"]["baseline"] == BASELINE_UNTOUCHED
    assert report["attribution"]["lift_pp"] == pytest.approx(20.0)
    assert "observational" in report["attribution"]["note"].lower()


def test_currencies_are_summed_separately_and_shown_by_exponent() -> None:
    rows = [
        row(currency="JPY", amount=1500, recovered=True), row(currency="JPY", amount=2500),
        row(currency="USD", amount=1999, recovered=True), row(currency="USD", amount=1),
        row(currency="KWD", amount=12345, recovered=True), row(currency="KWD", amount=5),
    ]
    amounts = report_compute(rows)["totals"]["amounts"]
    assert set(amounts) == {"JPY", "USD", "KWD"}
    def shown(code: str) -> tuple[int, str, str]:
        return amounts[code]["failed_minor"], amounts[code]["failed"], amounts[code]["recovered"]

    assert shown("JPY") == (4000, "4,000", "1,500")
    assert shown("USD") == (2000, "20.00", "19.99")
    assert shown("KWD") == (12350, "12.350", "12.345")
    assert [amounts[c]["exponent"] for c in ("JPY", "USD", "KWD")] == [0, 2, 3]


def test_counts_median_and_weeks() -> None:
    rows = [row(recovered=True, hours=h) for h in (2, 10, 30)] + [row(state="churned"), row(state="exhausted")]
    report = report_compute(rows)
    treated = report["arms"]["treated"]
    keys = ("count", "recovered", "churned", "exhausted", "open")
    assert tuple(treated[k] for k in keys) == (5, 3, 1, 1, 0)
    assert treated["median_hours_to_recovery"] == 10.0
    assert report["totals"]["count"] == 5
    weeks = [w["week"] for w in report["weekly"]]
    assert weeks == ["2026-06-01"]
    assert report["weekly"][0]["amounts"]["USD"]["failed_minor"] == 5000


@pytest.mark.django_db
def test_report_build_reads_this_tenant_and_splits_arms(tenant, other_tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    treated = record_failure("in_t").invoice
    invoice_mark_messaged(invoice=treated)
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_t",
                           amount_paid_minor=4900, currency="usd")
    record_failure("in_u")  # never sent: untouched
    held = InvoiceFactory(tenant=tenant, arm=Invoice.Arm.HOLDOUT, currency="JPY", amount_minor=3000)
    invoice_transition(invoice=held, to="recovered", cause="payment_succeeded")
    InvoiceFactory(tenant=other_tenant, amount_minor=10**9)

    report = report_build(tenant=tenant)
    assert report["tenant"] == "acme" and report["sample"] is False
    assert {k: v["count"] for k, v in report["arms"].items()} == {"holdout": 1, "treated": 1, "untouched": 1}
    assert report["arms"]["treated"]["recovery_rate"] == 1.0
    assert report["arms"]["untouched"]["recovery_rate"] == 0.0
    assert report["totals"]["amounts"]["USD"]["failed_minor"] == 9800
    assert report["totals"]["amounts"]["USD"]["recovered_minor"] == 4900
    assert report["totals"]["amounts"]["JPY"]["failed"] == "3,000"
