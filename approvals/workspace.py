"""Reads for the finance home page (the admin index): what needs a person today, per tenant.

Each figure is one indexed query whose cost does not grow with the ledger: counts are capped
(`COUNT_CAP`, shown as "10,000+"), the queue figures are ranges of the queue index
(tenant, status, expires_at, id), money at risk sums the report rollup, this month's
recoveries read a partial index of recovered invoices, suppressed sends the
(tenant, created_at) index, and reconciliation its newest stored run. The attributable part
comes from the recovery report itself (`ledger.selectors.report_build`, rollup-based).
Reconciliation stands beside approvals, so its run is read through the app registry, never
imported (and the page simply omits it where the app is not installed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.db.models import Count, F, QuerySet, Sum
from django.utils import timezone

from approvals.models import ApprovalRequest, SuppressedSend
from ledger.models import Invoice, ReportRollup
from ledger.selectors import report_build
from paypilot.models import Tenant

Status = ApprovalRequest.Status
COUNT_CAP = 10_000  # counts stop here: "10,000+" says enough and costs the same at any size
EXPIRING_WITHIN = timedelta(days=1)


@dataclass(frozen=True)
class Capped:
    """A count that stopped at COUNT_CAP."""

    value: int
    capped: bool

    def __str__(self) -> str:
        return f"{self.value:,}+" if self.capped else f"{self.value:,}"


@dataclass
class Workspace:
    tenant: Tenant
    now: datetime
    pending: Capped
    oldest: ApprovalRequest | None  # the pending request closest to expiry (the TTL is fixed)
    expiring: Capped  # pending, expiring within EXPIRING_WITHIN
    second_approver: Capped  # high value, approved once, waiting for a different person
    at_risk: dict[str, int]  # open invoices' amounts per currency (minor units)
    month_start: datetime
    recovered_month: dict[str, int]  # net recovered this calendar month per currency (minor units)
    attribution: dict[str, Any]  # the report's attribution block (lift, interval, attributable)
    holdout_pct: int  # the tenant's holdout percentage (0: nothing to compare against)
    week_start: datetime
    suppressed_week: list[tuple[str, int]]  # (gate, refusals) this week, most first
    recon: dict[str, Any] | None = field(default=None)  # the newest run: id, as_of, money, disputes


def capped_count(queryset: QuerySet[Any]) -> Capped:
    """COUNT over at most COUNT_CAP + 1 rows of an index range."""
    found = queryset.values("pk")[: COUNT_CAP + 1].count()
    return Capped(min(found, COUNT_CAP), found > COUNT_CAP)


def pending_of(tenant: Tenant) -> QuerySet[ApprovalRequest]:
    return ApprovalRequest.objects.filter(tenant=tenant, status=Status.PENDING)


def workspace_read(*, tenant: Tenant, now: datetime | None = None) -> Workspace:
    """Every figure of the home page for `tenant`."""
    now = now or timezone.now()
    pending = pending_of(tenant)
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    week_start = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    report = report_build(tenant=tenant, now=now)
    return Workspace(
        tenant=tenant, now=now,
        pending=capped_count(pending.filter(expires_at__gt=now)),
        oldest=pending.filter(expires_at__gt=now).order_by("expires_at", "id").first(),
        expiring=capped_count(pending.filter(expires_at__gt=now, expires_at__lte=now + EXPIRING_WITHIN)),
        second_approver=capped_count(pending.filter(expires_at__gt=now, high_value=True,
                                                    first_approver__isnull=False)),
        at_risk=_at_risk(tenant),
        month_start=month_start,
        recovered_month=_recovered_since(tenant, month_start),
        attribution=report["attribution"], holdout_pct=int(report.get("holdout", {}).get("pct") or 0),
        week_start=week_start,
        suppressed_week=_suppressed_since(tenant, week_start),
        recon=_recon_latest(tenant, now),
    )


def _at_risk(tenant: Tenant) -> dict[str, int]:
    rows = (ReportRollup.objects.filter(tenant=tenant, state__in=sorted(Invoice.OPEN_STATES))
            .values("currency").annotate(total=Sum("failed_minor")).order_by("currency"))
    return {row["currency"]: int(row["total"]) for row in rows if row["total"]}


def _recovered_since(tenant: Tenant, start: datetime) -> dict[str, int]:
    rows = (Invoice.objects.filter(tenant=tenant, state=Invoice.State.RECOVERED, recovered_at__gte=start)
            .values("currency").annotate(total=Sum(F("recovered_minor") - F("refunded_minor")))
            .order_by("currency"))
    return {row["currency"]: int(row["total"]) for row in rows if row["total"]}


def _suppressed_since(tenant: Tenant, start: datetime) -> list[tuple[str, int]]:
    rows = (SuppressedSend.objects.filter(tenant=tenant, created_at__gte=start)
            .values("gate").annotate(n=Count("pk")).order_by())
    return sorted(((row["gate"], int(row["n"])) for row in rows), key=lambda item: (-item[1], item[0]))


def _recon_latest(tenant: Tenant, now: datetime) -> dict[str, Any] | None:
    try:
        run_model = apps.get_model("reconciliation", "Run")
        break_model = apps.get_model("reconciliation", "Break")
    except LookupError:
        return None
    run = run_model.objects.filter(tenant=tenant).order_by("-created_at", "-pk").first()
    if run is None:
        return {"run": None}
    result = json.loads(run.result_json)
    disputes = result.get("disputes_due", [])
    due: dict[str, int] = {}
    for dispute in disputes:
        currency = dispute.get("currency", "")
        due[currency] = due.get(currency, 0) + abs(int(dispute.get("amount_minor", 0)))
    open_breaks = break_model.objects.filter(run=run, status="open")
    return {
        "run": run, "as_of": run.as_of, "money_in_breaks": result.get("money_in_breaks_minor", {}),
        "breaks": run.breaks_count, "open_breaks": capped_count(open_breaks),
        "disputes_due": len(disputes), "disputes_money": dict(sorted(due.items())),
        "disputes_soonest": min((d.get("days_left") for d in disputes if d.get("days_left") is not None),
                                default=None),
        "age_days": (now.date() - run.as_of).days,
    }


