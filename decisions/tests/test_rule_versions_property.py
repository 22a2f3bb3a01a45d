"""Property: whatever rows pass the guard rails, a tenant table never makes a no-retry code
retry, and never loosens a card-network rule."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from decisions import versions
from decisions.rules import BUILTIN_TABLE, NO_RETRY_CODES, decide
from decisions.tables import ESCALATION_LEVELS, TableRow

_rows = st.builds(
    TableRow,
    action=st.sampled_from(versions.ACTIONS),
    retry_in_days=st.integers(min_value=0, max_value=versions.MAX_WAIT_DAYS),
    offer=st.just("Our offer."),
    escalate_at=st.sampled_from(ESCALATION_LEVELS),
    max_attempts=st.none() | st.integers(min_value=1, max_value=versions.MAX_ATTEMPTS_LIMIT),
)


def _passes(code: str, row: TableRow) -> bool:
    try:
        versions.row_check(failure_code=code, row=row)
    except versions.GuardRailError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(code=st.sampled_from(versions.ROW_CODES), row=_rows, attempt=st.integers(1, 6), prior=st.integers(0, 6),
       mac=st.sampled_from(["", "01", "02", "03", "21", "25"]))
def test_accepted_rows_never_retry_what_must_not_be_retried(code: str, row: TableRow, attempt: int, prior: int,
                                                           mac: str) -> None:
    if not _passes(code, row):
        # A refused row is refused for a reason the rails name; nothing more to check.
        return
    table = versions.table_build(rows=[(code, row)], version_id=1, version_number=1)
    got = decide(failure_code=code, attempt=attempt, prior_failures=prior, table=table,
                 card_brand="mastercard" if mac else None, network_advice_code=mac or None)
    builtin = decide(failure_code=code, attempt=attempt, prior_failures=prior, table=BUILTIN_TABLE,
                     card_brand="mastercard" if mac else None, network_advice_code=mac or None)
    if code in NO_RETRY_CODES:
        assert got.schedule.retry_at is None
    if mac in {"03", "21"}:  # never again on these credentials, whatever the table says
        assert got.schedule.retry_at is None
        assert {c["rule_id"] for c in got.network_rules} == {c["rule_id"] for c in builtin.network_rules}
    if mac == "25" and got.schedule.retry_at is not None:  # not before 24 hours
        assert got.strategy.retry_in_days >= 1
    assert got.rule_version_id == 1 and got.rules_version == table.digest
