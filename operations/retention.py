"""Retention: closed invoices and everything hanging off them go after
`PAYPILOT_RETENTION_MONTHS`; raw webhook bodies are emptied after `PAYPILOT_WEBHOOK_BODY_DAYS`.

An invoice is closed when recovered, churned, exhausted or voided, and old when its last change
(`updated_at`) is before the cut-off; open invoices are never purged, however old.
Dependent rows are found the way `operations.records` finds them (every foreign key
pointing at the invoice, transitively, plus the decision rows naming it by `invoice_ref`),
so rows added by later apps go with their invoice: its refunds (PROTECT, deleted before it)
and its ledger inconsistencies (which also hold the external invoice id) included. Raw
payloads are the binary columns of tenant tables (today the webhook inbox's `body`); the
event row itself stays, with its status and outcome, so duplicate detection keeps working.

Reconciliation's imported rows are the tenant's accounting records (amounts, dates, order and
payout ids, no names): they stay, like customers, because past runs and the books need them.
What ties them to a person goes with the invoices' cut-off: the salted e-mail hash of an
order (`records.HASHED_EMAIL_COLUMNS`) older than `PAYPILOT_RETENTION_MONTHS` is emptied.
No run reads it, so a run's result does not change.

The purge works in batches (`batch_size` old invoices with their dependents, or that many
payloads emptied): each batch is its own transaction under
`append_only_override("retention_purge")` with its own platform audit event carrying its
counts, and a progress line is printed after it commits. No transaction spans the purge, so
an interrupt loses at most the batch in hand, and running the command again continues where
it stopped (what is left is exactly what still matches). Run it as the database owner.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from io import TextIOBase
from typing import IO, Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from ledger.models import Invoice
from operations import records
from paypilot.db import append_only_override
from paypilot.services import audit_record

CLOSED_STATES = tuple(sorted(Invoice.TERMINAL_STATES))  # voided too: nothing is owed, nothing left to do
BATCH_SIZE = 1000  # old invoices (or payloads) per batch: one transaction and one progress line each
PAYLOAD_TIME_FIELDS = ("received_at", "created_at")
PSEUDONYM_TIME_FIELDS = ("ordered_at", "created_at")


def months_before(moment: datetime, months: int) -> datetime:
    """The same wall-clock moment `months` calendar months earlier (day clamped)."""
    index = moment.year * 12 + moment.month - 1 - months
    year, month = divmod(index, 12)
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day)


def payload_columns() -> list[tuple[type[models.Model], models.Field, str]]:
    """(model, binary column, time field) for every raw payload column of a tenant table."""
    found: list[tuple[type[models.Model], models.Field, str]] = []
    for model in records.tenant_models():
        names = {f.name for f in model._meta.concrete_fields}
        time_field = next((n for n in PAYLOAD_TIME_FIELDS if n in names), None)
        if time_field is None:
            continue
        for f in model._meta.concrete_fields:
            if isinstance(f, models.BinaryField):
                found.append((model, f, time_field))
    return found


def pseudonym_columns() -> list[tuple[type[models.Model], models.Field, str]]:
    """(model, hashed e-mail column, time field) for every tenant table holding one."""
    found: list[tuple[type[models.Model], models.Field, str]] = []
    for model in records.tenant_models():
        names = {f.name for f in model._meta.concrete_fields}
        time_field = next((n for n in PSEUDONYM_TIME_FIELDS if n in names), None)
        if time_field is None:
            continue
        for f in model._meta.concrete_fields:
            if f.name in records.HASHED_EMAIL_COLUMNS:
                found.append((model, f, time_field))
    return found


@dataclass
class PurgeResult:
    invoice_cutoff: datetime
    body_cutoff: datetime
    counts: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    batches: int = 0


def _old_closed_invoices(cutoff: datetime) -> models.QuerySet[Invoice]:
    return Invoice.objects.filter(state__in=CLOSED_STATES, updated_at__lt=cutoff).order_by("pk")


def _dependents(invoice_pks: list[Any]) -> records.Rows:
    rows = records.closure(Invoice, invoice_pks)
    refs: dict[int, set[str]] = {}
    for tenant_id, external_id in Invoice.objects.filter(pk__in=invoice_pks).values_list(
        "tenant_id", "external_invoice_id"
    ):
        refs.setdefault(tenant_id, set()).add(external_id)
    for tenant_id, external_ids in refs.items():
        rows = records.merge(rows, records.by_invoice_ref(tenant_id, external_ids))
    return rows


def _count(counts: dict[str, int], key: str, n: int) -> None:
    if n:
        counts[key] = counts.get(key, 0) + n


# One unit of work: (what it is, the queryset of rows still to do, what to do with a batch of
# their keys -> counts of that batch). A batch is re-read each time (keyset after the last key
# seen), so a dry run, which changes nothing, walks forward and a real run sees only what is left.
Step = tuple[str, models.QuerySet[Any], Callable[[list[Any], bool], dict[str, int]]]


def _purge_invoices(pks: list[Any], dry_run: bool) -> dict[str, int]:
    counts: dict[str, int] = {}
    rows = _dependents(pks)
    for model in records.delete_order(rows):
        keys = rows[model]
        if not dry_run:
            for chunk in records.chunked(keys):
                model._base_manager.filter(pk__in=chunk).delete()
        _count(counts, model._meta.label, len(keys))
    return counts


def _emptier(model: type[models.Model], f: models.Field) -> Callable[[list[Any], bool], dict[str, int]]:
    empty = b"" if isinstance(f, models.BinaryField) else ""

    def run(pks: list[Any], dry_run: bool) -> dict[str, int]:
        if not dry_run:
            model._base_manager.filter(pk__in=pks).update(**{f.attname: empty})
        return {f"{model._meta.label}.{f.name}": len(pks)}
    return run


def _steps(result: PurgeResult) -> list[Step]:
    steps: list[Step] = [("invoices", _old_closed_invoices(result.invoice_cutoff), _purge_invoices)]
    for model, f, time_field in payload_columns():
        rows = model._base_manager.filter(**{f"{time_field}__lt": result.body_cutoff}).exclude(**{f.name: b""})
        steps.append((f"{model._meta.label}.{f.name}", rows.order_by("pk"), _emptier(model, f)))
    for model, f, time_field in pseudonym_columns():
        rows = model._base_manager.filter(**{f"{time_field}__lt": result.invoice_cutoff}).exclude(**{f.name: ""})
        steps.append((f"{model._meta.label}.{f.name}", rows.order_by("pk"), _emptier(model, f)))
    return steps


def retention_purge(
    *, dry_run: bool = False, now: datetime | None = None, progress: IO[str] | TextIOBase | None = None,
    actor: str = "system", batch_size: int = BATCH_SIZE,
) -> PurgeResult:
    """Purge what the retention settings say is too old, a batch per transaction, each with
    its audit event; a line per batch goes to `progress` once the batch has committed.
    A dry run counts and changes nothing. Raises whatever a batch raises, after the batches
    before it have committed: running it again continues from there."""
    now = now or timezone.now()
    result = PurgeResult(
        invoice_cutoff=months_before(now, settings.PAYPILOT_RETENTION_MONTHS),
        body_cutoff=now - timedelta(days=settings.PAYPILOT_WEBHOOK_BODY_DAYS),
        dry_run=dry_run,
    )
    if progress is not None:
        progress.write(f"retention: invoices closed before {result.invoice_cutoff:%Y-%m-%d}, "
                       f"raw bodies received before {result.body_cutoff:%Y-%m-%d}\n")
    for label, rows, work in _steps(result):
        total, done, last = rows.count(), 0, None
        while pks := list((rows if last is None else rows.filter(pk__gt=last)).values_list("pk", flat=True)[
            :batch_size
        ]):
            last = pks[-1]
            with transaction.atomic(), (nullcontext() if dry_run else append_only_override("retention_purge")):
                counts = work(pks, dry_run)
                if not dry_run:
                    audit_record(
                        event="operations.retention.purged", tenant=None, actor=actor,
                        detail={"counts": counts, "operation": "retention_purge", "batch": result.batches + 1},
                    )
            result.batches += 1
            done += len(pks)
            for key, n in counts.items():
                _count(result.counts, key, n)
            if progress is not None:
                rows_in_batch = sum(counts.values())
                progress.write(f"retention batch {result.batches}: {label} {done:,}/{total:,} "
                               f"({rows_in_batch:,} rows {'counted' if dry_run else 'purged'})\n")
                progress.flush()
    if not dry_run and result.batches == 0:  # nothing to do is recorded too
        with transaction.atomic():
            audit_record(event="operations.retention.purged", tenant=None, actor=actor,
                         detail={"counts": {}, "operation": "retention_purge", "batch": 0})
    return result
