"""The run: its legs in order, the result stored once per (tenant, as-of date, input digest).

Every step is a query over temporary tables built from the tenant's imported rows (the
same SQL on SQLite and PostgreSQL, dates as integer day numbers): the newest file wins
for a repeated id (a weekly export overlapping the last), rows dated after the as-of date
are left out, and only rows already known to be off come back to Python, where
`reconciliation.engine` words them. Nothing loops over pairs in Python.

The legs: `run_orders` (orders to captures, fees), `run_payouts` (payouts to bank
credits), `run_disputes` (disputes due); `run_sql` holds the shared SQL helpers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import date
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from paypilot.models import Tenant
from paypilot.services import audit_record, pii_hash
from paypilot.tenancy import tenant_context
from reconciliation import engine
from reconciliation.engine import BreakItem
from reconciliation.formats import day_number
from reconciliation.models import Break, ContractVersion, DisputeRow, ImportFile, Run
from reconciliation.services.run_breaks import breaks_insert
from reconciliation.services.run_disputes import disputes_due
from reconciliation.services.run_fx import fx_check
from reconciliation.services.run_orders import captures_build, fees_check, orders_match
from reconciliation.services.run_payouts import payouts_build, payouts_match
from reconciliation.services.run_sql import execute, temps_drop

Progress = Callable[[str], None]
RUN_WORK_MEM = "128MB"  # PostgreSQL sort/hash memory per plan node during a run


def input_digest(*, tenant: Tenant, as_of: date) -> str:
    """sha256 over what a run reads: every imported file's sha256 and kind, every contract
    version, the rules' version and the date window. No database ids, so the same files
    imported into another database give the same digest."""
    files = sorted(ImportFile.objects.filter(tenant=tenant).values_list("kind", "sha256"))
    contracts = sorted(
        (c.currency, c.version, c.effective_from.isoformat(), c.percent_micro, c.fixed_minor,
         c.chargeback_fee_minor, c.payout_delay_days)
        # The FX margin only when stated, so versions without one keep their digests.
        + (() if c.fx_margin_percent is None else (str(c.fx_margin_percent),))
        for c in ContractVersion.objects.filter(tenant=tenant)
    )
    payload = {"engine": engine.ENGINE_VERSION, "as_of": as_of.isoformat(), "files": files,
               "contracts": contracts, "window": settings.PAYPILOT_RECON_DATE_WINDOW_DAYS}
    # Disputes kept current by webhooks (not files): each one's last applied event.
    live = sorted(DisputeRow.objects.filter(tenant=tenant, file__isnull=True).values_list("dispute_id",
                                                                                         "last_event_id"))
    if live:  # absent otherwise, so tenants without live disputes keep their digests
        payload["live_disputes"] = live
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def run_compute(*, tenant: Tenant, as_of: date, progress: Progress | None = None) -> tuple[dict[str, Any], list]:
    """The review for `tenant` as of `as_of`: (result JSON data, breaks). Reads only; call
    inside `tenant_context(tenant)`."""
    step = progress or (lambda _label: None)
    as_of_day = day_number(as_of)
    versions = list(ContractVersion.objects.filter(tenant=tenant))
    labels = {c.pk: c.label for c in versions}
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        # Each step sorts or hashes up to a million rows; at the default 4 MB every one
        # spills to disk. Transaction-local, so it ends with the run.
        execute(f"SET LOCAL work_mem = '{RUN_WORK_MEM}'")
    temps_drop()
    try:
        step("orders and captures")
        captures_build(tenant.pk, as_of_day)
        breaks: list[BreakItem] = []
        orders, matched = orders_match(breaks)
        step("fees")
        fees_check(breaks, labels)
        step("payouts and bank")
        payouts_build(tenant.pk, as_of_day)
        in_transit = payouts_match(breaks, as_of_day)
        fx_check(breaks, versions)
        breaks.sort(key=BreakItem.sort_key)
        step("disputes")
        disputes = disputes_due(tenant.pk, as_of_day, breaks)
    finally:
        temps_drop()
    money_in_breaks: dict[str, int] = {}
    for b in breaks:
        money_in_breaks[b.currency] = money_in_breaks.get(b.currency, 0) + abs(b.amount_minor)
    result = {
        "as_of": as_of.isoformat(),
        "match_rate": round(matched / orders, 4) if orders else None,
        "orders": orders,
        "money_in_breaks_minor": dict(sorted(money_in_breaks.items())),
        "breaks": [b.as_json() for b in breaks],
        "in_transit": in_transit,
        "disputes_due": disputes,
        "todo": engine.todo_build(breaks=breaks, disputes=disputes),
    }
    return result, breaks


def run_create(*, tenant: Tenant, as_of: date, actor: str, progress: Progress | None = None) -> tuple[Run, bool]:
    """Compute and store the review (one transaction with its audit row); returns (run, created).

    The same inputs and as-of date return the stored run, after checking the recomputed
    JSON is byte-identical (it must be: a difference raises RuntimeError)."""
    with tenant_context(tenant), transaction.atomic():
        digest = input_digest(tenant=tenant, as_of=as_of)
        result, breaks = run_compute(tenant=tenant, as_of=as_of, progress=progress)
        text = engine.result_dump(result)
        existing = Run.objects.filter(tenant=tenant, as_of=as_of, input_digest=digest).first()
        if existing is not None:
            if existing.result_json != text:
                raise RuntimeError(f"run {existing.pk} recomputed to different bytes: the engine is not deterministic")
            return existing, False
        run = Run.objects.create(
            tenant=tenant, as_of=as_of, input_digest=digest, result_json=text,
            result_sha256=hashlib.sha256(text.encode()).hexdigest(), match_rate=result["match_rate"],
            breaks_count=len(breaks), actor=actor,
        )
        carried = _previous_resolutions(tenant=tenant, run=run)
        breaks_insert(tenant_id=tenant.pk, run_id=run.pk, breaks=breaks,
                      carried=lambda b: carried.get(_break_key(b.kind, b.amount_minor, b.currency, b.refs), {}))
        audit_record(event="reconciliation.run.created", tenant=tenant, actor=actor,
                     detail={"recon_run": run.pk, "as_of": as_of.isoformat(), "input_digest": digest,
                             "count": len(breaks)})
    return run, True


def _break_key(kind: str, amount: int, currency: str, refs: dict[str, Any]) -> str:
    return json.dumps([kind, amount, currency, refs], sort_keys=True)


def _previous_resolutions(*, tenant: Tenant, run: Run) -> dict[str, dict[str, Any]]:
    """Assignment and resolution of the same break in the tenant's latest earlier run, so a
    new file does not reopen what a person already closed."""
    previous = Run.objects.filter(tenant=tenant).exclude(pk=run.pk).order_by("-created_at", "-pk").first()
    if previous is None:
        return {}
    carried: dict[str, dict[str, Any]] = {}
    for b in previous.breaks.exclude(status=Break.Status.OPEN, assignee__isnull=True):
        carried[_break_key(b.kind, b.amount_minor, b.currency, b.refs)] = {
            "status": b.status, "assignee_id": b.assignee_id, "resolution_note": b.resolution_note,
            "resolved_at": b.resolved_at, "resolved_by": b.resolved_by,
        }
    return carried


def break_assign(*, brk: Break, user: Any, actor: str) -> None:
    with tenant_context(brk.tenant_id), transaction.atomic():
        locked = Break.objects.select_for_update().get(pk=brk.pk)
        locked.assignee = user
        locked.save(update_fields=["assignee"])
        audit_record(event="reconciliation.break.assigned", tenant=locked.tenant, actor=actor,
                     detail={"recon_break": locked.pk, "kind": locked.kind,
                             "approver": None if user is None else user.pk})


def break_resolve(*, brk: Break, note: str, actor: str) -> bool:
    """Resolve with a note (required). Imported rows are never touched. False when it was
    already resolved (a repeated click)."""
    if not note.strip():
        raise ValueError("a resolution needs a note")
    with tenant_context(brk.tenant_id), transaction.atomic():
        locked = Break.objects.select_for_update().get(pk=brk.pk)
        if locked.status == Break.Status.RESOLVED:
            return False
        locked.status = Break.Status.RESOLVED
        locked.resolution_note = note.strip()
        locked.resolved_at = timezone.now()
        locked.resolved_by = actor
        locked.save(update_fields=["status", "resolution_note", "resolved_at", "resolved_by"])
        audit_record(event="reconciliation.break.resolved", tenant=locked.tenant, actor=actor,
                     detail={"recon_break": locked.pk, "kind": locked.kind, "note_hash": pii_hash(note)})
    brk.status = locked.status
    return True
