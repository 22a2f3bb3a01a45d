"""The deterministic reader of fee terms: common wording of pricing schedules, no model.

Pure (no ORM): text in, an `Extraction` out. Each term comes with the value as written
(normalised to a decimal string), its unit and the clause it was read from, verbatim (one
line of the document, or one sentence of a long line), so `reconciliation.verification`
checks it exactly like a model's answer. Reads, among others: "2.9% + 30¢ per successful
card charge", "2,9 % + 0,25 €", "Chargeback fee: $15.00", "Disputes cost 15 USD each",
"Payouts arrive on a 2 business day rolling basis", "T+2", "International cards: +1.5%",
"rolling reserve of 10% held for 90 days", and Markdown or HTML table rows
("| Chargeback | €15.00 |"). The first clause for a term wins, except that a clause about
cards beats one about other payment methods for the percentage and fixed fee.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from reconciliation.money_words import (
    CURRENCY_MARKER,
    NUMBER,
    NUMBER_WORDS,
    SYMBOLS,
    document_currency,
    document_dollar,
    number_readings,
)

TERMS = ("percentage_fee", "fixed_fee", "chargeback_fee", "payout_delay", "international_surcharge",
         "rolling_reserve")
REQUIRED_TERMS = TERMS[:4]
OPTIONAL_TERMS = TERMS[4:]
PERCENT = "percent"  # the unit of percentage terms: 2.9 means 2.9 %
DAYS = "days"  # calendar days
BUSINESS_DAYS = "business_days"  # working days (stored as that many days: the run's window absorbs weekends)


@dataclass(frozen=True)
class Term:
    value: str | None  # as read: a decimal string in the unit ("2.9", "0.30", "2"), or None
    unit: str | None  # "percent", an ISO currency code, "days" or "business_days"
    quote: str  # the clause, verbatim


@dataclass(frozen=True)
class Extraction:
    currency: str | None  # the currency of the fixed and chargeback fees, as read
    terms: dict[str, Term] = field(default_factory=dict)


_MAX_SEGMENT = 300  # a longer line is split into sentences so a quote stays one clause

_KEYWORDS = {
    "chargeback": r"charge[\s-]?backs?|disputes?|disputed|r[üu]ckbelastung|litiges?|contracargos?|retrocargos?"
                  r"|inquir(?:y|ies)",
    "international": r"international|cross[\s-]?border|foreign|non[\s-]?domestic|outside (?:the )?(?:eea|eu|us|uk)"
                     r"|non[\s-]?(?:eea|eu|us|uk)|ausl[äa]ndische|internationale?s?|étrang[eè]re?s?|overseas",
    "reserve": r"reserve|r[ée]serve|rücklage|sicherheitseinbehalt",
    "payout": r"pay[\s-]?outs?|paid out|settle(?:d|ment)?|transfers? to your bank|auszahlung(?:en)?|versements?"
              r"|deposits?|funds (?:arrive|are available|become available)|available (?:in|after)|\bt\s?\+\s?\d",
    # Clauses whose percentages or amounts are not the card fee.
    "other": r"refund|conversion|currency exchange|\bfx\b|instant|\btax\b|\bvat\b|monthly|volume"
             r"|discount|invoice|billing|subscription|\bcap(?:ped)?\b|tiered|\bach\b|\bsepa\b|bank transfer"
             r"|direct debit|\bwire\b|crypto|terminal|in[\s-]person|tap to pay|\blink\b|klarna|afterpay|paypal",
    "cards": r"cards?|transactions?|charges?|payments?|karten|cartes?|tarjetas?|online|standard|processing",
    "fixed": r"fixed|flat|per (?:successful )?(?:transaction|charge|payment)|transaction fee|per tx|fixe",
}
# Matched against the lower-cased clause: case-sensitive patterns are several times faster.
_KW = {name: re.compile(rf"(?:{pattern})") for name, pattern in _KEYWORDS.items()}

_AMOUNT_BEFORE = re.compile(rf"({CURRENCY_MARKER})\s?({NUMBER})(?![\d%])")
_AMOUNT_AFTER = re.compile(
    rf"(?<![\d.,])({NUMBER})\s?(¢|cents?\b|ct\.?(?!\w)|Cent\b|pence\b|(?<=\d)[cp]\b|{CURRENCY_MARKER})"
)
_BARE_AMOUNT = re.compile(rf"(?<![\d.,%+])({NUMBER})(?![\d.,]|\s?%)")
_PERCENT = re.compile(rf"(?<![\d.,])(\+\s?)?({NUMBER})\s?(?:%|percent\b|per cent\b|pct\b|Prozent\b)", re.I)
_DELAY = re.compile(
    r"(?i)\bT\s?\+\s?(\d{1,2})\b(?:\s*(business|working|bank))?"
    r"|(?<![\d.,])(\d{1,2}|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) +
    r")[\s-]+(?:(business|working|bank|calendar)[\s-]+)?days?\b"
)
_SURCHARGE = re.compile(r"(?i)surcharge|additional|extra|\badd(?:ed|s)?\b|on top|plus|zuschlag|suppl[ée]ment")
_NEXT_DAY = re.compile(r"(?i)\bnext[\s-](business[\s-]|working[\s-])?day\b|\bsame[\s-]day\b")


@dataclass(frozen=True)
class _Amount:
    value: Decimal
    currency: str | None  # None: no marker next to the number
    cents: bool


def _segments(text: str) -> list[tuple[str, str]]:
    """(clause, heading in force) pairs: lines, long lines split into sentences. A heading
    (a Markdown `#` line, or a short line without digits) gives a clause its topic when the
    clause itself names none ("| Fee | $15.00 |" under "## Disputes"). A line with a value
    in it ("Payouts: two business days") is a clause, never a heading."""
    out: list[tuple[str, str]] = []
    heading = ""
    for raw in text.split("\n"):
        line = " ".join(raw.split())
        if not line or re.fullmatch(r"[|:\-\s+=_*#]+", line):
            continue
        if line.startswith("#") or (len(line) <= 80 and not re.search(r"\d", line) and not _DELAY.search(line)
                                    and not _NEXT_DAY.search(line)):
            heading = line.lstrip("#").strip()
            continue
        parts = [line] if len(line) <= _MAX_SEGMENT else re.split(r"(?<=[.;!?])\s+(?=[A-Z(\"'])", line)
        out.extend((part, heading) for part in parts if part)
    return out


def _amounts(clause: str, *, dollar: str, fallback: str | None) -> list[tuple[int, _Amount]]:
    """Money in a clause, with its position: `$0.30`, `0,25 €`, `30¢`, `15 USD`, `€15`."""
    found: dict[int, _Amount] = {}

    def marker_currency(marker: str) -> str | None:
        if marker in SYMBOLS:
            return SYMBOLS[marker]
        if marker == "$":
            return dollar
        return marker if re.fullmatch(r"[A-Z]{3}", marker) else None

    for match in _AMOUNT_BEFORE.finditer(clause):
        value = _reading(match.group(2))
        if value is not None:
            found[match.start(2)] = _Amount(value, marker_currency(match.group(1)), False)
    for match in _AMOUNT_AFTER.finditer(clause):
        if match.start(1) in found:
            continue
        value, marker = _reading(match.group(1)), match.group(2).strip()
        if value is None:
            continue
        if marker in ("¢", "cents", "cent", "c"):
            found[match.start(1)] = _Amount(value / 100, dollar, True)
        elif marker in ("ct", "ct.", "Cent"):
            found[match.start(1)] = _Amount(value / 100, fallback, True)
        elif marker in ("p", "pence"):
            found[match.start(1)] = _Amount(value / 100, "GBP", True)
        else:
            found[match.start(1)] = _Amount(value, marker_currency(marker), False)
    return sorted(found.items())


def _reading(token: str) -> Decimal | None:
    readings = number_readings(token)
    if not readings:
        return None
    # "1,500" reads as 1500 or 1.5: an amount written with three digits after a comma is
    # grouped thousands far more often than a three-decimal price.
    return max(readings) if len(readings) > 1 else next(iter(readings))


def _plain(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text


def _money(amount: _Amount) -> str:
    return format(amount.value.quantize(Decimal("0.01")), "f") if amount.cents else _plain_amount(amount.value)


def _plain_amount(value: Decimal) -> str:
    return format(value, "f")


def _percents(clause: str) -> list[tuple[int, Decimal, bool]]:
    out = []
    for match in _PERCENT.finditer(clause):
        value = _reading(match.group(2))
        if value is not None:
            out.append((match.start(), value, bool(match.group(1))))
    return out


def _delay(clause: str) -> tuple[str, str] | None:
    match = _DELAY.search(clause)
    if match:
        if match.group(1):
            return match.group(1), BUSINESS_DAYS if match.group(2) else DAYS
        word = match.group(3).lower()
        value = str(NUMBER_WORDS[word]) if word in NUMBER_WORDS else word
        kind = (match.group(4) or "").lower()
        return value, BUSINESS_DAYS if kind in ("business", "working", "bank") else DAYS
    nxt = _NEXT_DAY.search(clause)
    if nxt:
        return ("0", DAYS) if nxt.group(0).lower().startswith("same") else ("1", BUSINESS_DAYS)
    return None


def _topic(clause: str, heading: str) -> str | None:
    """What a clause is about (`clause` and `heading` lower-cased): the clause's own words
    first, then its heading's; `other` for clauses whose numbers are not the card fee."""
    for text, own in ((clause, True), (heading, False)):
        for topic in ("reserve", "chargeback", "international", "payout"):
            if _KW[topic].search(text):
                return topic
        if own and _KW["other"].search(text):
            return "other"
    return None


