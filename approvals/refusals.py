"""Refusal review: everything PayPilot declined to do, newest first, each with its gate.

Four sources, each read from the database:
- `decision_refusals`: `POST /decide` bodies refused (decisions.DecisionRefusal; gate and
  reason only, never the body);
- `suppressed_sends`: sends a send gate refused (approvals.SuppressedSend), dry runs
  included;
- `decision_fall_throughs`: decisions whose failure code matched no row and fell through to
  the default row (decisions.DecisionRecord with matched=False);
- `guard_swaps`: drafts whose model-written copy the output guard replaced with fixed copy
  (dunning.Draft with fallback_used=True);
- `delivery_unknown`: sends handed to the backend without a recorded acceptance (their
  worker died, or the provider's answer was lost), or whose one automatic retry died too,
  waiting for a person to mark them sent or resend them
  (approvals.EmailSend with status `unknown`; see `approvals.claims`).
The answer carries a `sources` map saying which were read and how many rows each gave,
so "no rows" can be told apart from "not looked at". A suppressed-send reason the gate
table does not know is listed as `unclassified`, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.apps import apps
from django.db import models

from approvals.gates import REASON_GATES
from approvals.models import EmailSend, SuppressedSend
from paypilot.models import Tenant

UNCLASSIFIED = "unclassified"
MAX_LIMIT = 500


@dataclass(frozen=True)
class Refusal:
    source: str
    gate: str
    reason: str
    created_at: datetime
    tenant: str
    ids: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "gate": self.gate, "reason": self.reason,
            "created_at": self.created_at.isoformat(), "tenant": self.tenant, **self.ids,
        }


def _scoped(qs: models.QuerySet[Any], tenant: Tenant | None) -> models.QuerySet[Any]:
    return qs if tenant is None else qs.filter(tenant=tenant)


def _decision_refusals(tenant: Tenant | None, limit: int) -> list[Refusal]:
    model = apps.get_model("decisions", "DecisionRefusal")
    rows = _scoped(model.objects.select_related("tenant"), tenant).order_by("-created_at", "-pk")
    return [
        Refusal("decision_refusals", r.gate, r.reason, r.created_at, r.tenant.slug,
                {"refusal_id": r.refusal_id, "field": r.field})
        for r in rows[:limit]
    ]


def _suppressed_sends(tenant: Tenant | None, limit: int) -> list[Refusal]:
    rows = _scoped(SuppressedSend.objects.select_related("tenant"), tenant).order_by("-created_at", "-pk")
    return [
        Refusal("suppressed_sends", REASON_GATES.get(r.reason, UNCLASSIFIED), r.reason,
                r.created_at, r.tenant.slug,
                {"suppressed_id": r.pk, "approval": r.approval_id, "invoice_id": r.invoice_id,
                 "dry_run": r.dry_run})
        for r in rows[:limit]
    ]


def _fall_throughs(tenant: Tenant | None, limit: int) -> list[Refusal]:
    model = apps.get_model("decisions", "DecisionRecord")
    rows = _scoped(model.objects.select_related("tenant"), tenant).filter(matched=False)
    return [
        Refusal("decision_fall_throughs", "rules_table", "fell_through", r.decided_at,
                r.tenant.slug,
                {"decision": r.pk, "invoice_ref": r.invoice_ref, "failure_code": r.failure_code,
                 "rule_fired": r.rule_fired, "rules_version": r.rules_version})
        for r in rows.order_by("-decided_at", "-pk")[:limit]
    ]


def _guard_swaps(tenant: Tenant | None, limit: int) -> list[Refusal]:
    model = apps.get_model("dunning", "Draft")
    # fallback_used alone also covers a failed or over-budget model call; a guard swap is
    # the one where the model's copy came back and the guard said no.
    rows = _scoped(model.objects.select_related("tenant"), tenant).filter(
        fallback_used=True, guard_verdict__ok=False
    )
    out = []
    for r in rows.order_by("-created_at", "-pk")[:limit]:
        reasons = [str(x) for x in r.guard_verdict.get("reasons", [])] or ["guard_swapped"]
        out.append(
            Refusal("guard_swaps", "output_guard", ",".join(reasons), r.created_at, r.tenant.slug,
                    {"draft": r.pk, "invoice_id": r.invoice_id})
        )
    return out


def _delivery_unknown(tenant: Tenant | None, limit: int) -> list[Refusal]:
    rows = _scoped(EmailSend.objects.select_related("tenant"), tenant).filter(
        status=EmailSend.Status.UNKNOWN
    )
    return [
        # No later timestamp is kept on the row: the claim time is when its sender died.
        Refusal("delivery_unknown", "delivery", r.error_code or UNCLASSIFIED,
                r.claimed_at or r.created_at, r.tenant.slug,
                {"send": r.pk, "approval": r.approval_id, "invoice_id": r.invoice_id,
                 "attempts": r.attempts})
        for r in rows.order_by("-claimed_at", "-pk")[:limit]
    ]


SOURCES: dict[str, Callable[[Tenant | None, int], list[Refusal]]] = {
    "decision_refusals": _decision_refusals,
    "suppressed_sends": _suppressed_sends,
    "decision_fall_throughs": _fall_throughs,
    "guard_swaps": _guard_swaps,
    "delivery_unknown": _delivery_unknown,
}


def refusal_list(*, tenant: Tenant | None, limit: int = 100,
                 sources: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Newest-first refusals of `tenant` (None: every tenant, for platform admins).

    Returns {"items": [Refusal...], "sources": {name: {"status": "read"|"not_installed"|
    "not_requested", "count": n}}}. Each source is read up to `limit` rows, then merged.
    """
    limit = max(1, min(limit, MAX_LIMIT))
    wanted = sources or tuple(SOURCES)
    items: list[Refusal] = []
    report: dict[str, dict[str, Any]] = {}
    for name, reader in SOURCES.items():
        if name not in wanted:
            report[name] = {"status": "not_requested", "count": 0}
            continue
        try:
            rows = reader(tenant, limit)
        except LookupError:  # the owning app's model is not installed in this deployment
            report[name] = {"status": "not_installed", "count": 0}
            continue
        report[name] = {"status": "read", "count": len(rows)}
        items.extend(rows)
    items.sort(key=lambda r: r.created_at, reverse=True)
    return {"items": items[:limit], "sources": report}
