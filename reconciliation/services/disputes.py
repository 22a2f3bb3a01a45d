"""Disputes: the list (file rows and live webhook rows merged, one per dispute id) and triage."""

from __future__ import annotations

from datetime import date
from typing import Any

from paypilot.models import Tenant


def dispute_list(*, tenant: Tenant, as_of: date, status: str | None = None) -> list[dict[str, Any]]:
    raise NotImplementedError


def dispute_triage(*, tenant: Tenant, dispute_id: str, as_of: date) -> dict[str, Any]:
    raise NotImplementedError
