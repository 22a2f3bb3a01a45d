"""Refund check: is a refund appropriate and safe? Read-only; it never calls a provider."""

from __future__ import annotations

from typing import Any

from paypilot.models import Tenant


def refund_check(*, tenant: Tenant, order_id: str | None = None, charge_id: str | None = None,
                 amount_minor: int | None, currency: str | None) -> dict[str, Any]:
    raise NotImplementedError
