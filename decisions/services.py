"""Writes of the decisions app: the decision audit row, refusals and reported outcomes."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, partial
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.models import DateTimeField, Field, JSONField

from decisions.models import DecisionOutcome, DecisionRecord, DecisionRefusal
from decisions.rules import Decision
from paypilot.models import Tenant

_SOURCES = frozenset(DecisionRecord.Source.values)


def now_ms() -> datetime:
    """The current UTC time truncated to milliseconds, the precision every answer shows."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond - now.microsecond % 1000)


def decision_record(*, tenant: Tenant, invoice_ref: str, decision: Decision, source: str,
                    decided_at: datetime | None = None) -> DecisionRecord:
    """Append the audit row for `decision`. Raises (DatabaseError, ValueError) when it cannot.

    Callers must not act on or return a decision this did not record.
    """
    values = _record_values(tenant=tenant, invoice_ref=invoice_ref, decision=decision, source=source,
                            decided_at=decided_at)
    record = DecisionRecord(**values)
    # One prepared INSERT ... RETURNING instead of Model.save(): this is the hot path of
    # POST /decide, and the ORM's per-call query compilation costs more than the insert.
    conn = connections[DEFAULT_DB_ALIAS]
    params = [adapt(values[attname]) for attname, adapt in _insert_adapters(conn.vendor)]
    # Inside a caller's transaction a savepoint keeps a failed insert from poisoning it.
    with transaction.atomic() if conn.in_atomic_block else nullcontext(), conn.cursor() as cursor:
        cursor.execute(_insert_sql(conn.vendor), params)
        record.pk = cursor.fetchone()[0]
    record._state.adding = False
    return record


def decision_record_many(*, tenant: Tenant, decisions: list[tuple[str, Decision]], source: str,
                         decided_at: datetime | None = None) -> list[DecisionRecord]:
    """Append the audit rows for many (invoice_ref, decision) pairs in one INSERT, inside the
    caller's transaction; the records come back in order, with their ids. Raises like
    `decision_record`, and then none of them is stored."""
    if len(decisions) == 1:
        invoice_ref, decision = decisions[0]
        return [decision_record(tenant=tenant, invoice_ref=invoice_ref, decision=decision, source=source,
                                decided_at=decided_at)]
    decided_at = decided_at or now_ms()
    records = [
        DecisionRecord(**_record_values(tenant=tenant, invoice_ref=ref, decision=decision, source=source,
                                        decided_at=decided_at))
        for ref, decision in decisions
    ]
    return DecisionRecord.objects.bulk_create(records)


def _record_values(*, tenant: Tenant, invoice_ref: str, decision: Decision, source: str,
                   decided_at: datetime | None) -> dict[str, Any]:
    if source not in _SOURCES:
        raise ValueError(f"unknown decision source: {source}")
    impact = decision.impact
    return {
        "tenant_id": tenant.pk,
        "invoice_ref": invoice_ref,
        "source": source,
        "failure_code": decision.failure_code,
        "attempt": decision.attempt,
        "prior_failures": decision.prior_failures,
        "rule_fired": decision.rule_fired,
        "matched": decision.matched,
        "churn_risk": decision.churn_risk,
        "action": decision.strategy.action,
        "retry_in_days": decision.strategy.retry_in_days,
        "offer": decision.strategy.offer,
        "escalated": decision.strategy.escalated,
        "retry_at": decision.schedule.retry_at,
        "schedule_source": decision.schedule.source,
        "likelihood": decision.likelihood,
        "expected_recovered_minor": impact.expected_recovered_minor if impact else None,
        "annual_value_at_risk_minor": impact.annual_value_at_risk_minor if impact else None,
        "rules_version": decision.rules_version,
        "decided_at": decided_at or now_ms(),
        "card_brand": decision.card_brand[:32],
        "network_advice_code": decision.network_advice_code[:16],
        "network_decline_code": decision.network_decline_code[:16],
        "network_rules": list(decision.network_rules),
    }


@cache
def _insert_fields() -> tuple[Field, ...]:  # type: ignore[type-arg]
    return tuple(f for f in DecisionRecord._meta.concrete_fields if not f.primary_key)


@cache
def _insert_adapters(vendor: str) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """(attname, adapter) per column: the backend's datetime adapter for datetimes, the value
    as is for the rest (str, int, float, bool and None pass through both drivers unchanged)."""
    out: list[tuple[str, Callable[[Any], Any]]] = []
    for field in _insert_fields():
        if isinstance(field, DateTimeField):
            out.append((field.attname, connection.ops.adapt_datetimefield_value))
        elif isinstance(field, JSONField):
            out.append((field.attname, partial(field.get_db_prep_save, connection=connection)))
        else:
            out.append((field.attname, _same))
    return tuple(out)


def _same(value: Any) -> Any:
    return value


@cache
def _insert_sql(vendor: str) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in _insert_fields())
    marks = ", ".join(["%s"] * len(_insert_fields()))
    table = quote(DecisionRecord._meta.db_table)
    return f"INSERT INTO {table} ({columns}) VALUES ({marks}) RETURNING {quote('id')}"


def decision_refusal_record(*, tenant: Tenant, gate: str, reason: str, field: str = "",
                            refusal_id: str | None = None) -> DecisionRefusal:
    """Append a refusal row: the gate, a reason code, at most a known field's name, and the
    refusal id the caller is answered with."""
    return DecisionRefusal.objects.create(tenant=tenant, gate=gate, reason=reason, field=field[:64],
                                          refusal_id=refusal_id, created_at=now_ms())


@dataclass(frozen=True)
class OutcomeResult:
    outcome: DecisionOutcome
    created: bool  # False when this report_key was already stored: a replay


def decision_outcome_report(*, tenant: Tenant, invoice_ref: str, outcome: str,
                            report_key: str) -> OutcomeResult:
    """Append an outcome once per (tenant, report_key); a replay returns the first row.

    The unique constraint decides between concurrent identical reports: the loser's
    INSERT fails and it answers with the winner's row. Raises ValueError for an outcome
    that cannot be reported (such as "unknown").
    """
    if outcome not in DecisionOutcome.Outcome.values:
        raise ValueError(f"outcome cannot be reported: {outcome}")
    existing = DecisionOutcome.objects.filter(tenant=tenant, report_key=report_key).first()
    if existing is not None:
        return OutcomeResult(outcome=existing, created=False)
    try:
        with transaction.atomic():
            row = DecisionOutcome.objects.create(tenant=tenant, invoice_ref=invoice_ref, outcome=outcome,
                                                 report_key=report_key, reported_at=now_ms())
        return OutcomeResult(outcome=row, created=True)
    except IntegrityError:
        return OutcomeResult(outcome=DecisionOutcome.objects.get(tenant=tenant, report_key=report_key),
                             created=False)
