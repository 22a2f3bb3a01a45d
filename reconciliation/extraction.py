"""The deterministic reader of fee terms: common wording of pricing schedules, no model.

Pure (no ORM): text in, an `Extraction` out. Each term comes with the value as written
(normalised to a decimal string), its unit and the clause it was read from, verbatim (a
table row, or one sentence of a line), so `reconciliation.verification` checks it exactly
like a model's answer. Each number goes to the term its piece of the clause names
(`reconciliation.fee_words`): in "2.9% + 30¢ per charge. Chargeback fee: $10.00" the 30¢ is
the fixed fee. Reads, among others: "2,9 % zzgl. 0,30 €", "Disputes cost 15 USD each",
"T+2", "2 business days" (business days, with the currency's banking calendar), "weekly on
Mondays", "An additional 1.5% applies to cards issued outside the EEA", "rolling reserve of
10% held for 90 days" (with its holding period; 0 % is valid), and Markdown or HTML table
rows ("| Chargeback | €15.00 |"). The first value for a term wins, except that a card rate
with its fixed fee beats a percentage alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from reconciliation.fee_words import CARD, delay_topic, pieces, surcharge_topic, topic_at
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
    holding_days: str | None = None  # rolling reserve: how long each part is held ("90"), as read
    calendar: str | None = None  # business-day delay: whose banking days ("US", "TARGET", "GB", ...)


@dataclass(frozen=True)
class Extraction:
    currency: str | None  # the currency of the fixed and chargeback fees, as read
    terms: dict[str, Term] = field(default_factory=dict)


_AMOUNT_BEFORE = re.compile(rf"({CURRENCY_MARKER})\s?({NUMBER})(?![\d%])")
_AMOUNT_AFTER = re.compile(
    rf"(?<![\d.,])({NUMBER})\s?(¢|cents?\b|ct\.?(?!\w)|Cent\b|pence\b|(?<=\d)[cp]\b|{CURRENCY_MARKER})"
)
_BARE_AMOUNT = re.compile(rf"(?<![\d.,%+])({NUMBER})(?![\d.,]|\s?%)")
_PERCENT = re.compile(rf"(?<![\d.,])(\+\s?)?({NUMBER})\s?(?:%|percent\b|per cent\b|pct\b|Prozent\b)", re.I)
_DAY_NUMBER = r"(\d{1,3}|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
_DELAY = re.compile(
    r"(?i)\bT\s?\+\s?(\d{1,2})\b(?:\s*(business|working|bank|calendar))?"
    r"|(?<![\d.,])" + _DAY_NUMBER + r"[\s-]+(?:(business|working|bank|calendar|banking)[\s-]+)?"
    r"(?:days?|tage?n?|werktage?n?|bankarbeitstage?n?|jours?(?: ouvr[ée]s| ouvrables)?|d[íi]as?(?: h[áa]biles)?)\b"
)
WEEKLY = re.compile(r"(?i)\bweekly\b|\bonce a week\b|\bevery (?:monday|tuesday|wednesday|thursday|friday)\b"
                     r"|\bwöchentlich\b|\bhebdomadaire\b|\bsemanal\b")
_HOLD = re.compile(r"(?i)(?<![\d.,%])" + _DAY_NUMBER + r"[\s-]+(days?|weeks?|months?|tage?n?|wochen|monate?n?|jours"
                   r"|mois|d[íi]as)\b")
_HOLD_FACTOR = {"d": 1, "t": 1, "j": 1, "w": 7, "m": 30}  # days, Tage, jours, días; weeks, Wochen; months, Monate, mois
_SURCHARGE = re.compile(r"(?i)surcharge|additional|extra|\badd(?:ed|s|itionally)?\b|on top|plus|zuschlag|zusätzlich"
                        r"|suppl[ée]ment|\bfee\b|geb[üu]hr|recargo|adicional")
_NEXT_DAY = re.compile(r"(?i)\bnext[\s-](business[\s-]|working[\s-])?day\b|\bsame[\s-]day\b")
# A rate written as a fraction ("0.029 of the amount"): read so verification can call it a unit error.
_FRACTION = re.compile(r"(?<![\d.,])0[.,]0\d{1,3}(?![\d%])")
# The business-day calendar of a delay: named in the document, else the currency's banking days.
_CALENDAR_NAMED = (
    (re.compile(r"(?i)federal reserve|us (?:federal|bank) holidays"), "US"),
    (re.compile(r"(?i)\btarget2?\b"), "TARGET"),
    (re.compile(r"(?i)uk bank holidays|bank holidays in england|england and wales"), "GB"),
    (re.compile(r"(?i)bankarbeitstag"), "DE"),
)
_CALENDAR_OF_CURRENCY = {"USD": "US", "EUR": "TARGET", "GBP": "GB", "CAD": "CA", "AUD": "AU", "CHF": "CH",
                         "JPY": "JP", "SEK": "SE", "NOK": "NO", "DKK": "DK", "PLN": "PL", "NZD": "NZ", "SGD": "SG"}
_RANGE_END = re.compile(r"\d\s?(?:-|–|—|to|bis|à|a)\s?$")
_SENTENCE = re.compile(r"(?<=[.;!?])\s+(?=[A-Z(\"'ÄÖÜÉ])")


@dataclass(frozen=True)
class _Amount:
    value: Decimal
    currency: str | None  # None: no marker next to the number
    cents: bool


def segments(text: str) -> list[tuple[str, str]]:
    """(clause, heading in force) pairs: lines, prose lines split into sentences. A heading
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
                                    and not _NEXT_DAY.search(line) and not WEEKLY.search(line)):
            heading = line.lstrip("#").strip()
            continue
        # A table row is one clause (its cells label each other); prose is read a sentence at a time.
        parts = [line] if "|" in line else _SENTENCE.split(line)
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


