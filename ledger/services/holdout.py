"""The tenant's holdout setting: changed only here, audited in the same transaction."""

from __future__ import annotations

from datetime import date

from django.db import transaction

from paypilot.models import Tenant
from paypilot.services import audit_record

EVENT_HOLDOUT_CHANGED = "ledger.holdout.changed"


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day else None


def tenant_holdout_set(*, tenant: Tenant, pct: int | None, start: date | None, actor: str) -> bool:
    """Set the tenant's holdout percentage (None: back to PAYPILOT_HOLDOUT_PCT) and start
    date. Only invoices first seen afterwards are affected: stored arms never move. Writes an
    audit event `ledger.holdout.changed` (old and new values) with the change; returns False
    (and writes nothing) when nothing changed. Raises ValueError for a percentage outside 0..100."""
    if pct is not None and (isinstance(pct, bool) or not isinstance(pct, int) or not 0 <= pct <= 100):
        raise ValueError("holdout pct must be an integer from 0 to 100, or None for the default")
    with transaction.atomic():
        locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
        before = {"pct": locked.holdout_pct, "start": _iso(locked.holdout_start)}
        after = {"pct": pct, "start": _iso(start)}
        if before == after:
            return False
        Tenant.objects.filter(pk=tenant.pk).update(holdout_pct=pct, holdout_start=start)
        audit_record(event=EVENT_HOLDOUT_CHANGED, tenant=locked, actor=actor,
                     detail={"holdout_from": before, "holdout_to": after})
    tenant.holdout_pct, tenant.holdout_start = pct, start
    return True
