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

Everything runs in one transaction under `append_only_override("retention_purge")` and ends
with one platform audit event carrying the counts. Run it as the database owner.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TextIO

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone
from tqdm import tqdm

from ledger.models import Invoice
from operations import records
from paypilot.db import append_only_override
from paypilot.services import audit_record

CLOSED_STATES = tuple(sorted(Invoice.TERMINAL_STATES))  # voided too: nothing is owed, nothing left to do
CHUNK = 500
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


def _old_closed_invoices(cutoff: datetime) -> models.QuerySet[Invoice]:
    return Invoice.objects.filter(state__in=CLOSED_STATES, updated_at__lt=cutoff).order_by("pk")


def _chunks(pks: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(pks), CHUNK):
        yield pks[start:start + CHUNK]


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


def retention_purge(
    *, dry_run: bool = False, now: datetime | None = None, progress: TextIO | None = None,
    actor: str = "system",
) -> PurgeResult:
    """Purge what the retention settings say is too old. A dry run counts and changes
    nothing. `progress`: a stream for a progress bar, shown only when it is a terminal."""
    now = now or timezone.now()
    result = PurgeResult(
        invoice_cutoff=months_before(now, settings.PAYPILOT_RETENTION_MONTHS),
        body_cutoff=now - timedelta(days=settings.PAYPILOT_WEBHOOK_BODY_DAYS),
        dry_run=dry_run,
    )
    with transaction.atomic(), (nullcontext() if dry_run else append_only_override("retention_purge")):
        invoice_pks = list(_old_closed_invoices(result.invoice_cutoff).values_list("pk", flat=True))
        payloads = [
            (model, f, list(
                model._base_manager.filter(**{f"{time_field}__lt": result.body_cutoff})
                .exclude(**{f.name: b""}).values_list("pk", flat=True)
            ))
            for model, f, time_field in payload_columns()
        ] + [
            (model, f, list(
                model._base_manager.filter(**{f"{time_field}__lt": result.invoice_cutoff})
                .exclude(**{f.name: ""}).values_list("pk", flat=True)
            ))
            for model, f, time_field in pseudonym_columns()
        ]
        total = len(invoice_pks) + sum(len(pks) for _, _, pks in payloads)
        interactive = bool(progress is not None and progress.isatty())
        with tqdm(total=total, disable=not interactive, file=progress, unit="row", desc="retention") as bar:
            for chunk in _chunks(invoice_pks):
                rows = _dependents(chunk)
                for model in records.delete_order(rows):
                    keys = rows[model]
                    if not dry_run:
                        model._base_manager.filter(pk__in=keys).delete()
                    _count(result.counts, model._meta.label, len(keys))
                bar.update(len(chunk))
            for model, f, pks in payloads:
                for chunk in _chunks(pks):
                    if not dry_run:
                        empty = b"" if isinstance(f, models.BinaryField) else ""
                        model._base_manager.filter(pk__in=chunk).update(**{f.attname: empty})
                    _count(result.counts, f"{model._meta.label}.{f.name}", len(chunk))
                    bar.update(len(chunk))
        if not dry_run:
            audit_record(
                event="operations.retention.purged", tenant=None, actor=actor,
                detail={"counts": result.counts, "operation": "retention_purge"},
            )
    return result

