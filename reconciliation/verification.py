"""Every extracted value checked against the document before a person sees it.

Pure (no ORM). For each term, in this order:
1. the value is a number (`value_not_number`, "value is not a number");
2. the quote occurs in the document, with whitespace runs and typographic quotes normalised
   and nothing else (`quote_not_found`, "quote not found");
3. the unit is the term's and the value is plausible (`unit_error`, "unit error"): a
   percentage fee or surcharge between 0.1 and 10 (0.029 for 2.9 % is a fraction, 29 a
   misread), a rolling reserve between 0 and 50 % (0 % is a stated term), fixed and chargeback fees in the currency
   of the proposal, within its range (up to 5 and 100 US dollars' worth) and its decimals, a
   payout delay of 0 to 30 whole days;
4. the quote holds the number in some rendering of it (2.9 / 2,9 / 2.90; 0.30 / 30¢ / 30
   cents; 15 / 15.00 / 15,00 / fifteen), as a percentage for percentage terms and not as one
   for the others (`quote_missing_value`, "quote does not contain 10.00");
5. the quote supports the term: the number stands in a piece of the clause that names this
   kind of fee (`fee_words`: "Chargeback fee: $10.00" names a dispute fee, "2.9% + 30¢ per
   charge" the card fee), else under a heading that does; a value whose piece is about another
   term is refused (`quote_wrong_term`, "quote is about the card fee, not this term");
6. a fee's currency is the one its quote (else the document) names
   (`currency_not_read`, "currency not read"; `currency_mismatch`, "currency does not match");
7. a reserve's holding period and a delay's calendar, when given, are read from the quote.
A required term that was not found is `term_not_found` ("term not found"). The first
failing check is the term's reason; a term passes only when all of them pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from paypilot.money import currency_exponent
from reconciliation.extraction import (
    BUSINESS_DAYS,
    DAYS,
    OPTIONAL_TERMS,
    PERCENT,
    REQUIRED_TERMS,
    TERMS,
    WEEKLY,
    Extraction,
    Term,
    segments,
)
from reconciliation.fee_words import TERM_OF_TOPIC, TOPIC_OF_TERM, delay_topic, surcharge_topic, topic_at
from reconciliation.money_words import UNITS_PER_USD, currencies_marked, document_currency, document_dollar, numbers_in

# (reason code, reason shown to the person)
VALUE_NOT_NUMBER = ("value_not_number", "value is not a number")
QUOTE_NOT_FOUND = ("quote_not_found", "quote not found")
UNIT_ERROR = ("unit_error", "unit error")
QUOTE_MISSING_VALUE = ("quote_missing_value", "quote does not contain {value}")
CURRENCY_NOT_READ = ("currency_not_read", "currency not read")
CURRENCY_MISMATCH = ("currency_mismatch", "currency does not match")
TERM_NOT_FOUND = ("term_not_found", "term not found")
QUOTE_WRONG_TERM = ("quote_wrong_term", "quote is about the {value}, not this term")
HOLDING_NOT_IN_QUOTE = ("holding_not_in_quote", "quote does not state a holding period of {value} days")

PERCENT_FEE_RANGE = (Decimal("0.1"), Decimal("10"))
RESERVE_RANGE = (Decimal("0"), Decimal("50"))
FIXED_FEE_MAX_USD = Decimal("5")
CHARGEBACK_FEE_MAX_USD = Decimal("100")
MAX_DELAY_DAYS = 30
MAX_QUOTE_CHARS = 1000
WEEK_DAYS = Decimal(7)  # "weekly on Mondays": a payment waits at most a week

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
                         "\u00ab": '"', "\u00bb": '"'})


def normalise(text: str) -> str:
    """Whitespace runs to one space, typographic quotes to straight ones; nothing else."""
    return " ".join(text.translate(_QUOTES).split())


@dataclass(frozen=True)
class Checked:
    currency: str  # "" when no currency could be read
    terms: dict[str, dict[str, Any]]  # term -> {value, unit, quote, verified, reason, reason_code, detail}
    confirmable: bool

    @property
    def verified_count(self) -> int:
        return sum(1 for t in self.terms.values() if t["verified"])


def _result(term: Term | None, *, value: str | None, reason: tuple[str, str] | None, detail: str = "",
            shown: str = "") -> dict[str, Any]:
    code, text = reason if reason else (None, None)
    return {
        "value": value, "unit": term.unit if term else None, "quote": term.quote if term else None,
        "verified": reason is None, "reason": text.format(value=shown) if text else None, "reason_code": code,
        "detail": detail or None,
        **({"holding_days": term.holding_days} if term and term.holding_days else {}),
        **({"calendar": term.calendar} if term and term.calendar else {}),
    }


def _as_decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _shown(name: str, number: Decimal, currency: str) -> str:
    """The value as the reason names it: money at the currency's exponent (10.00)."""
    if name in ("fixed_fee", "chargeback_fee") and currency:
        try:
            return format(number.quantize(Decimal(1).scaleb(-currency_exponent(currency))), "f")
        except InvalidOperation:
            return format(number, "f")
    return format(number.normalize(), "f") if number == number.to_integral_value() else format(number, "f")


