"""Minor units, exponents and display strings."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from ledger.money import (
    CURRENCY_EXPONENTS,
    DEFAULT_EXPONENT,
    currency_exponent,
    format_minor,
    to_major,
    to_minor,
)

FACTS = Path(__file__).resolve().parents[3] / "shared" / "facts" / "currency_exponents.json"


@pytest.mark.skipif(not FACTS.is_file(), reason="shared/facts not beside the checkout")
def test_exponent_table_is_a_faithful_copy_of_the_facts_file() -> None:
    facts = json.loads(FACTS.read_text())
    expected = {c.upper(): 0 for c in facts["zero_decimal"]} | {c.upper(): 3 for c in facts["three_decimal"]}
    assert CURRENCY_EXPONENTS == expected
    assert DEFAULT_EXPONENT == facts["default_exponent"]


@pytest.mark.parametrize(("code", "exp"), [("JPY", 0), ("jpy", 0), ("USD", 2), ("eur", 2), ("KWD", 3), ("bhd", 3)])
def test_currency_exponent(code: str, exp: int) -> None:
    assert currency_exponent(code) == exp


@pytest.mark.parametrize(("amount", "code", "text"), [
    (1234, "USD", "12.34"), (1000, "JPY", "1,000"), (1234567, "KWD", "1,234.567"),
    (0, "USD", "0.00"), (123456789, "EUR", "1,234,567.89"), (5, "KWD", "0.005"),
])
def test_format_minor(amount: int, code: str, text: str) -> None:
    assert format_minor(amount, code) == text


def test_to_minor_is_exact() -> None:
    assert to_minor("1499.0", "usd") == 149900
    assert to_minor(Decimal("12.345"), "KWD") == 12345
    assert to_minor(1000, "JPY") == 1000
    assert to_major(12345, "KWD") == Decimal("12.345")
    assert to_major(1000, "JPY") == Decimal("1000")


@pytest.mark.parametrize("bad", ["12.345", "abc", "NaN", 1.5])
def test_to_minor_refuses_rounding_and_non_numbers(bad: object) -> None:
    with pytest.raises(ValueError):
        to_minor(bad, "USD")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "US", "USDX", "12$"])
def test_bad_currency_code_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        currency_exponent(bad)


def test_iso_4217_holds_every_exponent_code_and_refuses_non_currencies() -> None:
    from ledger.money import ISO_4217, THREE_DECIMAL, ZERO_DECIMAL, currency_known

    assert ZERO_DECIMAL | THREE_DECIMAL <= ISO_4217
    assert all(len(code) == 3 and code.isupper() for code in ISO_4217)
    assert currency_known("usd") and currency_known(" EUR ") and currency_known("XCG")
    for code in ("XXX", "QQQ", "XTS", "XAU", "XDR", "CHE", "", "US", "USDD", None, 840):
        assert not currency_known(code), code
