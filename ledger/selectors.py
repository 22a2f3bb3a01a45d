"""Ledger reads: the recovery report (from the rollup) and its public sample.

The arithmetic lives in `ledger/report.py` and is pure over rollup cells: the real report
(`report_build`, cells read from the trigger-kept rollup table), the from-scratch
recomputation (`report_recompute`, cells computed in Python from the invoice rows) and the
public sample (`report_sample`, cells of a fixed invented cohort) all go through it.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Case, CharField, F, Q, QuerySet, Sum, Value, When
from django.utils import timezone

from ledger.holdout import holdout_in_force
from ledger.models import Invoice, ReportRollup
from ledger.report import (
    ARM_HOLDOUT,
    ARM_TREATED,
    ARM_TREATMENT,
    ARM_UNTOUCHED,
    BASELINE_HOLDOUT,
    BASELINE_NONE,
    INTERVAL_METHOD,
    ITT_ARMS,
    LIFT_MIN_PER_ARM,
    OUTCOME_LATER,
    OUTCOME_OPEN,
    OUTCOME_WITHIN,
    REPORT_ARMS,
    STATE_CHURNED,
    STATE_EXHAUSTED,
    STATE_RECOVERED,
    STATE_VOIDED,
    HoldoutInfo,
    ReportAggregates,
    ReportBounds,
    report_aggregates_add,
    report_bounds,
    report_compute,
    report_from_aggregates,
)
from ledger.report_export import report_csv
from ledger.rollup import rollup_cells_recompute
from paypilot.models import Tenant

__all__ = [
    "ARM_HOLDOUT", "ARM_TREATED", "ARM_TREATMENT", "ARM_UNTOUCHED", "BASELINE_HOLDOUT", "BASELINE_NONE",
    "INTERVAL_METHOD", "ITT_ARMS", "LIFT_MIN_PER_ARM", "REPORT_ARMS", "report_build", "report_csv",
    "report_recompute", "report_sample", "report_sample_invoices",
]

# What a from-scratch recomputation reads from each invoice.
INVOICE_REPORT_FIELDS = ("arm", "currency", "state", "failed_at", "first_messaged_at", "recovered_at",
                         "amount_minor", "recovered_minor", "refunded_minor")


def report_window_days() -> int:
    return int(settings.PAYPILOT_REPORT_WINDOW_DAYS)


def report_holdout_info(*, tenant: Tenant, now: datetime) -> HoldoutInfo:
    pct, source = holdout_in_force(tenant=tenant, at=now)
    start = tenant.holdout_start if source == "tenant" else None
    return HoldoutInfo(pct=pct, start=start, source=source)


_SUMS = {"n": Sum("invoices"), "failed": Sum("failed_minor"), "gross": Sum("recovered_minor"),
         "refunded": Sum("refunded_minor")}


def _sums(row: dict[str, Any]) -> list[int]:
    # int(): PostgreSQL's SUM(bigint) is numeric, which would reach the JSON as a Decimal.
    return [int(row["n"]), int(row["failed"]), int(row["gross"]), int(row["refunded"])]


def report_aggregates(*, tenant: Tenant, bounds: ReportBounds) -> ReportAggregates:
    """`report_aggregate_cells` done by the database over the tenant's rollup rows: two
    GROUP BY queries returning a few hundred rows, so the Python work stays flat."""
    rows: QuerySet[ReportRollup] = ReportRollup.objects.filter(tenant=tenant, invoices__gt=0)
    outcome = Case(
        When(state=STATE_RECOVERED, delay_hours__lt=bounds.window_hours, then=Value(OUTCOME_WITHIN)),
        When(state=STATE_RECOVERED, then=Value(OUTCOME_LATER)),
        When(state__in=[STATE_CHURNED, STATE_EXHAUSTED, STATE_VOIDED], then=F("state")),
        default=Value(OUTCOME_OPEN), output_field=CharField(),
    )
    agg = ReportAggregates()
    by_week = rows.annotate(outcome=outcome).values("week", "arm", "messaged", "outcome", "currency")
    for row in by_week.annotate(**_SUMS).order_by():
        report_aggregates_add(agg, bounds=bounds, week=row["week"], arm=row["arm"], messaged=row["messaged"],
                              outcome=row["outcome"], currency=row["currency"], sums=_sums(row))
    mature = Q(state=STATE_RECOVERED, delay_hours__lt=bounds.window_hours, week__lte=bounds.last_mature_week)
    if bounds.first_experiment_week is not None:
        mature &= Q(week__gte=bounds.first_experiment_week)
    for row in rows.filter(mature).values("arm", "messaged", "delay_hours").annotate(n=Sum("invoices")).order_by():
        agg.delays[(row["arm"], row["messaged"], row["delay_hours"])] = int(row["n"])
    return agg


def report_build(*, tenant: Tenant, now: datetime | None = None) -> dict[str, Any]:
    """The real report for one tenant: the database sums the tenant's rollup rows, Python
    shapes a few hundred aggregates (flat in the ledger's size)."""
    now = now or timezone.now()
    window_days = report_window_days()
    holdout = report_holdout_info(tenant=tenant, now=now)
    bounds = report_bounds(now=now, window_days=window_days, holdout=holdout)
    report = report_from_aggregates(report_aggregates(tenant=tenant, bounds=bounds), now=now,
                                    window_days=window_days, holdout=holdout)
    report["tenant"] = tenant.slug
    return report


def report_recompute(*, tenant: Tenant, now: datetime | None = None) -> dict[str, Any]:
    """The same report recomputed from scratch from every invoice row, in Python (slow:
    for tests and for checking the rollup, never for a page)."""
    now = now or timezone.now()
    rows = list(Invoice.objects.filter(tenant=tenant).values(*INVOICE_REPORT_FIELDS).iterator(chunk_size=5000))
    report = report_compute(rollup_cells_recompute(rows), now=now, window_days=report_window_days(),
                            holdout=report_holdout_info(tenant=tenant, now=now))
    report["tenant"] = tenant.slug
    return report


# --- the public sample: a fixed, invented cohort ----------------------------------------------

SAMPLE_START = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday
SAMPLE_NOW = datetime(2026, 4, 6, 9, 0, tzinfo=UTC)  # the last three weeks are still maturing
SAMPLE_WEEKS = 12
SAMPLE_SEED = 20260105
SAMPLE_HOLDOUT = HoldoutInfo(pct=30, start=date(2026, 1, 5), source="tenant")
# Invented probabilities, chosen to look like a plausible cohort; not measurements of
# anything. Per arm: (share paying on its own before any send, share recovering after a send
# or on the provider's retries later). The treatment arm's emails add the difference.
SAMPLE_INVOICES_PER_WEEK = 200  # enough for a lift per weekly cohort
SAMPLE_SELF_CURE = 0.22
SAMPLE_LATER = {ARM_HOLDOUT: 0.12, ARM_TREATMENT: 0.27}
SAMPLE_CURRENCIES = (("USD", (2900, 4900, 14900, 29900)), ("EUR", (1900, 9900)), ("JPY", (3000, 12000)))


def report_sample_invoices() -> list[dict[str, Any]]:
    """The invented invoices, shaped like `Invoice.objects.values(*INVOICE_REPORT_FIELDS)`."""
    rng = random.Random(SAMPLE_SEED)  # seeded: the same cohort on every request and restart
    rows: list[dict[str, Any]] = []
    for i in range(SAMPLE_WEEKS * SAMPLE_INVOICES_PER_WEEK):
        arm = ARM_HOLDOUT if rng.random() < SAMPLE_HOLDOUT.pct / 100 else ARM_TREATMENT
        currency, amounts = rng.choice(SAMPLE_CURRENCIES)
        amount = rng.choice(amounts)
        failed_at = SAMPLE_START + timedelta(days=7 * (i // SAMPLE_INVOICES_PER_WEEK),
                                             hours=rng.randrange(0, 24 * 7))
        roll = rng.random()
        messaged_at = None
        if roll < SAMPLE_SELF_CURE:  # paid on the provider's own retry, before any send
            state, recovered_at = "recovered", failed_at + timedelta(hours=rng.randrange(1, 30))
        else:
            if arm == ARM_TREATMENT and rng.random() < 0.9:  # approved and sent the next day
                messaged_at = failed_at + timedelta(hours=30)
            if roll < SAMPLE_SELF_CURE + SAMPLE_LATER[arm]:
                state, recovered_at = "recovered", failed_at + timedelta(hours=rng.randrange(31, 24 * 21))
            else:
                state, recovered_at = rng.choice(["churned", "exhausted", "failed", "failed"]), None
        if recovered_at is not None and recovered_at > SAMPLE_NOW:
            state, recovered_at = "failed", None  # not paid yet on the sample's "today"
        if state == "failed" and messaged_at is not None:
            state = "messaged"
        recovered_minor = amount if state == "recovered" else 0
        rows.append({"arm": arm, "currency": currency, "state": state, "failed_at": failed_at,
                     "first_messaged_at": messaged_at, "recovered_at": recovered_at, "amount_minor": amount,
                     "recovered_minor": recovered_minor,
                     "refunded_minor": recovered_minor if rng.random() < 0.03 else 0})
    return rows


def report_sample() -> dict[str, Any]:
    """The sample report: invented data, labelled as such; never reads the ledger."""
    report = report_compute(rollup_cells_recompute(report_sample_invoices()), now=SAMPLE_NOW,
                            window_days=30, holdout=SAMPLE_HOLDOUT, sample=True)
    report["tenant"] = None
    report["label"] = "Sample data: an invented cohort, not any tenant's ledger."
    return report
