"""Holdout assignment: a deterministic, seeded hash of the invoice id, with the percentage
taken from the tenant's own setting (admin) or the global default.

bucket = first 8 bytes of sha256("{seed}:{invoice_id}") as a big-endian integer, mod 100;
the invoice is held out when bucket < pct. The arm is computed only at first sight and
stored on the invoice, so changing the tenant's holdout, PAYPILOT_HOLDOUT_PCT or
PAYPILOT_HOLDOUT_SEED later never moves an invoice between arms.

The percentage in force for a tenant at a moment: the tenant's `holdout_pct` when it is set
and the moment is on or after its `holdout_start` (no start: from now on); otherwise
PAYPILOT_HOLDOUT_PCT.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from django.conf import settings
from django.utils import timezone

from ledger.models import Invoice
from paypilot.models import Tenant

SOURCE_TENANT = "tenant"  # the tenant's own holdout setting is in force
SOURCE_DEFAULT = "default"  # PAYPILOT_HOLDOUT_PCT is in force


def holdout_bucket(*, seed: str, invoice_id: str) -> int:
    digest = hashlib.sha256(f"{seed}:{invoice_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100


def holdout_pct() -> int:
    """The configured default percentage, clamped to 0..100 (settings already clamp; tests override)."""
    return max(0, min(100, int(settings.PAYPILOT_HOLDOUT_PCT)))


def holdout_in_force(*, tenant: Tenant | None, at: datetime | None = None) -> tuple[int, str]:
    """(percentage, source) for an invoice of `tenant` first seen at `at` (default now)."""
    if tenant is not None and tenant.holdout_pct is not None:
        day = (at or timezone.now()).astimezone(UTC).date()
        if tenant.holdout_start is None or day >= tenant.holdout_start:
            return max(0, min(100, tenant.holdout_pct)), SOURCE_TENANT
    return holdout_pct(), SOURCE_DEFAULT


def holdout_arm_for(*, invoice_id: str, pct: int | None = None, seed: str | None = None,
                    tenant: Tenant | None = None, at: datetime | None = None) -> str:
    """The arm a never-seen invoice gets now. Callers store it; they never recompute it.
    An explicit `pct` wins; otherwise the tenant's holdout in force at `at`."""
    pct = holdout_in_force(tenant=tenant, at=at)[0] if pct is None else max(0, min(100, pct))
    seed = settings.PAYPILOT_HOLDOUT_SEED if seed is None else seed
    if holdout_bucket(seed=seed, invoice_id=invoice_id) < pct:
        return Invoice.Arm.HOLDOUT
    return Invoice.Arm.TREATMENT
