"""Writes of the decisions app: the decision audit row, refusals, reported outcomes and the
tenant rule versions (create, edit, four-eyes activation and restore)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, partial
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.models import DateTimeField, Field, JSONField

from decisions import versions
from decisions.models import (
    DecisionOutcome,
    DecisionRecord,
    DecisionRefusal,
    RuleVersion,
    RuleVersionApproval,
    RuleVersionRow,
)
from decisions.rules import Decision
from decisions.selectors import rule_table_cache_clear
from paypilot.admin_tenancy import admin_is_platform, admin_tenant_for
from paypilot.bulk import values_insert
from paypilot.models import Tenant
from paypilot.services import audit_record

_SOURCES = frozenset(DecisionRecord.Source.values)


def now_ms() -> datetime:
    """The current UTC time truncated to milliseconds, the precision every answer shows."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond - now.microsecond % 1000)


def decision_record(*, tenant: Tenant, invoice_ref: str, decision: Decision, source: str,
                    decided_at: datetime | None = None, currency: str | None = None) -> DecisionRecord:
    """Append the audit row for `decision`. Raises (DatabaseError, ValueError) when it cannot.

    Callers must not act on or return a decision this did not record.
    """
    values = _record_values(tenant=tenant, invoice_ref=invoice_ref, decision=decision, source=source,
                            decided_at=decided_at, currency=currency)
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


def decision_rows_insert(*, tenant: Tenant, decisions: list[tuple[str, Decision]], source: str,
                         decided_at: datetime | None = None,
                         currencies: list[str | None] | None = None) -> list[dict[str, Any]]:
    """Append the audit rows for many (invoice_ref, decision) pairs in one INSERT, inside the
    caller's transaction, without a model instance per row: the rows come back in order as
    plain dicts {attname: value}, each with its new "id". `currencies`: the currency of
    each decision's amounts, in the same order. Raises like `decision_record`, and then none
    of them is stored."""
    currencies = currencies or [None] * len(decisions)
    if len(currencies) != len(decisions):
        raise ValueError("one currency per decision")
    decided_at = decided_at or now_ms()
    rows = [_record_values(tenant=tenant, invoice_ref=ref, decision=decision, source=source,
                           decided_at=decided_at, currency=currency)
            for (ref, decision), currency in zip(decisions, currencies, strict=True)]
    for row, pk in zip(rows, values_insert(DecisionRecord, rows), strict=True):
        row["id"] = pk
    return rows


def _record_values(*, tenant: Tenant, invoice_ref: str, decision: Decision, source: str,
                   decided_at: datetime | None, currency: str | None = None) -> dict[str, Any]:
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
        "rule_version_id": decision.rule_version_id,
        "currency": (currency or "").strip().upper()[:3] or None,
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


# --- tenant rule versions ---------------------------------------------------------------------

APPROVE_RULES_PERMISSION = "decisions.approve_ruleversion"
APPROVALS_NEEDED = 2  # four eyes: two different people with approval rights

# Reason codes of refused version steps.
RULES_NOT_PERMITTED = "rules_approval_not_permitted"
RULES_WRONG_TENANT = "rules_wrong_tenant"
RULES_ALREADY_ACTIVE = "rules_version_already_active"
RULES_ALREADY_APPROVED = "rules_approver_already_approved"
RULES_FROZEN = "rules_version_frozen"