def terms_extract(text: str) -> Extraction:
    """Read the fee terms a pricing document states in common wording. Never raises: a term
    it cannot find is simply absent (verification reports the missing required ones)."""
    dollar = document_dollar(text)
    doc_currency = document_currency(text)
    terms: dict[str, Term] = {}
    card_fee: tuple[int, Term, Term | None] | None = None  # (rank, percentage, fixed)
    lone_fixed: Term | None = None

    for clause, heading in _segments(text):
        lower, lower_heading = clause.lower(), heading.lower()
        topic = _topic(lower, lower_heading)
        percents = _percents(clause)
        amounts = _amounts(clause, dollar=dollar, fallback=doc_currency)
        if topic == "reserve":
            if percents and "rolling_reserve" not in terms:
                terms["rolling_reserve"] = Term(_plain(percents[0][1]), "percent", clause)
        elif topic == "chargeback":
            if "chargeback_fee" not in terms:
                money = [a for _, a in amounts] or _bare_amounts(clause, doc_currency)
                if money:
                    terms["chargeback_fee"] = Term(_money(money[0]), money[0].currency, clause)
        elif topic == "international":
            # "+1.5%" or "an additional 1.5%" is a surcharge; "3.25% + €0.25 for international
            # cards" is a whole other rate, and its surcharge is not written anywhere to quote.
            extra = [p for p in percents if p[2]] or (percents if _SURCHARGE.search(lower) else [])
            if extra and "international_surcharge" not in terms:
                terms["international_surcharge"] = Term(_plain(extra[0][1]), "percent", clause)
        elif topic == "payout":
            delay = _delay(clause)
            if delay and "payout_delay" not in terms:
                terms["payout_delay"] = Term(delay[0], delay[1], clause)
        elif topic is None:
            percents = [p for p in percents if not p[2]]  # "+ 0.5% for manually entered cards" adds to a fee
            rank = 0 if _KW["cards"].search(lower) or _KW["cards"].search(lower_heading) else 1
            if percents and (card_fee is None or rank < card_fee[0]):
                start, value, _plus = percents[0]
                after = [a for pos, a in amounts if pos > start] or [
                    a for pos, a in _bare_amounts_at(clause, doc_currency) if pos > start]
                fixed = Term(_money(after[0]), after[0].currency, clause) if after else None
                if fixed is not None or card_fee is None:
                    card_fee = (rank if fixed is not None else rank + 1, Term(_plain(value), "percent", clause),
                                fixed)
            elif amounts and not percents and lone_fixed is None and _KW["fixed"].search(f"{lower} {lower_heading}"):
                lone_fixed = Term(_money(amounts[0][1]), amounts[0][1].currency, clause)
    if card_fee is not None:
        terms["percentage_fee"] = card_fee[1]
        if card_fee[2] is not None:
            terms["fixed_fee"] = card_fee[2]
    if "fixed_fee" not in terms and lone_fixed is not None:
        terms["fixed_fee"] = lone_fixed
    currency = next((terms[t].unit for t in ("fixed_fee", "chargeback_fee") if t in terms and terms[t].unit), None)
    return Extraction(currency=currency, terms=terms)


def _bare_amounts_at(clause: str, currency: str | None) -> list[tuple[int, _Amount]]:
    """Numbers with no marker ("Chargeback | 15.00" under a column headed "EUR"): amounts in
    the document's one currency, or in no currency (verification refuses them then)."""
    return [(m.start(1), _Amount(v, currency, False)) for m in _BARE_AMOUNT.finditer(clause)
            if (v := _reading(m.group(1))) is not None]


def _bare_amounts(clause: str, currency: str | None) -> list[_Amount]:
    return [a for _, a in _bare_amounts_at(clause, currency)]
