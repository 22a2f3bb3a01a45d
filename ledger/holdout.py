"""Holdout assignment: a deterministic, seeded hash of the invoice id.

bucket = first 8 bytes of sha256("{seed}:{invoice_id}") as a big-endian integer, mod 100;
the invoice is held out when bucket < pct. The arm is computed only at first sight and
stored on the invoice, so changing PAYPILOT_HOLDOUT_PCT or PAYPILOT_HOLDOUT_SEED later
never moves an invoice between arms.
"""

from __future__ import annotations

import hashlib

from django.conf import settings

from ledger.models import Invoice


def holdout_bucket(*, seed: str, invoice_id: str) -> int:
    digest = hashlib.sha256(f"{seed}:{invoice_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100


def holdout_pct() -> int:
    """The configured percentage, clamped to 0..100 (settings already clamp; tests override)."""
    return max(0, min(100, int(settings.PAYPILOT_HOLDOUT_PCT)))


def holdout_arm_for(*, invoice_id: str, pct: int | None = None, seed: str | None = None) -> str:
    """The arm a never-seen invoice gets now. Callers store it; they never recompute it."""
    pct = holdout_pct() if pct is None else max(0, min(100, pct))
    seed = settings.PAYPILOT_HOLDOUT_SEED if seed is None else seed
    if holdout_bucket(seed=seed, invoice_id=invoice_id) < pct:
        return Invoice.Arm.HOLDOUT
    return Invoice.Arm.TREATMENT
