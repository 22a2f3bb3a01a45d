"""Cells shared by the provider and bank readers added for more formats: minor-unit integers."""

from __future__ import annotations

import re

REASON_MIXED_CURRENCIES = "mixed_currencies"
INT64_MAX = 2**63 - 1
_DIGITS = re.compile(r"[+-]?[0-9]{1,30}")


def minor_int(text: str, sign: int = 1) -> int:
    """An amount already in minor units ("4200", "-15"), times `sign`; ValueError on anything
    else and on a value no 64-bit column holds (refused, not wrapped or truncated)."""
    value = text.strip()
    if not _DIGITS.fullmatch(value):
        raise ValueError(f"{value[:40]!r} is not a whole number of minor units")
    number = int(value) * sign
    if abs(number) > INT64_MAX:
        raise ValueError("the amount is beyond a 64-bit integer")
    return number