def _unit_problem(name: str, term: Term, number: Decimal, currency: str) -> str | None:
    unit = (term.unit or "").strip()
    if name in ("percentage_fee", "international_surcharge", "rolling_reserve"):
        low, high = RESERVE_RANGE if name == "rolling_reserve" else PERCENT_FEE_RANGE
        if unit not in (PERCENT, "%"):
            return f"a percentage is given in per cent, not {unit or 'no unit'}"
        if 0 < number < max(low, Decimal("0.1")) and number * 100 >= max(low, Decimal("0.1")):
            return f"{number} looks like a fraction; give per cent ({(number * 100).normalize():f})"
        if not low <= number <= high:
            return f"{number}% is outside {low}% to {high}%"
        return None
    if name == "payout_delay":
        if unit not in (DAYS, BUSINESS_DAYS):
            return f"a payout delay is given in days or business_days, not {unit or 'no unit'}"
        if number != number.to_integral_value() or not 0 <= number <= MAX_DELAY_DAYS:
            return f"a payout delay is a whole number of days from 0 to {MAX_DELAY_DAYS}"
        return None
    # fixed_fee, chargeback_fee: money in the proposal's currency
    if unit.upper() not in UNITS_PER_USD:
        return f"{unit or 'no unit'} is not a currency with a known fee range"
    scale = UNITS_PER_USD[unit.upper()]
    high = (FIXED_FEE_MAX_USD if name == "fixed_fee" else CHARGEBACK_FEE_MAX_USD) * scale
    low_ok = number >= 0 if name == "fixed_fee" else number > 0
    if not low_ok or number > high:
        return f"{number} {unit.upper()} is outside 0 to {high.normalize():f} {unit.upper()}"
    # 0.300 is 0.30; 0.305 has a third decimal a cent-based currency cannot charge.
    if number != number.quantize(Decimal(1).scaleb(-currency_exponent(unit.upper()))):
        return f"{number} has more decimals than {unit.upper()} has"
    return None


def _occurrences(name: str, quote: str, number: Decimal) -> list[int]:
    """Where the quote writes `number` in the term's kind (a percentage or not)."""
    want_percent = name in ("percentage_fee", "international_surcharge", "rolling_reserve")
    found = [start for readings, percent, _cents, start, _end in numbers_in(quote)
             if percent == want_percent and number in readings]
    if name == "payout_delay" and number == WEEK_DAYS:
        found += [m.start() for m in WEEKLY.finditer(quote)]
    return found


def _heading_of(quote: str, text: str) -> str:
    """The heading in force where the quote stands in the document ("## Disputes" above
    "| Fee | $15.00 |"): part of what the clause is about."""
    for clause, heading in segments(text):
        if quote in normalise(clause) or normalise(clause) in quote:
            return heading
    return ""


