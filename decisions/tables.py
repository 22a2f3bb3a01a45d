"""The rules table as a value: the built-in table or a tenant's version, passed into decide().

Plain frozen dataclasses, no ORM, so `rules.decide()` stays a pure function of its inputs and
the table it is handed. `decisions.versions` builds a table from a tenant's stored version;
`rules.BUILTIN_TABLE` is the table from the committed CSV.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Churn-risk level from which the escalated (tighter) cadence applies; "never" turns it off.
ESCALATE_LOW = "low"
ESCALATE_MEDIUM = "medium"
ESCALATE_HIGH = "high"  # the built-in table's behaviour
ESCALATE_NEVER = "never"
ESCALATION_LEVELS: tuple[str, ...] = (ESCALATE_LOW, ESCALATE_MEDIUM, ESCALATE_HIGH, ESCALATE_NEVER)
_RISK_RANK = {"low": 0, "medium": 1, "high": 2}


@dataclass(frozen=True)
class TableRow:
    """What a table says for one failure code (or the default row)."""

    action: str
    retry_in_days: int
    offer: str
    escalate_at: str = ESCALATE_HIGH
    # The attempt number from which no further retry is proposed; None: no limit of our own
    # (the network rules still count attempts on their own).
    max_attempts: int | None = None

    def escalates(self, churn_risk: str) -> bool:
        if self.escalate_at == ESCALATE_NEVER:
            return False
        return _RISK_RANK[churn_risk] >= _RISK_RANK[self.escalate_at]


@dataclass(frozen=True)
class RuleTable:
    rows: Mapping[str, TableRow]  # failure code or "default" -> row
    digest: str  # stamped on every decision as rules_version
    version_id: int | None = None  # the tenant's RuleVersion id; None for the built-in table
    version_number: int | None = None  # the tenant's own numbering (1, 2, ...)
