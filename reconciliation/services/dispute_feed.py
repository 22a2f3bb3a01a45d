"""Live disputes: Stripe's `charge.dispute.*` events, stored as one row per dispute id.

Registered as the dispute sink of `paypilot.disputes` (AppConfig.ready); the webhook
worker calls it inside the event's transaction, after the inbox verified the signature and
stored the raw event, so a redelivery never reaches it twice.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models.functions import Now

from paypilot.disputes import DisputeReport
from paypilot.models import Tenant
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context
from reconciliation.models import DisputeRow

# Outcomes stored on the webhook event.
OUTCOME_CREATED = "dispute_recorded"  # the first event of this dispute: a live row was created
OUTCOME_UPDATED = "dispute_updated"  # a newer event updated the live row
OUTCOME_OLDER = "noop_older_dispute_event"  # an event older than the one already applied
# Statuses after which the dispute is decided; an event of the same second never reopens one.
FINAL_STATUSES = frozenset({"won", "lost", "warning_closed", "prevented", "charge_refunded"})


def _older(row: DisputeRow, report: DisputeReport) -> bool:
    """Stripe's `created` has one-second resolution: an earlier second is older; within the
    same second, arrival order holds except that a decided dispute is not reopened."""
    applied = row.last_event_at
    if applied is None:
        return False
    if report.occurred_at < applied:
        return True
    return report.occurred_at == applied and row.status in FINAL_STATUSES and report.status not in FINAL_STATUSES


def _fields(report: DisputeReport, event_ref: str) -> dict[str, object]:
    return {
        "charge_id": report.charge_id, "amount_minor": report.amount_minor, "currency": report.currency,
        "reason": report.reason, "status": report.status, "evidence_due_by": report.evidence_due_by,
        # The database's clock, as for file rows (their known_at is the column's default): readers
        # order a dispute's rows by known_at, so both kinds must be stamped by one clock.
        "created_at": report.created_at, "known_at": Now(), "last_event_at": report.occurred_at,
        "last_event_id": event_ref[:200],
        "details": {**report.details, "last_event_type": report.event_type},
    }


def dispute_record_live(*, tenant: Tenant, report: DisputeReport, event_ref: str) -> str:
    """Create or update the tenant's live row for `report.dispute_id` (row locked), audited
    in the same transaction. An event older than the one applied changes nothing. Returns
    the outcome code. File rows of the same dispute are never touched: readers take the
    state learned last (see `selectors` and the run)."""
    with tenant_context(tenant), transaction.atomic():
        live = DisputeRow.objects.filter(tenant=tenant, dispute_id=report.dispute_id, file__isnull=True)
        row = live.select_for_update().first()
        if row is None:
            try:
                with transaction.atomic():
                    row = DisputeRow.objects.create(tenant=tenant, file=None, line=0,
                                                    dispute_id=report.dispute_id,
                                                    source=DisputeRow.Source.STRIPE_WEBHOOK,
                                                    **_fields(report, event_ref))
            except IntegrityError:  # another worker created it first: update that row
                row = live.select_for_update().get()
            else:
                _audit(tenant, row, event_ref, status_from="", action="created")
                return OUTCOME_CREATED
        if _older(row, report):
            return OUTCOME_OLDER
        previous = row.status
        for name, value in _fields(report, event_ref).items():
            setattr(row, name, value)
        row.save()
        _audit(tenant, row, event_ref, status_from=previous, action="updated")
        return OUTCOME_UPDATED


def _audit(tenant: Tenant, row: DisputeRow, event_ref: str, *, status_from: str, action: str) -> None:
    audit_record(event=f"reconciliation.dispute.{action}", tenant=tenant, actor="webhook:stripe",
                 detail={"recon_dispute": row.pk, "webhook_event": event_ref, "provider": "stripe",
                         "status_from": status_from, "status_to": row.status,
                         "amount_minor": row.amount_minor, "currency": row.currency, "action": action})