def _delay(clause: str, heading: str = "") -> tuple[str, str] | None:
    """(days, unit) of the first payout delay in `clause` that stands where payouts are
    named: "T+2" and "2 business days" are business days, "7 days" calendar days, "next
    business day" 1 business day, "same day" 0 days, "weekly on Mondays" at most 7 days."""
    found: list[tuple[int, str, str]] = []
    ranges: set[int] = set()  # the end of "2-3 business days": a single figure elsewhere is the term
    for match in _DELAY.finditer(clause):
        if match.group(1):  # T+N counts banking days unless it says calendar
            unit = DAYS if (match.group(2) or "").lower() == "calendar" else BUSINESS_DAYS
            found.append((match.start(), match.group(1), unit))
            continue
        word = match.group(3).lower()
        written = match.group(0).lower()
        business = (match.group(4) or "").lower() in ("business", "working", "bank", "banking") or any(
            w in written for w in ("werktag", "bankarbeitstag", "ouvr", "hábil", "habil"))
        found.append((match.start(), str(NUMBER_WORDS.get(word, word)), BUSINESS_DAYS if business else DAYS))
        if _RANGE_END.search(clause[:match.start()]):
            ranges.add(match.start())
    for match in _NEXT_DAY.finditer(clause):
        same = match.group(0).lower().startswith("same")
        found.append((match.start(), "0" if same else "1", DAYS if same else BUSINESS_DAYS))
    found += [(m.start(), "7", DAYS) for m in WEEKLY.finditer(clause)]
    # A single number of days beats the end of a range, which beats "weekly".
    for position, value, unit in sorted(found, key=lambda f: (f[1] == "7" and f[2] == DAYS, f[0] in ranges, f[0])):
        if delay_topic(clause, position, heading) == "payout":
            return value, unit
    return None


def _holding_days(clause: str, after: int) -> str | None:
    """How long a reserve holds each part: the first period after the percentage."""
    match = _HOLD.search(clause, after)
    if not match:
        return None
    word = match.group(1).lower()
    number = NUMBER_WORDS[word] if word in NUMBER_WORDS else int(word)
    return str(number * _HOLD_FACTOR.get(match.group(2)[0].lower(), 1))


def business_calendar(text: str, currency: str | None) -> str | None:
    """Whose banking days a business-day delay counts: the calendar the document names, else
    the currency's (USD: US, EUR: TARGET, GBP: GB, ...)."""
    for pattern, name in _CALENDAR_NAMED:
        if pattern.search(text):
            return name
    return _CALENDAR_OF_CURRENCY.get(currency or "", currency)


