"""The one rule for outside text put into copy: a value is kept whole or dropped, with a reason.

Names, plan labels and company names come from providers, callers and customer records:
they are data, never copy. Every path that renders copy (`/payment-failed` and its batch,
the webhook pipeline, the LLM path and the approvers' digest) asks `slot_check` before a
value is interpolated; a dropped value is replaced by the catalogue's neutral phrase
("Hi there,", "your subscription") and the reason code travels with the draft
(`Draft.dropped_fields`, shown on the review page's facts). A value is dropped whole, never
trimmed: a trimmed attack is still an attack.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from dunning.guards import _BARE_DOMAIN, _SCHEME_URL, _SECRETS, _WWW, _scheme_refused

MAX_FIELD_LENGTH = 80  # a customer, plan or company name longer than this is not a name

# Reason codes, in the order they are tested (the first that applies is recorded).
TOO_LONG = "too_long"
CONTROL_CHARACTER = "control_character"  # C0/C1 controls, bidi overrides, zero-width, format chars
MARKUP = "markup"  # < > { } [ ] ` \ | : tags, template slots, link syntax
EMAIL_ADDRESS = "email_address"
URL_OR_SCHEME = "url_or_scheme"  # javascript:, data:, vbscript:, file:, http(s)://, //host, www., a domain
LONG_DIGITS = "long_digits"  # card, phone or account numbers
INSTRUCTION = "instruction"  # text addressed to a model ("ignore previous instructions")
SECRET_SHAPED = "secret_shaped"  # API keys, tokens
REASONS = (TOO_LONG, CONTROL_CHARACTER, MARKUP, EMAIL_ADDRESS, URL_OR_SCHEME, LONG_DIGITS, INSTRUCTION,
           SECRET_SHAPED)

# Unicode categories never part of a name: controls, format characters (bidi embeddings and
# overrides U+202A-202E and isolates U+2066-2069, zero-width U+200B-200D, U+2060, U+FEFF,
# the soft hyphen), private use, surrogates, unassigned, and line or paragraph separators.
_BANNED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
_MARKUP = re.compile(r"[{}\[\]<>`\\|]")
# Any scheme a browser or mail client would act on, written plainly ("data:text/html,x"),
# plus `//host`; `_scheme_refused` adds the disguised forms (gaps, entities, mixed case).
_SCHEME = re.compile(
    r"(?i)(?<![a-z0-9])(?:javascript|vbscript|livescript|data|file|blob|filesystem|mailto|tel|sms|ftp|"
    r"intent|about|view-source|jar|ms-[a-z-]+)\s*:(?=\S)|(?<![:\w])//\S"
)
_EMAILISH = re.compile(r"@")
_LONG_DIGITS = re.compile(r"\d[\d\s-]{5,}\d")
_INSTRUCTION = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instruction|instructions|previous|above|prompt|rules)\b"
    r"|\b(?:system|assistant|developer)\s*:"
    r"|\badd (?:this|a|the) link\b"
)


@dataclass(frozen=True)
class SlotCheck:
    value: str | None  # the value fit to interpolate (whitespace collapsed), or None
    reason: str = ""  # why a non-empty value was dropped; "" when kept or empty


def _has_banned_character(text: str) -> bool:
    # Spaces, tabs and newlines are folded into single spaces later; every other
    # non-printing character is refused (a tab or newline in a name is still refused).
    return any(
        (unicodedata.category(ch) in _BANNED_CATEGORIES and ch != " ") for ch in text
    )


def _looks_like_link(text: str) -> bool:
    folded = unicodedata.normalize("NFKC", text)  # fullwidth colons and slashes count too
    return any(
        pattern.search(candidate)
        for candidate in {text, folded}
        for pattern in (_SCHEME, _SCHEME_URL, _WWW, _BARE_DOMAIN)
    ) or _scheme_refused(text) or _scheme_refused(folded)


@lru_cache(maxsize=4096)  # the same tenant, plan and customer names recur on every request
def slot_check(value: str | None) -> SlotCheck:
    """Whether an outside value may be interpolated into copy, and if not, why."""
    if value is None:
        return SlotCheck(None)
    raw = str(value)
    if not raw.strip():
        return SlotCheck(None)
    if len(raw) > MAX_FIELD_LENGTH * 2:  # before any work on it
        return SlotCheck(None, TOO_LONG)
    if _has_banned_character(raw):
        return SlotCheck(None, CONTROL_CHARACTER)
    text = " ".join(raw.split())
    if len(text) > MAX_FIELD_LENGTH:
        return SlotCheck(None, TOO_LONG)
    if _MARKUP.search(text):
        return SlotCheck(None, MARKUP)
    if _EMAILISH.search(text):  # before links: an address also reads as a domain
        return SlotCheck(None, EMAIL_ADDRESS)
    if _looks_like_link(text):
        return SlotCheck(None, URL_OR_SCHEME)
    if _LONG_DIGITS.search(text):
        return SlotCheck(None, LONG_DIGITS)
    if _INSTRUCTION.search(text):
        return SlotCheck(None, INSTRUCTION)
    if _SECRETS.search(text):
        return SlotCheck(None, SECRET_SHAPED)
    return SlotCheck(text)


def safe_field(value: str | None) -> str | None:
    """The value fit to be shown to a customer, or None (use the neutral phrase)."""
    return slot_check(value).value


def dropped_entry(field: str, check: SlotCheck) -> dict[str, str] | None:
    """The record a draft keeps of a dropped value: which field and why (never the value)."""
    return {"field": field, "reason": check.reason} if check.reason else None


def line_check(text: str, *, max_length: int = 300) -> SlotCheck:
    """The same rule for a whole line shown outside the customer email (a draft's subject in
    the approvers' digest): a sentence may be longer than a name, nothing else changes."""
    if len(text) > max_length:
        return SlotCheck(None, TOO_LONG)
    if not text.strip():
        return SlotCheck(None)
    if _has_banned_character(text):
        return SlotCheck(None, CONTROL_CHARACTER)
    flat = " ".join(text.split())
    if _MARKUP.search(flat):
        return SlotCheck(None, MARKUP)
    if _looks_like_link(flat):
        return SlotCheck(None, URL_OR_SCHEME)
    return SlotCheck(flat)
