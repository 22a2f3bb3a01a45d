"""The review the analysis tools read: the stored run when its inputs are unchanged, else
computed now and not stored (reading tools write nothing, not even a run)."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django.utils import timezone

from paypilot.models import Tenant
from reconciliation import engine
from reconciliation.models import Break, Run
from reconciliation.services.runs import input_digest, run_compute

from .schemas import money
from .scope import REASON_INVALID, ToolRefused

DISPUTE_APPROVER = engine.FINANCE


def as_of_parse(*, tenant: Tenant, value: str | None) -> date:
    """The date asked for, else the newest stored run's date, else today (UTC)."""
    if value:
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise ToolRefused(REASON_INVALID, "as_of must be a date, YYYY-MM-DD", argument="as_of") from None
    latest = Run.objects.filter(tenant=tenant).order_by("-as_of", "-created_at", "-pk").first()
    return latest.as_of if latest is not None else timezone.now().date()


def review_load(*, tenant: Tenant, as_of: date) -> tuple[dict[str, Any], Run | None]:
    """(result JSON data, the stored run it came from or None)."""
    digest = input_digest(tenant=tenant, as_of=as_of)
    run = Run.objects.filter(tenant=tenant, as_of=as_of, input_digest=digest).order_by("-pk").first()
    if run is not None:
        return json.loads(run.result_json), run
    result, _ = run_compute(tenant=tenant, as_of=as_of)
    return result, None


def break_out(item: dict[str, Any], position: int, stored: Break | None) -> dict[str, Any]:
    out = {
        "position": position, "break_id": stored.pk if stored is not None else None, "kind": item["kind"],
        "amount": money(item["amount_minor"], item["currency"]), "refs": item["refs"],
        "explanation": item["explanation"], "contract_version": item.get("contract_version"),
        "approver": engine.TODO[item["kind"]][1],
    }
    if stored is not None:
        out["status"] = stored.status
    return out


def stored_breaks(run: Run | None) -> dict[int, Break]:
    return {} if run is None else {b.position: b for b in Break.objects.filter(run=run)}