class RuleVersionRefused(Exception):
    """A version step that may not happen; `reason` is one of the codes above or a guard rail's."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class ApprovalResult:
    version: RuleVersion
    approvals: int  # distinct approvers in this activation round so far
    activated: bool  # this approval was the second one and the version is now active


def _user_tenant_ok(user: Any, tenant: Tenant) -> bool:
    if admin_is_platform(user):
        return True
    member = admin_tenant_for(user)
    return member is not None and member.pk == tenant.pk


def rule_version_create(*, tenant: Tenant, user_id: int | None, based_on: RuleVersion | None = None,
                        note: str = "") -> RuleVersion:
    """A new draft version for `tenant`, copied from `based_on` (same tenant) or the built-in
    table, with its audit event in the same transaction."""
    if based_on is not None and based_on.tenant_id != tenant.pk:
        raise RuleVersionRefused(RULES_WRONG_TENANT, "a version can only be based on the same tenant's")
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=tenant.pk).first()  # numbers one at a time
        last = RuleVersion.objects.filter(tenant=tenant).order_by("-number").values_list("number", flat=True).first()
        version = RuleVersion.objects.create(tenant=tenant, number=(last or 0) + 1, note=note[:200],
                                             created_by_id=user_id, edited_by_id=user_id, created_at=now_ms())
        if based_on is not None:
            source = [(r.failure_code, versions.TableRow(action=r.action, retry_in_days=r.retry_in_days,
                                                         offer=r.offer, escalate_at=r.escalate_at,
                                                         max_attempts=r.max_attempts))
                      for r in based_on.rows.all()]
        else:
            source = list(versions.builtin_rows().items())
        RuleVersionRow.objects.bulk_create([
            RuleVersionRow(version=version, failure_code=code, action=row.action, retry_in_days=row.retry_in_days,
                           max_attempts=row.max_attempts, offer=row.offer, escalate_at=row.escalate_at)
            for code, row in source
        ])
        audit_record(event="decisions.rules.version_created", tenant=tenant, actor=_actor(user_id),
                     detail={"version": version.pk, "previous_version": based_on.pk if based_on else None})
    return version


def rule_version_edited(*, version: RuleVersion, user_id: int | None) -> None:
    """Record that `version`'s rows were edited (the admin saved them in this transaction).

    Raises RuleVersionRefused when the version is no longer a draft: the caller's transaction
    then rolls the edit back. The row lock orders this against a concurrent first approval,
    which freezes the rows it reads under the same lock.
    """
    current = RuleVersion.objects.select_for_update().get(pk=version.pk)
    if current.status != RuleVersion.Status.DRAFT:
        raise RuleVersionRefused(RULES_FROZEN, "only a draft version can be edited")
    RuleVersion.objects.filter(pk=version.pk).update(edited_by_id=user_id)
    audit_record(event="decisions.rules.version_edited", tenant=version.tenant, actor=_actor(user_id),
                 detail={"version": version.pk})


def rule_version_approve(*, version: RuleVersion, user: Any) -> ApprovalResult:
    """One approver's yes. The first approval of a draft freezes it (guard rails checked, digest
    set); approving a retired version asks for it back (a rollback, in a fresh round). The second
    different approver of the round activates it: the tenant's active version is retired, the
    audit rows are written and the cached table is dropped once the transaction commits.

    Raises RuleVersionRefused (no approval right, other tenant, already active, same person
    twice, or a guard rail broken by a row).
    """
    if not user.has_perm(APPROVE_RULES_PERMISSION):
        raise RuleVersionRefused(RULES_NOT_PERMITTED, "you may not approve rule versions")
    with transaction.atomic():
        version = RuleVersion.objects.select_for_update().select_related("tenant").get(pk=version.pk)
        if not _user_tenant_ok(user, version.tenant):
            raise RuleVersionRefused(RULES_WRONG_TENANT, "this version belongs to another tenant")
        if version.status == RuleVersion.Status.ACTIVE:
            raise RuleVersionRefused(RULES_ALREADY_ACTIVE, f"v{version.number} is already active")
        if version.status == RuleVersion.Status.DRAFT:
            try:
                table = versions.table_build(rows=_rows_of(version), version_id=version.pk,
                                             version_number=version.number)
            except versions.GuardRailError as exc:
                raise RuleVersionRefused(exc.reason, str(exc)) from exc
            version.digest = table.digest
        elif version.status == RuleVersion.Status.RETIRED:
            version.approval_round += 1  # a restore: earlier approvals do not count again
        version.status = RuleVersion.Status.PENDING
        version.save(update_fields=["digest", "status", "approval_round"])
        round_approvals = version.approvals.filter(approval_round=version.approval_round)
        if round_approvals.filter(user_id=user.pk).exists():
            raise RuleVersionRefused(RULES_ALREADY_APPROVED,
                                     "you already approved this version: a second, different person must")
        RuleVersionApproval.objects.create(version=version, approval_round=version.approval_round,
                                           user_id=user.pk, digest=version.digest, approved_at=now_ms())
        count = round_approvals.values("user_id").distinct().count()
        audit_record(event="decisions.rules.approved", tenant=version.tenant, actor=_actor(user.pk),
                     detail={"version": version.pk, "approvals": count, "rules_version": version.digest})
        activated = count >= APPROVALS_NEEDED
        if activated:
            _activate(version, approvers=sorted(round_approvals.values_list("user_id", flat=True)),
                      actor=_actor(user.pk))
    return ApprovalResult(version=version, approvals=count, activated=activated)


def _activate(version: RuleVersion, *, approvers: list[int], actor: str) -> None:
    previous = (RuleVersion.objects.select_for_update()
                .filter(tenant_id=version.tenant_id, status=RuleVersion.Status.ACTIVE).first())
    if previous is not None:
        previous.status = RuleVersion.Status.RETIRED
        previous.save(update_fields=["status"])
    version.status = RuleVersion.Status.ACTIVE
    version.activated_at = now_ms()
    version.save(update_fields=["status", "activated_at"])
    audit_record(event="decisions.rules.activated", tenant=version.tenant, actor=actor,
                 detail={"version": version.pk, "previous_version": previous.pk if previous else None,
                         "rules_version": version.digest, "approvals": approvers})
    # Dropped now for this transaction's own later reads, and again once committed, in case
    # another thread re-read the old version in between.
    tenant_id = version.tenant_id
    rule_table_cache_clear(tenant_id=tenant_id)
    transaction.on_commit(lambda: rule_table_cache_clear(tenant_id=tenant_id))


def _rows_of(version: RuleVersion) -> list[tuple[str, versions.TableRow]]:
    return [(r.failure_code, versions.TableRow(action=r.action, retry_in_days=r.retry_in_days, offer=r.offer,
                                               escalate_at=r.escalate_at, max_attempts=r.max_attempts))
            for r in version.rows.all()]


def _actor(user_id: int | None) -> str:
    return f"user:{user_id}" if user_id is not None else "system"
