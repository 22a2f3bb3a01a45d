"""Which fee a number in a pricing clause is about: the per-term vocabulary and the clause's pieces.

Shared by the extractor (which assigns each number to a term) and the verification (which
refuses a value whose quote is about another term), so both read "Chargeback fee: $10.00"
and "2.9% + 30¢ per successful charge" the same way. A clause is cut into pieces at
sentence ends, semicolons, table cells and ", "; a number belongs to the topic its own piece
names, else to the nearest piece before it in the clause that names one ("| Chargeback |
€15.00 |", "For cards issued outside the EU, an additional 1.5%"), else to the heading.
"""

from __future__ import annotations

import re

CARD = "card"  # the base rate: percentage fee and fixed fee
OTHER = "other"  # a number that is no contract term (refunds, FX, instant payouts, ACH, VAT...)

# Topic -> vocabulary, matched on lower-cased text. Checked in this order: a piece naming a
# reserve and a payout ("10% of each payout is held as a reserve") is about the reserve.
VOCABULARY: dict[str, str] = {
    "reserve": r"reserve|r[ée]serve|rücklage|sicherheitseinbehalt|einbehalt|retenci[óo]n|fondo de garant[íi]a",
    "chargeback": r"charge[\s-]?backs?|disputes?|disputed|r[üu]ckbelastung(?:en)?|r[üu]ckbuchung(?:en)?"
                  r"|streitf[äa]ll(?:e)?|litiges?|r[ée]trofacturations?|contracargos?"
                  r"|retrocargos?|disputas?|impay[ée]s?|inquir(?:y|ies)|returned if you win|if you win",
    "international": r"international|cross[\s-]?border|foreign|non[\s-]?domestic|outside (?:the )?(?:eea|eu|us|uk"
                     r"|united states|united kingdom|european)|non[\s-]?(?:eea|eu|us|uk|european)|ausl[äa]ndisch"
                     r"|au[ßs]erhalb (?:des ewr|der eu|europas)|internationale?s?|étrang[eè]re?s?|hors (?:ue|eee)"
                     r"|overseas|extranjer[ao]s?|internacional(?:es)?|grenzüberschreitend",
    "payout": r"pay[\s-]?outs?|paid out|settle(?:d|ment)?|transfers? to your bank|auszahlung(?:en)?|versements?"
              r"|deposits?|funds (?:arrive|are available|become available|reach)|available (?:in|after)"
              r"|\bt\s?\+\s?\d|abrechnung|gutschrift|liquidaci[óo]n|abonos?|transferencias?|vers[ée]s"
              r"|bank account|pay you|paid to you|compte bancaire|bankkonto|gesch[äa]ftskonto|cuenta bancaria"
              r"|nominated account",
    OTHER: r"refund|conversion|currency exchange|\bfx\b|instant|\btax\b|\bvat\b|\bmwst|monthly"
           r"|volume (?:discount|pricing|rate)|high volume"
           r"|discount|billing|subscription|\bcap(?:ped)?\b|\bmax(?:imum)?\b|\bach\b|\bsepa\b"
           r"|bank transfer|direct debit|lastschrift|\bwire\b|crypto|terminal|in[\s-]person|tap to pay|\blink\b"
           r"|klarna|afterpay|ideal|bancontact|sofort|giropay|micropayment|minimum|chargeback protection"
           r"|setup|set-up|pci|statement fee|gateway|virtual terminal|manually entered|keyed",
    CARD: r"cards?|transactions?|charges?|payments?|karten|kartenzahlung|transaktion(?:en)?|zahlungen|cartes?"
          r"|paiements?|tarjetas?|pagos?|transacci[óo]n(?:es)?|online|standard|processing|domestic|\beea\b|\bewr\b"
          r"|rate|pricing|per sale|sales?|checkout|visa|mastercard|amex|debit|credit",
}
# The international topic counts only before the card one; "other" only when nothing
# stronger is named ("Disputes are refunded if you win" is about disputes).
_ORDER = ("reserve", "chargeback", "international", "payout", OTHER, CARD)
_KW = {name: re.compile(pattern) for name, pattern in VOCABULARY.items()}

TOPIC_OF_TERM = {
    "percentage_fee": CARD, "fixed_fee": CARD, "chargeback_fee": "chargeback", "payout_delay": "payout",
    "international_surcharge": "international", "rolling_reserve": "reserve",
}
TERM_OF_TOPIC = {"chargeback": "chargeback fee", "payout": "payout delay", "international": "international surcharge",
                 "reserve": "rolling reserve", CARD: "card fee", OTHER: "another fee (refunds, FX, other methods)"}

# Piece boundaries: sentence ends, semicolons, table cells, dashes and ", " (never the
# comma of "2,9 %" or "1,500", which has no space after it), brackets ("(minimum charge $0.50)").
_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'€$£¢\d])|;|\||\s[–—]\s|\s-\s|,\s|\s\(|\)")


def topic_of(text: str) -> str | None:
    """The strongest topic `text` names (lower-cased), else None."""
    for name in _ORDER:
        if _KW[name].search(text):
            return name
    return None


def names(text: str, topic: str) -> bool:
    return bool(_KW[topic].search(text))


def pieces(clause: str) -> list[tuple[int, int]]:
    """(start, end) of each piece of `clause`, in order, covering it."""
    out, start = [], 0
    for match in _BOUNDARY.finditer(clause):
        out.append((start, match.start()))
        start = match.end()
    out.append((start, len(clause)))
    return out


def topic_at(clause: str, position: int, heading: str = "", *, weak: tuple[str, ...] = ()) -> str | None:
    """The topic of the number at `position` in `clause`: its own piece's, else the nearest
    earlier piece's that names one, else the heading's. A `weak` topic is passed over while
    a stronger one is found before it: a delay is never a card fee, so in "Payouts: every
    business day, 2 business days after the payment" the 2 is about payouts."""
    lower = clause.lower()
    spans = pieces(clause)
    index = next((i for i, (a, b) in enumerate(spans) if a <= position <= b), len(spans) - 1)
    first_weak = None
    for i in range(index, -1, -1):
        found = topic_of(lower[spans[i][0]:spans[i][1]])
        if found in weak:
            first_weak = first_weak or found
        elif found is not None:
            return found
    return topic_of(heading.lower()) if first_weak is None else (topic_of(heading.lower()) or first_weak)


def delay_topic(clause: str, position: int, heading: str = "") -> str | None:
    """The topic of a number of days: card words ("after the payment") do not make it a fee."""
    found = topic_at(clause, position, heading, weak=(CARD,))
    return None if found == CARD else found


_SURCHARGE_WORDS = re.compile(r"surcharge|additional|extra|\badd(?:ed|s|itionally)?\b|on top|zuschlag|zusätzlich"
                              r"|suppl[ée]ment|recargo|adicional")


def surcharge_topic(clause: str, position: int, heading: str = "") -> str | None:
    """The topic of a percentage: one said to be added ("an additional 1.25% is added to the
    rate", "+1%") after a piece naming foreign cards is that piece's surcharge."""
    start, end = next(((a, b) for a, b in pieces(clause) if a <= position <= b), (0, len(clause)))
    piece = clause[start:end].lower()
    if _SURCHARGE_WORDS.search(piece) or clause[max(start, position - 2):position].strip().endswith("+"):
        found = topic_at(clause, position, heading, weak=(CARD,))
        if found == "international":
            return found
    return topic_at(clause, position, heading)
