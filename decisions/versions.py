"""Guard rails and digests for tenant rule versions: pure functions, no ORM.

A tenant version may change, per failure code, the action (including `no_email`: "don't email
for this code", which the pipeline honours by writing no draft), the wait before retry, its own
attempt limit, the offer text and the churn risk from which the cadence tightens. It may
never make a no-retry code or a no-retry action retry (`rules.NO_RETRY_CODES`,
`rules.NO_RETRY_ACTIONS`, from facts/failure_codes.json), and it cannot touch the card-network
rules at all: `rules.decide()` applies those after whatever table it is given.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from types import MappingProxyType

from decisions.rules import (
    BUILTIN_TABLE,
    DEFAULT_RULE,
    FAILURE_CODES,
    NO_EMAIL_ACTION,
    NO_RETRY_ACTIONS,
    NO_RETRY_CODES,
    OFFERS,
    RULES_VERSION,
)
from decisions.tables import ESCALATION_LEVELS, RuleTable, TableRow

ROW_CODES: tuple[str, ...] = (*FAILURE_CODES, DEFAULT_RULE)
ACTIONS: tuple[str, ...] = tuple(OFFERS)
# What a no-retry code may ask for: a different method, a manual payment, new card details
# (the built-in row of card_details_invalid) or no email at all (with no wait, so no retry),
# never a retry of what failed.
NO_RETRY_CODE_ACTIONS: frozenset[str] = NO_RETRY_ACTIONS | {"request_card_update", NO_EMAIL_ACTION}
MAX_WAIT_DAYS = 30  # a wait longer than a billing month would let the next invoice overtake it
MAX_ATTEMPTS_LIMIT = 20
MAX_OFFER_CHARS = 300

# Reason codes of the guard rails (form errors and service errors name one of these and the row).
NO_RETRY_CODE_RETRIES = "no_retry_code_retries"
NO_RETRY_ACTION_RETRIES = "no_retry_action_retries"
UNKNOWN_ACTION = "unknown_action"
UNKNOWN_FAILURE_CODE = "unknown_failure_code"
WAIT_OUT_OF_RANGE = "wait_out_of_range"
ATTEMPTS_OUT_OF_RANGE = "attempts_out_of_range"
UNKNOWN_ESCALATION = "unknown_escalation"
OFFER_INVALID = "offer_invalid"


class GuardRailError(ValueError):
    """A row breaks a guard rail; `reason` is the code, `field` the form field at fault."""

    def __init__(self, *, failure_code: str, reason: str, field: str, message: str) -> None:
        super().__init__(message)
        self.failure_code = failure_code
        self.reason = reason
        self.field = field


def row_check(*, failure_code: str, row: TableRow) -> None:
    """Raise GuardRailError when `row` may not stand for `failure_code`; the message names the rule."""
    def fail(reason: str, field: str, message: str) -> None:
        raise GuardRailError(failure_code=failure_code, reason=reason, field=field,
                             message=f"{failure_code}: {message} ({reason})")

    if failure_code not in ROW_CODES:
        fail(UNKNOWN_FAILURE_CODE, "failure_code", "not a failure code of the table")
    if row.action not in ACTIONS:
        fail(UNKNOWN_ACTION, "action", f"action must be one of {', '.join(ACTIONS)}")
    if failure_code in NO_RETRY_CODES and (row.action not in NO_RETRY_CODE_ACTIONS or row.retry_in_days > 0):
        fail(NO_RETRY_CODE_RETRIES, "action" if row.action not in NO_RETRY_CODE_ACTIONS else "retry_in_days",
             f"is a no-retry code: its action must be one of {', '.join(sorted(NO_RETRY_CODE_ACTIONS))} "
             "with no wait before retry")
    if row.action in NO_RETRY_ACTIONS and row.retry_in_days > 0:
        fail(NO_RETRY_ACTION_RETRIES, "retry_in_days", f"{row.action} never retries: the wait must be 0")
    if not 0 <= row.retry_in_days <= MAX_WAIT_DAYS:
        fail(WAIT_OUT_OF_RANGE, "retry_in_days", f"the wait must be 0 to {MAX_WAIT_DAYS} days")
    if row.max_attempts is not None and not 1 <= row.max_attempts <= MAX_ATTEMPTS_LIMIT:
        fail(ATTEMPTS_OUT_OF_RANGE, "max_attempts", f"maximum attempts must be 1 to {MAX_ATTEMPTS_LIMIT}")
    if row.escalate_at not in ESCALATION_LEVELS:
        fail(UNKNOWN_ESCALATION, "escalate_at", f"escalation must be one of {', '.join(ESCALATION_LEVELS)}")
    if not row.offer.strip() or len(row.offer) > MAX_OFFER_CHARS or "<" in row.offer:
        fail(OFFER_INVALID, "offer", f"the offer must be 1 to {MAX_OFFER_CHARS} characters of plain text")


def builtin_rows() -> dict[str, TableRow]:
    """The built-in table's rows: what a new draft starts from."""
    return dict(BUILTIN_TABLE.rows)


def table_digest(rows: Mapping[str, TableRow]) -> str:
    """"t-" + 12 hex of the rows and the built-in version (which covers the network rules and
    the no-retry lists), so a digest names the whole table a decision came from."""
    content = {"rows": {code: asdict(row) for code, row in sorted(rows.items())}, "builtin": RULES_VERSION}
    blob = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
    return "t-" + hashlib.sha256(blob).hexdigest()[:12]


def table_build(*, rows: Iterable[tuple[str, TableRow]], version_id: int | None,
                version_number: int | None) -> RuleTable:
    """A RuleTable from a version's rows, every row checked; codes it lacks keep the built-in row."""
    merged = builtin_rows()
    for code, row in rows:
        row_check(failure_code=code, row=row)
        merged[code] = row
    return RuleTable(rows=MappingProxyType(merged), digest=table_digest(merged), version_id=version_id,
                     version_number=version_number)
