"""The morning review: match rate, money in breaks, biggest breaks explained, disputes due, to-do."""

from __future__ import annotations

from datetime import date
from typing import Any

from paypilot.models import Tenant


def morning_review(*, tenant: Tenant, as_of: date, store: bool = False, actor: str = "system") -> dict[str, Any]:
    raise NotImplementedError


def break_explain(*, tenant: Tenant, break_id: int) -> dict[str, Any]:
    raise NotImplementedError
