"""How fees are written in pricing documents: numbers, currency markers, cents, number words.

Shared by the extractor (which reads values) and the verification (which checks that a quote
holds a value): both must read `2,9 %`, `30¢`, `€0.25`, `15 USD` and `two business days`
the same way.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# Currencies the extractor recognises by ISO code, with an approximate number of units per
# US dollar. The factor only scales the plausibility ranges of fixed and chargeback fees
# (a fixed fee of up to 5 USD, a chargeback fee of up to 100 USD, in each currency's own
# units); it never converts an amount.
UNITS_PER_USD: dict[str, Decimal] = {code: Decimal(v) for code, v in {
    "USD": "1", "EUR": "1", "GBP": "1", "CHF": "1", "CAD": "1.5", "AUD": "1.6", "NZD": "1.8", "SGD": "1.4",
    "HKD": "8", "JPY": "160", "CNY": "7.5", "INR": "90", "SEK": "11", "NOK": "11", "DKK": "7.5", "PLN": "4.5",
    "CZK": "25", "HUF": "400", "RON": "5", "BGN": "2", "MXN": "20", "BRL": "6", "ZAR": "19", "AED": "3.7",
    "ILS": "4", "TRY": "40", "THB": "36", "MYR": "4.7", "PHP": "60", "IDR": "17000", "KRW": "1500",
    "KWD": "0.31", "BHD": "0.38", "OMR": "0.39", "JOD": "0.71", "SAR": "3.75", "CLP": "1000", "COP": "4500",
    "PEN": "3.8", "ARS": "1500",
}.items()}
ISO_CODES = frozenset(UNITS_PER_USD)
DOLLAR_CODES = frozenset({"USD", "CAD", "AUD", "NZD", "SGD", "HKD", "MXN"})

# Symbols and prefixes that name exactly one currency.
SYMBOLS: dict[str, str] = {
    "US$": "USD", "U.S.$": "USD", "A$": "AUD", "AU$": "AUD", "C$": "CAD", "CA$": "CAD", "NZ$": "NZD",
    "S$": "SGD", "HK$": "HKD", "R$": "BRL", "Mex$": "MXN", "€": "EUR", "£": "GBP", "₹": "INR", "zł": "PLN",
    "₩": "KRW", "₪": "ILS", "₺": "TRY", "฿": "THB", "Fr.": "CHF", "Kč": "CZK", "Ft": "HUF", "¥": "JPY",
}
DOLLAR = "$"  # a bare dollar sign: the document's dollar currency, USD when it names no other
CENT_WORDS = ("¢", "cents", "cent", "ct.", "ct", "c", "pence", "p")  # a hundredth of the major unit

_SYMBOL_ALTERNATIVES = "|".join(re.escape(s) for s in sorted(SYMBOLS, key=len, reverse=True))
_CODE_ALTERNATIVES = "|".join(sorted(ISO_CODES))
# A currency marker before or after an amount.
CURRENCY_MARKER = rf"(?:{_SYMBOL_ALTERNATIVES}|\$|\b(?:{_CODE_ALTERNATIVES})\b)"
NUMBER = r"\d{1,3}(?:[,.'\u00a0\u202f ]\d{3})+(?:[.,]\d{1,4})?|\d+(?:[.,]\d{1,4})?"
_CENT_AFTER = r"(?:¢|\s?(?:cents?|ct\.?|Cent|pence)\b|(?<=\d)[cp]\b)"

NUMBER_WORDS: dict[str, int] = {w: i for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
))}
NUMBER_WORDS.update({"thirty": 30, "twenty-one": 21, "twenty-eight": 28})
_WORD_RE = re.compile(r"(?i)\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b")
_TOKEN_RE = re.compile(rf"(?<![\d.,])({NUMBER})(?![\d])")
_PERCENT_AFTER = re.compile(r"\s?(?:%|percent\b|per cent\b|pct\b|Prozent\b|pour cent\b|por ciento\b)", re.I)
_CENTS_AFTER = re.compile(_CENT_AFTER)
# "next business day" is a delay of 1, "same day" of 0.
_DAY_WORDS = re.compile(r"(?i)\bnext[\s-](?:business[\s-]|working[\s-])?day\b|\bsame[\s-]day\b")


def number_readings(token: str) -> set[Decimal]:
    """Every value a written number can mean: `2,9` and `2.9` are 2.9; `1,500` is 1500 (or
    1.5 when three decimals are meant); `1.234,56` is 1234.56."""
    compact = token.replace("\u00a0", " ").replace("\u202f", " ").replace("'", " ")
    readings: set[Decimal] = set()
    separators = [i for i, ch in enumerate(compact) if ch in ",. "]
    candidates = [compact.replace(" ", "")]
    if not separators:
        candidates = [compact]
    else:
        last = separators[-1]
        head, tail = compact[:last], compact[last + 1:]
        head_digits = re.sub(r"[,. ]", "", head)
        if compact[last] != " ":
            candidates.append(f"{head_digits}.{tail}")  # the last separator is the decimal point
        if len(tail) == 3:
            candidates.append(head_digits + tail)  # it groups thousands
    for candidate in candidates:
        if re.fullmatch(r"\d+(?:\.\d+)?", candidate):
            try:
                readings.add(Decimal(candidate))
            except InvalidOperation:  # pragma: no cover - the pattern is a number
                continue
    return readings


def numbers_in(text: str) -> list[tuple[set[Decimal], bool, bool, int, int]]:
    """The numbers written in `text`: (readings, followed by a percent sign, written in cents,
    start, end). Number words (`two`) count as numbers; `30¢` reads as 30 and as 0.30."""
    found: list[tuple[set[Decimal], bool, bool, int, int]] = []
    for match in _TOKEN_RE.finditer(text):
        readings = number_readings(match.group(1))
        rest = text[match.end():]
        percent = bool(_PERCENT_AFTER.match(rest))
        # Matched in place (not on the rest) so `20p` sees its digit before the `p`.
        cents = bool(_CENTS_AFTER.match(text, match.end())) and not percent
        if cents:
            readings |= {r / 100 for r in readings}
        found.append((readings, percent, cents, match.start(), match.end()))
    for match in _DAY_WORDS.finditer(text):
        found.append(({Decimal(0 if match.group(0).lower().startswith("same") else 1)}, False, False,
                      match.start(), match.end()))
    for match in _WORD_RE.finditer(text):
        found.append(({Decimal(NUMBER_WORDS[match.group(1).lower()])}, False, False, match.start(), match.end()))
    return found


# Every marker at once, longest first, so `US$` is read as USD and never as the `S$` inside it.
_MARKER_RE = re.compile(rf"(?<![A-Za-z])(?:{_SYMBOL_ALTERNATIVES})|\$|¢|\b(?:{_CODE_ALTERNATIVES})\b")


def currencies_marked(text: str, *, dollar: str = "USD") -> set[str]:
    """Currencies `text` names by code or symbol; a bare `$` (or `¢`) reads as `dollar`."""
    found: set[str] = set()
    for match in _MARKER_RE.finditer(text):
        marker = match.group(0)
        found.add(dollar if marker in ("$", "¢") else SYMBOLS.get(marker, marker))
    return found


def document_dollar(text: str) -> str:
    """What a bare `$` means in this document: the one dollar currency it names by code or
    prefix (`CAD`, `C$`), else USD (the dollar sign's usual reading)."""
    named = {SYMBOLS.get(m.group(0), m.group(0)) for m in _MARKER_RE.finditer(text)} & DOLLAR_CODES
    return next(iter(named)) if len(named) == 1 else "USD"


def document_currency(text: str) -> str | None:
    """The one currency a document names by code or by an unambiguous symbol, else None
    (none named, or several)."""
    found = currencies_marked(text, dollar=document_dollar(text))
    return next(iter(found)) if len(found) == 1 else None