def terms_extract(text: str) -> Extraction:
    """Read the fee terms a pricing document states in common wording. Never raises: a term
    it cannot find is simply absent (verification reports the missing required ones).

    Every number is assigned to the term its piece of the clause names (`fee_words`): in
    "2.9% + 30¢ per charge. Chargeback fee: $10.00" the 30¢ is the fixed fee and the $10.00
    the chargeback fee; the first value for a term wins, except that a card rate with its
    fixed fee beats a percentage alone."""
    dollar = document_dollar(text)
    doc_currency = document_currency(text)
    terms: dict[str, Term] = {}
    card_fee: tuple[int, Term, Term | None] | None = None  # (rank, percentage, fixed)
    lone_fixed: Term | None = None
    for clause, heading in segments(text):
        percents = _percents(clause)
        amounts = _amounts(clause, dollar=dollar, fallback=doc_currency) or _bare_amounts_at(clause, doc_currency)
        at = {pos: topic_at(clause, pos, heading) for pos, _ in amounts}
        at.update({pos: surcharge_topic(clause, pos, heading) for pos, _v, _plus in percents})
        topics = {topic_at(clause, start, heading) for start, _end in pieces(clause)}
        if "reserve" in topics and "rolling_reserve" not in terms:
            mine = [p for p in percents if at[p[0]] == "reserve"]
            if mine:
                terms["rolling_reserve"] = Term(_plain(mine[0][1]), PERCENT, clause,
                                                holding_days=_holding_days(clause, mine[0][0]))
        if "chargeback" in topics and "chargeback_fee" not in terms:
            mine_money = [a for pos, a in amounts if at[pos] == "chargeback"]
            if mine_money:
                terms["chargeback_fee"] = Term(_money(mine_money[0]), mine_money[0].currency, clause)
        if "international" in topics and "international_surcharge" not in terms:
            # "+1.5%" or "an additional 1.5%" is a surcharge; "3.25% + €0.25 for international
            # cards" is a whole other rate, and its surcharge is not written anywhere to quote.
            mine = [p for p in percents if at[p[0]] == "international"]
            whole_rate = any(at[pos] == "international" for pos, _ in amounts)
            extra = [p for p in mine if p[2]] or ([] if whole_rate or not _SURCHARGE.search(clause) else mine)
            if extra:
                terms["international_surcharge"] = Term(_plain(extra[0][1]), PERCENT, clause)
        if "payout" in topics and "payout_delay" not in terms:
            delay = _delay(clause, heading)
            if delay:
                calendar = business_calendar(text, doc_currency) if delay[1] == BUSINESS_DAYS else None
                terms["payout_delay"] = Term(delay[0], delay[1], clause, calendar=calendar)
        card = [p for p in percents if at[p[0]] in (CARD, None) and not p[2]]  # "+ 0.5% for keyed cards" adds
        rank = 0 if CARD in topics else 1
        if not card and not percents:
            card = [(m.start(), Decimal(m.group(0).replace(",", ".")), False) for m in _FRACTION.finditer(clause)
                    if at.get(m.start(), topic_at(clause, m.start(), heading)) in (CARD, None)]
            rank = 3  # a rate written as a fraction: kept only when nothing better is read
        if card and (card_fee is None or rank < card_fee[0]):
            start = card[0][0]
            later = [p[0] for p in percents if p[0] > start and not p[2]]
            stop = later[0] if later else len(clause)
            after = [a for pos, a in amounts if start < pos < stop and at[pos] in (CARD, None)]
            fixed = Term(_money(after[0]), after[0].currency, clause) if after else None
            if fixed is not None or card_fee is None:
                card_fee = (rank if fixed is not None else rank + 1, Term(_plain(card[0][1]), PERCENT, clause), fixed)
        elif amounts and not percents and lone_fixed is None and re.search(_FIXED_WORDS, clause.lower()):
            mine_money = [a for pos, a in amounts if at[pos] in (CARD, None)]
            if mine_money:
                lone_fixed = Term(_money(mine_money[0]), mine_money[0].currency, clause)
    if card_fee is not None:
        terms["percentage_fee"] = card_fee[1]
        if card_fee[2] is not None:
            terms["fixed_fee"] = card_fee[2]
    if "fixed_fee" not in terms and lone_fixed is not None:
        terms["fixed_fee"] = lone_fixed
    currency = next((terms[t].unit for t in ("fixed_fee", "chargeback_fee") if t in terms and terms[t].unit), None)
    return Extraction(currency=currency, terms=terms)


_FIXED_WORDS = r"fixed|flat|per (?:successful )?(?:transaction|charge|payment)|transaction fee|per tx|fixe|festbetrag"


def _bare_amounts_at(clause: str, currency: str | None) -> list[tuple[int, _Amount]]:
    """Numbers with no marker ("Chargeback | 15.00" under a column headed "EUR"): amounts in
    the document's one currency, or in no currency (verification refuses them then). Numbers
    of days and percentages are not amounts."""
    taken = {m.start(1) for m in _PERCENT.finditer(clause)}
    days = [(m.start(), m.end()) for m in _DELAY.finditer(clause)] + [
        (m.start(), m.end()) for m in _HOLD.finditer(clause)]
    return [(m.start(1), _Amount(v, currency, False)) for m in _BARE_AMOUNT.finditer(clause)
            if m.start(1) not in taken and not any(a <= m.start(1) < b for a, b in days)
            and (v := _reading(m.group(1))) is not None]
