"""Fail-closed checks on outgoing copy (`guard_check`) and on untrusted slot values (`safe_field`).

`guard_check` is the output guard: the LLM path swaps a failing draft for the committed
template, and approvals re-runs it on edited drafts and as a send gate. It allows links
only to the configured hosts (`PAYPILOT_LINK_ALLOWED_HOSTS` plus the host of
`PAYPILOT_PUBLIC_BASE_URL`, which serves our signed `/r/<token>` link), and refuses
secret-shaped tokens, card-like digit runs and leftover placeholders.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings

# Reason codes (one per check).
LINK_HOST_NOT_ALLOWED = "link_host_not_allowed"  # a URL or bare domain outside the allowlist
SECRET_SHAPED_TOKEN = "secret_shaped_token"  # API keys, webhook secrets, JWTs, long random strings
CARD_LIKE_DIGITS = "card_like_digits"  # 13 to 19 digits in a run (spaces or dashes allowed)
LEFTOVER_PLACEHOLDER = "leftover_placeholder"  # {slot}, {{var}}, [[MASK]] left unfilled

_SCHEME_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,15}://[^\s<>\"'`]+")
_WWW = re.compile(r"(?i)\bwww\.[^\s<>\"'`]+")
_BARE_DOMAIN = re.compile(
    r"(?i)(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}(?::\d{1,5})?(?:/[^\s<>\"'`]*)?"
)
_SECRETS = re.compile(
    r"(?:"
    r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}"
    r"|\bwhsec_[A-Za-z0-9+/=]{8,}"
    r"|\bsk-[A-Za-z0-9_-]{16,}"
    r"|\bpp_[0-9a-f]{10}_[A-Za-z0-9_-]{8,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    # A long unbroken run of letters and digits mixing both reads as a key, not a word.
    r"|(?<![A-Za-z0-9_+/=-])(?=[A-Za-z0-9_+/=-]*\d)(?=[A-Za-z0-9_+/=-]*[A-Za-z])[A-Za-z0-9_+/=-]{32,}"
    r")"
)
_CARD_DIGITS = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_PLACEHOLDERS = re.compile(r"\{[^{}\n]{0,60}\}|\[\[[^\[\]\n]{1,60}\]\]|%\(\w+\)s|<<\s*\w+\s*>>")


@dataclass(frozen=True)
class GuardVerdict:
    ok: bool
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "reasons": list(self.reasons)}


@lru_cache(maxsize=8)
def _configured_hosts(allowed: tuple[str, ...], base_url: str) -> frozenset[str]:
    hosts = {h.strip().lower() for h in allowed if h.strip()}
    base_host = urlsplit(base_url).hostname
    if base_host:
        hosts.add(base_host.lower())
    return frozenset(hosts)


def allowed_hosts(extra: Iterable[str] = ()) -> frozenset[str]:
    base = _configured_hosts(tuple(settings.PAYPILOT_LINK_ALLOWED_HOSTS), settings.PAYPILOT_PUBLIC_BASE_URL)
    extra_hosts = {h.strip().lower() for h in extra if h.strip()}
    return base | extra_hosts if extra_hosts else base


def _host_of(candidate: str) -> str | None:
    """The host a link would open, or None when it cannot be read safely."""
    text = candidate if "://" in candidate else f"https://{candidate}"
    if "\\" in text:
        return None  # browsers read a backslash as a slash: the visible host may lie
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if "@" in parts.netloc:
        return None  # user-info tricks: https://trusted.example@evil.example
    return (parts.hostname or "").lower() or None


def _strip_links(text: str, hosts: frozenset[str]) -> tuple[str, bool]:
    """Remove allowed links (so their signed tokens are not read as secrets); flag others,
    which stay in the text for the remaining checks."""
    bad = False

    def check(match: re.Match[str]) -> str:
        nonlocal bad
        candidate = match.group(0).rstrip(".,;:!?)")
        host = _host_of(candidate)
        if host is None or host not in hosts:
            bad = True
            return match.group(0)
        return " "

    for pattern in (_SCHEME_URL, _WWW, _BARE_DOMAIN):
        text = pattern.sub(check, text)
    return text, bad


def guard_check(*, subject: str, body: str, extra_hosts: Iterable[str] = ()) -> GuardVerdict:
    """Scan outgoing copy. `extra_hosts` adds hosts allowed for this one message only."""
    reasons: list[str] = []
    text, bad_link = _strip_links(f"{subject}\n{body}", allowed_hosts(extra_hosts))
    if bad_link:
        reasons.append(LINK_HOST_NOT_ALLOWED)
    if _SECRETS.search(text):
        reasons.append(SECRET_SHAPED_TOKEN)
    if _CARD_DIGITS.search(text):
        reasons.append(CARD_LIKE_DIGITS)
    if _PLACEHOLDERS.search(text):
        reasons.append(LEFTOVER_PLACEHOLDER)
    return GuardVerdict(ok=not reasons, reasons=reasons)


# --- untrusted slot values --------------------------------------------------------------

MAX_FIELD_LENGTH = 80
_CONTROL_OR_MARKUP = re.compile(r"[\x00-\x1f\x7f{}\[\]<>`\\|]")
_EMAILISH = re.compile(r"@")
_LONG_DIGITS = re.compile(r"\d[\d\s-]{5,}\d")
# Text addressed to a model rather than naming a customer or a plan.
_INSTRUCTION = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instruction|instructions|previous|above|prompt|rules)\b"
    r"|\b(?:system|assistant|developer)\s*:"
    r"|\badd (?:this|a|the) link\b"
)


@lru_cache(maxsize=4096)  # the same tenant, plan and customer names recur on every request
def safe_field(value: str | None) -> str | None:
    """A customer or event string fit to be shown to a customer, or None (use the fallback).

    The same gate serves the template path and the prompt: anything carrying a link, an
    email address, a secret, a long digit run, markup, an instruction or excessive length
    is dropped whole rather than trimmed, because a trimmed attack is still an attack.
    """
    if not value:
        return None
    text = " ".join(str(value).split())
    if not text or len(text) > MAX_FIELD_LENGTH:
        return None
    if (
        _CONTROL_OR_MARKUP.search(text)
        or _EMAILISH.search(text)
        or _LONG_DIGITS.search(text)
        or _INSTRUCTION.search(text)
        or _SCHEME_URL.search(text)
        or _WWW.search(text)
        or _BARE_DOMAIN.search(text)
        or _SECRETS.search(text)
    ):
        return None
    return text
