"""The pure engine: order rules (property-based), the fee rounding rule, exports made safe."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from hypothesis import given
from hypothesis import strategies as st

from paypilot.money import percent_of_minor
from reconciliation.engine import (
    AMOUNT_MISMATCH,
    DUPLICATE_CAPTURE,
    MISSING_CAPTURE,
    Capture,
    csv_safe,
    order_breaks,
    result_dump,
)

amounts = st.integers(min_value=1, max_value=10**9)


@given(amount=amounts, captures=st.lists(amounts, max_size=5))
def test_order_breaks_properties(amount: int, captures: list[int]) -> None:
    caps = [Capture(f"t{i}", f"ch{i}", a, "USD") for i, a in enumerate(captures)]
    breaks = order_breaks(order_id="O", amount_minor=amount, currency="USD", captures=caps)
    kinds = [b.kind for b in breaks]
    if not caps:
        assert kinds == [MISSING_CAPTURE] and breaks[0].amount_minor == amount
    elif len(caps) > 1 and all(a < amount for a in captures):
        assert kinds == ([] if sum(captures) == amount else [AMOUNT_MISMATCH])
    else:
        # One capture is the capture; every other one is a duplicate of its own amount.
        assert kinds.count(DUPLICATE_CAPTURE) == len(caps) - 1
        assert sum(b.amount_minor for b in breaks if b.kind == DUPLICATE_CAPTURE) == sum(captures) - (
            amount if amount in captures else captures[0])
        assert kinds.count(AMOUNT_MISMATCH) == (0 if amount in captures else 1)
    for b in breaks:  # every break names the order and says its numbers
        assert b.refs["order"] == ["O"] and "USD" in b.explanation


@given(amount=st.integers(min_value=0, max_value=10**12), micro=st.integers(min_value=0, max_value=200_000))
def test_sql_fee_rule_equals_decimal_half_up(amount: int, micro: int) -> None:
    # The run computes (amount * micro + 500000) / 1000000 in integer SQL; it must equal
    # the Decimal half-up rounding the contract means.
    expected = int((Decimal(amount) * Decimal(micro) / Decimal(1_000_000)).quantize(Decimal(1), ROUND_HALF_UP))
    assert (amount * micro + 500_000) // 1_000_000 == expected == percent_of_minor(amount, micro)


def test_csv_safe_neutralises_formula_starts_only() -> None:
    for hostile in ('=HYPERLINK("http://x","y")', "+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"):
        assert csv_safe(hostile) == "'" + hostile
    assert csv_safe("NW-1001") == "NW-1001" and csv_safe(-500) == -500 and csv_safe("") == ""


def test_result_dump_is_canonical() -> None:
    assert result_dump({"b": 1, "a": {"y": [2], "x": "é"}}) == '{"a":{"x":"é","y":[2]},"b":1}'