def _wrong_term(name: str, quote: str, places: list[int], heading: str) -> str | None:
    """None when some occurrence of the value stands where this term is named; else what
    the quote is about there."""
    want = TOPIC_OF_TERM[name]
    percent = surcharge_topic
    reader = {"payout_delay": delay_topic, "percentage_fee": percent, "international_surcharge": percent,
              "rolling_reserve": percent}.get(name, topic_at)
    seen = [reader(quote, place, heading) for place in places]
    if any(t == want for t in seen):
        return None
    return TERM_OF_TOPIC.get(next((t for t in seen if t), ""), "text that names no fee")


def _check(name: str, term: Term, *, text: str, document: str, currency: str, dollar: str,
           doc_currency: str | None) -> dict[str, Any]:
    number = _as_decimal(term.value)
    if number is None:
        return _result(term, value=None if term.value is None else str(term.value), reason=VALUE_NOT_NUMBER)
    value = format(number, "f")
    quote = normalise(term.quote or "")
    if not quote or len(quote) > MAX_QUOTE_CHARS or quote not in document:
        return _result(term, value=value, reason=QUOTE_NOT_FOUND)
    if name in ("fixed_fee", "chargeback_fee") and not (term.unit or "").strip():
        return _result(term, value=value, reason=CURRENCY_NOT_READ,
                       detail="neither the clause nor the document names the currency of this amount")
    problem = _unit_problem(name, term, number, currency)
    if problem:
        return _result(term, value=value, reason=UNIT_ERROR, detail=problem)
    places = _occurrences(name, quote, number)
    if not places:
        return _result(term, value=value, reason=QUOTE_MISSING_VALUE, shown=_shown(name, number, currency))
    other = _wrong_term(name, quote, places, _heading_of(quote, text))
    if other is not None:
        return _result(term, value=value, reason=QUOTE_WRONG_TERM, shown=other,
                       detail=f"{_shown(name, number, currency)} stands where the quote names the {other}")
    if name == "rolling_reserve" and term.holding_days:
        held = _as_decimal(term.holding_days)
        if held is None or not any(held in r or held / 7 in r or held / 30 in r for r, *_ in numbers_in(quote)):
            return _result(term, value=value, reason=HOLDING_NOT_IN_QUOTE, shown=str(term.holding_days))
    if name in ("fixed_fee", "chargeback_fee"):
        unit = (term.unit or "").upper()
        marked = currencies_marked(quote, dollar=dollar)
        if not marked and doc_currency is None:
            return _result(term, value=value, reason=CURRENCY_NOT_READ,
                           detail="neither the quote nor the document names one currency")
        if (marked and unit not in marked) or (not marked and unit != doc_currency) or (currency and unit != currency):
            return _result(term, value=value, reason=CURRENCY_MISMATCH,
                           detail=f"{unit} is not the currency the {'quote' if marked else 'document'} names")
    return _result(term, value=value, reason=None)


def terms_verify(*, text: str, extraction: Extraction) -> Checked:
    """Check every term of `extraction` against the document `text` (see the module doc).

    The proposal's currency is the fixed fee's (else the chargeback fee's) unit; the other
    fee must be in the same currency. `confirmable` is true only when every required term is
    present and verified and every optional term present is verified too."""
    document = normalise(text)
    dollar = document_dollar(text)
    doc_currency = document_currency(text)
    money_units = [(extraction.terms[t].unit or "").upper() for t in ("fixed_fee", "chargeback_fee")
                   if t in extraction.terms and extraction.terms[t].unit]
    currency = (money_units[0] if money_units else (extraction.currency or "")).upper()
    terms: dict[str, dict[str, Any]] = {}
    for name in TERMS:
        term = extraction.terms.get(name)
        if term is None:
            if name in REQUIRED_TERMS:
                terms[name] = _result(None, value=None, reason=TERM_NOT_FOUND)
            continue
        terms[name] = _check(name, term, text=text, document=document, currency=currency, dollar=dollar,
                             doc_currency=doc_currency)
    currency_ok = currency in UNITS_PER_USD
    confirmable = currency_ok and all(terms[t]["verified"] for t in REQUIRED_TERMS) and all(
        terms[t]["verified"] for t in OPTIONAL_TERMS if t in terms)
    return Checked(currency=currency if currency_ok else "", terms=terms, confirmable=confirmable)
