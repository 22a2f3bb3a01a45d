"""Reads of the decisions app: a tenant's decisions for an invoice, the outcome counts and the
rules table a tenant's decisions use now."""

from __future__ import annotations

import threading
import time
from typing import Any

from django.conf import settings
from django.db.models import Count, Max

from decisions import versions
from decisions.models import DecisionOutcome, DecisionRecord, RuleVersion
from decisions.rules import BUILTIN_TABLE, iso_ms
from decisions.tables import RuleTable, TableRow
from paypilot.models import Tenant

DECISIONS_PER_INVOICE = 50
UNKNOWN = "unknown"  # what "no outcome reported" is called; never stored


def decision_as_dict(record: DecisionRecord, *, tenant_slug: str) -> dict[str, Any]:
    """The answer shape of POST /decide, rebuilt from the stored row."""
    return {
        "invoice_id": record.invoice_ref,
        "rule_fired": record.rule_fired,
        "matched": record.matched,
        "input": {
            "failure_code": record.failure_code,
            "attempt": record.attempt,
            "prior_failures": record.prior_failures,
            "card_brand": record.card_brand or None,
            "network_advice_code": record.network_advice_code or None,
            "network_decline_code": record.network_decline_code or None,
        },
        "churn_risk": record.churn_risk,
        "strategy": {
            "action": record.action,
            "retry_in_days": record.retry_in_days,
            "offer": record.offer,
            "escalated": record.escalated,
        },
        "schedule": {"retry_at": iso_ms(record.retry_at), "source": record.schedule_source},
        "impact": {
            "recovery_likelihood": record.likelihood,
            "expected_recovered_minor": record.expected_recovered_minor,
            "annual_value_at_risk_minor": record.annual_value_at_risk_minor,
        },
        "rules_version": record.rules_version,
        "rule_version_id": record.rule_version_id,
        "network_rules": list(record.network_rules),
        "decided_at": iso_ms(record.decided_at),
        "tenant": tenant_slug,
        "audit_id": record.pk,
        "source": record.source,
    }


def decision_list(*, tenant: Tenant, invoice_ref: str) -> list[DecisionRecord]:
    """This tenant's decisions for one invoice, newest first, at most 50."""
    return list(
        DecisionRecord.objects.filter(tenant=tenant, invoice_ref=invoice_ref)
        .order_by("-decided_at", "-pk")[:DECISIONS_PER_INVOICE]
    )


def decision_exists(*, tenant: Tenant, invoice_ref: str) -> bool:
    return DecisionRecord.objects.filter(tenant=tenant, invoice_ref=invoice_ref).exists()


def outcome_latest(*, tenant: Tenant, invoice_ref: str) -> str:
    """The latest reported outcome of an invoice, or "unknown" when nobody reported one."""
    row = (
        DecisionOutcome.objects.filter(tenant=tenant, invoice_ref=invoice_ref)
        .order_by("-reported_at", "-pk")
        .values_list("outcome", flat=True)
        .first()
    )
    return row or UNKNOWN


def outcome_summary(*, tenant: Tenant) -> dict[str, int]:
    """Counts per decided invoice: its latest reported outcome, or unknown when none.

    Counted per invoice rather than per decision, so an invoice decided three times and
    paid once counts as one paid invoice.
    """
    decided = set(
        DecisionRecord.objects.filter(tenant=tenant).values_list("invoice_ref", flat=True).distinct()
    )
    latest_pk = (
        DecisionOutcome.objects.filter(tenant=tenant)
        .values("invoice_ref")
        .annotate(last=Max("pk"))
        .values_list("last", flat=True)
    )
    latest = dict(
        DecisionOutcome.objects.filter(pk__in=list(latest_pk)).values_list("invoice_ref", "outcome")
    )
    counts = {DecisionOutcome.Outcome.PAID.value: 0, DecisionOutcome.Outcome.NOT_PAID.value: 0, UNKNOWN: 0}
    for invoice_ref in decided:
        counts[latest.get(invoice_ref, UNKNOWN)] += 1
    reports = DecisionOutcome.objects.filter(tenant=tenant).aggregate(n=Count("pk"))["n"]
    return {**counts, "decided_invoices": len(decided), "reports": reports}


# Per-process cache of each tenant's active table: tenant id -> (expires at, table). Activation
# clears the entry in the process that activated; other processes see the new version within
# PAYPILOT_RULES_CACHE_SECONDS. A frozen version never changes, so a cached table is never wrong
# about the version it names, only (for that many seconds) about which version is active.
_ACTIVE: dict[int, tuple[float, RuleTable]] = {}
_ACTIVE_LOCK = threading.Lock()


def rule_table_cache_clear(*, tenant_id: int | None = None) -> None:
    with _ACTIVE_LOCK:
        if tenant_id is None:
            _ACTIVE.clear()
        else:
            _ACTIVE.pop(tenant_id, None)


def rule_table_for_version(*, version: RuleVersion) -> RuleTable:
    """The table a version stands for (a draft's current rows; raises versions.GuardRailError
    when a row breaks a guard rail)."""
    rows = [(r.failure_code, TableRow(action=r.action, retry_in_days=r.retry_in_days, offer=r.offer,
                                      escalate_at=r.escalate_at, max_attempts=r.max_attempts))
            for r in version.rows.all()]
    return versions.table_build(rows=rows, version_id=version.pk, version_number=version.number)


def rule_table_active(*, tenant_id: int) -> RuleTable:
    """The table this tenant's decisions use: its active version, or the built-in table."""
    now = time.monotonic()
    cached = _ACTIVE.get(tenant_id)
    if cached is not None and cached[0] > now:
        return cached[1]
    version = (RuleVersion.objects.filter(tenant_id=tenant_id, status=RuleVersion.Status.ACTIVE)
               .prefetch_related("rows").first())
    table = rule_table_for_version(version=version) if version is not None else BUILTIN_TABLE
    with _ACTIVE_LOCK:
        _ACTIVE[tenant_id] = (now + settings.PAYPILOT_RULES_CACHE_SECONDS, table)
    return table
