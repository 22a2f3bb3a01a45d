"""One cell to a canonical value: currencies, amounts in minor units, export dates and day numbers."""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation

from paypilot.money import currency_exponent, currency_known
from paypilot.money import currency_normalise as _normalise
from reconciliation.formats.base import EPOCH
from reconciliation.money_words import DOLLAR_CODES, SYMBOLS


def currency_normalise(code: str) -> str:
    """Upper-case ISO 4217 code one can pay in; ValueError for QQQ, XXX, fund codes."""
    value = _normalise(code)
    if not currency_known(value):
        raise ValueError(f"{value} is not an ISO 4217 currency")
    return value


_THOUSANDS = re.compile(r"[\s'\u00a0\u202f]")


_PLAIN = re.compile(r"-?[0-9]{1,15}")
_MINOR = re.compile(r"[+-]?[0-9]{1,40}")
# The amount columns are 64-bit: a larger amount is refused with its line, never wrapped.
INT64_MAX = 2**63 - 1


@functools.lru_cache(maxsize=256)
def _exponent(currency: str) -> int:
    return currency_exponent(currency)


def _plain_to_minor(value: str, separator: str, exponent: int) -> int | None:
    """Fast path for the common cell ("-12.50", "1234", "12,5"): integer arithmetic only.
    None when the cell needs the general parser (thousands separators, brackets, ...)."""
    whole, sep, frac = value.partition(separator)
    if not _PLAIN.fullmatch(whole) or (sep and not (0 < len(frac) <= exponent and frac.isdigit()
                                                    and frac.isascii())):
        return None
    units = int(whole.lstrip("-") or "0") * 10**exponent + (int(frac.ljust(exponent, "0")) if sep else 0)
    return -units if whole.startswith("-") else units


# A currency written next to the amount, as shop exports do ("€ 24,95", "1.204,00 €", "$12.50",
# "EUR 24.95"): accepted when it is the row's currency, refused when it names another.
_MARKED = re.compile(r"(?P<pre>[^\d\s()+\-.,']{1,4}|[A-Z]{3})?\s?(?P<num>[-+]?\d[\d.,\s'\u00a0\u202f]*-?)\s?"
                     r"(?P<post>[^\d\s()+\-.,']{1,4}|[A-Z]{3})?")


def _without_marker(value: str, currency: str) -> str:
    match = _MARKED.fullmatch(value)
    if match is None or not (match.group("pre") or match.group("post")):
        return value
    marker = (match.group("pre") or match.group("post")).strip()
    named = DOLLAR_CODES if marker == "$" else {SYMBOLS.get(marker, marker)}
    if currency not in named:
        raise ValueError(f"the amount is marked {marker}, the row's currency is {currency}")
    return match.group("num").strip()


def amount_to_minor(text: str, currency: str, *, decimal_separator: str = ".") -> int:
    """A major-unit amount as written in an export ("1.234,56", "-12.50", "(3.00)") to minor
    units, exactly; ValueError on anything that is not a number with at most the currency's
    decimals (a silently rounded import is how books drift)."""
    value = text.strip()
    fast = _plain_to_minor(value, decimal_separator, _exponent(currency))
    if fast is not None:
        return fast
    negative = value.startswith("(") and value.endswith(")")
    if negative:
        value = value[1:-1]
    value = _without_marker(value, currency)
    value = _THOUSANDS.sub("", value)
    if decimal_separator == ",":
        value = value.replace(".", "").replace(",", ".")
    else:
        value = value.replace(",", "")
    if value.endswith("-"):  # trailing minus, common in German bank exports
        value = "-" + value[:-1]
    try:
        number = Decimal(value)
    except InvalidOperation as exc:
        raise ValueError("not a number") from exc
    if not number.is_finite():
        raise ValueError("not a finite number")
    # "1e1000000" is a valid Decimal: scaling it would raise decimal.Overflow (not a
    # refusal), and "1e-1000030" would underflow to 0.
    if number and number.adjusted() > 30:
        raise ValueError("the amount is beyond a 64-bit integer")
    if number and number.adjusted() < -30:
        raise ValueError("more decimals than the currency has")
    scaled = number.scaleb(currency_exponent(currency))
    if scaled != scaled.to_integral_value():
        raise ValueError("more decimals than the currency has")
    minor = int(scaled)
    if abs(minor) > INT64_MAX:
        raise ValueError("the amount is beyond a 64-bit integer")
    return -minor if negative else minor


def minor_int(text: str, sign: int = 1) -> int:
    """An amount already in minor units ("4200", "-15", as PayPal and BAI2 write them), times
    `sign`; ValueError on anything else and on a value no 64-bit column holds."""
    value = text.strip()
    if not _MINOR.fullmatch(value):
        raise ValueError(f"{value[:40]!r} is not a whole number of minor units")
    number = int(value) * sign
    if abs(number) > INT64_MAX:
        raise ValueError("the amount is beyond a 64-bit integer")
    return number


def day_number(value: date) -> int:
    return (value - EPOCH).days


_FIELD_WIDTH = {"%d": 2, "%m": 2, "%Y": 4, "%H": 2, "%M": 2, "%S": 2}
_FIELD_NAME = {"%d": "day", "%m": "month", "%Y": "year", "%H": "hour", "%M": "minute", "%S": "second"}


@functools.lru_cache(maxsize=64)
def _fixed_width(date_format: str) -> tuple[int, tuple[tuple[str, int, int], ...], tuple[tuple[int, str], ...]] | None:
    """Slices of a format made only of zero-padded fields and literal separators
    ("%d/%m/%Y %H:%M"): such cells are read by slicing, ~10x faster than strptime."""
    fields, literals, pos, i = [], [], 0, 0
    while i < len(date_format):
        token = date_format[i:i + 2]
        if token in _FIELD_WIDTH:
            fields.append((_FIELD_NAME[token], pos, pos + _FIELD_WIDTH[token]))
            pos += _FIELD_WIDTH[token]
            i += 2
        elif date_format[i] == "%":
            return None
        else:
            literals.append((pos, date_format[i]))
            pos += 1
            i += 1
    return (pos, tuple(fields), tuple(literals)) if {"day", "month", "year"} <= {f[0] for f in fields} else None


def parse_when(text: str, date_format: str) -> datetime:
    """Naive export time under `date_format` ("iso" for ISO 8601), read as UTC."""
    value = text.strip()
    fixed = _fixed_width(date_format) if date_format != "iso" else None
    if fixed is not None and len(value) == fixed[0] and all(value[p] == c for p, c in fixed[2]):
        parts = {name: value[a:b] for name, a, b in fixed[1]}
        if all(v.isdigit() and v.isascii() for v in parts.values()):
            return datetime(tzinfo=UTC, **{k: int(v) for k, v in parts.items()})  # ValueError on 31/02
    if date_format == "iso":
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    else:
        parsed = datetime.strptime(value, date_format)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
