"""Evidence-pack drafts: what to gather for a dispute's reason, what the data proves, a timeline."""

from __future__ import annotations

from datetime import date
from typing import Any

from paypilot.models import Tenant


def evidence_pack_draft(*, tenant: Tenant, dispute_id: str, as_of: date) -> dict[str, Any]:
    raise NotImplementedError
