"""Fail-closed checks on outgoing copy (`guard_check`); untrusted slot values are `dunning.slots`.

`guard_check` is the output guard: the LLM path swaps a failing draft for the committed
template, and approvals re-runs it on edited drafts and as a send gate. It allows links
only to the configured hosts (`PAYPILOT_LINK_ALLOWED_HOSTS` plus the host of
`PAYPILOT_PUBLIC_BASE_URL`, which serves our signed `/r/<token>` link), refuses every
other scheme (`javascript:`, `data:`, `vbscript:`, `file:`, protocol-relative `//host`),
also when hidden by HTML entities, percent-encoding, mixed case, control characters or
Unicode look-alikes, and refuses secret-shaped tokens, card-like digit runs and leftover
placeholders. It reads plain text and, when given one, an HTML part (attribute values,
entities and active content included).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

from django.conf import settings

# Reason codes (one per check).
LINK_HOST_NOT_ALLOWED = "link_host_not_allowed"  # a URL or bare domain outside the allowlist
SECRET_SHAPED_TOKEN = "secret_shaped_token"  # API keys, webhook secrets, JWTs, long random strings
CARD_LIKE_DIGITS = "card_like_digits"  # 13 to 19 digits in a run (spaces or dashes allowed)
LEFTOVER_PLACEHOLDER = "leftover_placeholder"  # {slot}, {{var}}, [[MASK]] left unfilled
LINK_SCHEME_NOT_ALLOWED = "link_scheme_not_allowed"  # javascript:, data:, //host, ... (any form)
HTML_ACTIVE_CONTENT = "html_active_content"  # <script>, on* handlers, <iframe>... in an HTML part

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


def _strip_links(text: str, hosts: frozenset[str], minted: str | None = None) -> tuple[str, bool, bool]:
    """Remove allowed links (so their signed tokens are not read as secrets); flag others,
    which stay in the text for the remaining checks. Returns (text, bad host, bad scheme):
    a link to an allowed host under any scheme but http(s) (`ftp://`, `ws://`) is refused.
    With `minted` (the one link minted for this send), any other link to its host is
    refused too: an old or another invoice's `/r/` link pasted into the copy."""
    bad_host = bad_scheme = False
    minted_host = _host_of(minted) if minted else None

    def check(match: re.Match[str]) -> str:
        nonlocal bad_host, bad_scheme
        candidate = match.group(0).rstrip(".,;:!?)")
        scheme = candidate.partition("://")[0].lower() if "://" in candidate else "https"
        host = _host_of(candidate)
        if host is None or host not in hosts or (host == minted_host and candidate != minted):
            bad_host = True
            return match.group(0)
        if scheme not in _WEB_SCHEMES:
            bad_scheme = True
            return match.group(0)
        return " "

    for pattern in (_SCHEME_URL, _WWW, _BARE_DOMAIN):
        text = pattern.sub(check, text)
    return text, bad_host, bad_scheme


# --- link schemes, encodings and look-alikes -----------------------------------------------

# Characters a browser drops from a URL or that render as nothing: tab, CR, LF anywhere (the
# WHATWG URL parser strips them), the other C0 controls and spaces (stripped at the edges of
# an attribute), and the invisible format characters an attacker puts inside a word.
_FORMAT_CHARS = "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff"
_GAP = rf"[\x00-\x20\x7f{_FORMAT_CHARS}]*"
_INVISIBLE = re.compile(rf"[\x00-\x1f\x7f{_FORMAT_CHARS}]")


def _spaced(word: str) -> str:
    """`word` with any run of ignorable characters allowed between its letters."""
    return _GAP.join(re.escape(ch) for ch in word)


# A scheme that runs code, embeds a document or opens the reader's disk. `data:` and `file:`
# must look like the URL (a media type then `,` or `;`; a slash) so prose such as "the card
# on file: Visa" still reads as prose.
_DANGEROUS_SCHEME = re.compile(
    r"(?i)(?<![a-z0-9+.-])(?:"
    + "|".join(_spaced(s) + _GAP + ":" for s in ("javascript", "vbscript", "livescript", "mocha"))
    + "|" + _spaced("data") + _GAP + r":\s*[\w.+-]*(?:/[\w.+-]*)?\s*(?:;[^,\s]*)?\s*,"
    + "|" + _spaced("file") + _GAP + r":\s*[/\\]"
    + "|" + _spaced("blob") + _GAP + ":" + _GAP + "[a-z]"
    + ")"
)
# Protocol-relative (`//evil.example`, `\\\\evil.example`, `/\\evil.example`): the reader's
# client supplies the scheme and the host is whatever follows.
_PROTOCOL_RELATIVE = re.compile(r"(?<![:/\\\w])[/\\]{2}(?=[^\s/\\])")
# A domain with a non-ASCII letter in it and an ASCII letter in its last label: never our
# (ASCII) host, and the shape of a look-alike (`pаypilot.example` with a Cyrillic `а`).
# The last label must hold an ASCII letter so that CJK or Cyrillic prose is not read as one.
_UNICODE_DOMAIN = re.compile(
    r"(?i)(?<![\w.-])(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+(?=[^\W\d_]*[a-z])[^\W\d_]{2,24}(?![\w-])"
)
# Characters drawn like ASCII ones (Unicode's confusables, the ones that matter for a host
# name: Cyrillic, Greek, Armenian, Latin extensions) and the dots IDNA reads as a full stop.
# Folding the copy through this table and finding an allowed host where the copy itself
# spells something else is a homograph of that host.
_CONFUSABLES = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j",
    "ѕ": "s", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ı": "i", "ո": "n",
    "ս": "u", "α": "a", "ο": "o", "ρ": "p", "ν": "v", "τ": "t", "κ": "k", "ι": "i", "ε": "e",
    "А": "a", "В": "b", "Е": "e", "К": "k", "М": "m", "Н": "h", "О": "o", "Р": "p", "С": "c",
    "Т": "t", "Х": "x", "Ѕ": "s", "І": "i", "Ј": "j", "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z",
    "Η": "h", "Ι": "i", "Κ": "k", "Μ": "m", "Ν": "n", "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y",
    "Χ": "x", "\u3002": ".", "\uff0e": ".", "\uff61": ".", "\u2024": ".", "\ufe52": ".",
    "0": "o", "1": "l",
})
_WEB_SCHEMES = frozenset({"http", "https"})


def _decoded(text: str) -> str:
    """The text as a reader's client may end up reading it: HTML entities decoded (twice
    encoded too: `&amp;#106;`), percent-escapes decoded, compatibility forms folded (NFKC:
    fullwidth letters and colons)."""
    for _ in range(3):
        unescaped = html.unescape(text)
        if unescaped == text:
            break
        text = unescaped
    for _ in range(2):
        unquoted = unquote(text)
        if unquoted == text:
            break
        text = unquoted
    return unicodedata.normalize("NFKC", text)


# Every character _GAP allows between letters, for the cheap pre-check below.
_GAP_CHARS = dict.fromkeys(
    [*range(0x00, 0x21), 0x7F, 0xAD, 0x34F, 0x61C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E,
     *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2065), 0xFEFF]
)
_SCHEME_WORDS = ("script", "mocha", "data", "file", "blob")


def _scheme_refused(text: str) -> bool:
    # The full pattern tries every position; most copy names none of the schemes' words
    # even with the gaps taken out, and is done after one translate.
    compact = text.translate(_GAP_CHARS).lower()
    if any(word in compact for word in _SCHEME_WORDS) and _DANGEROUS_SCHEME.search(text):
        return True
    return _PROTOCOL_RELATIVE.search(text) is not None


def _lookalike_host(text: str, hosts: frozenset[str]) -> bool:
    """A non-ASCII domain, or an allowed host spelt with look-alike characters."""
    if not text.isascii() and any(not m.group(0).isascii() for m in _UNICODE_DOMAIN.finditer(text)):
        return True
    # One character in, one out, so a match in the folded copy has the same span in the copy
    # (the table maps one character to one; lower() keeps lengths but for a few letters).
    folded, lowered = text.translate(_CONFUSABLES).lower(), text.lower()
    if len(folded) != len(text) or len(lowered) != len(text):
        folded = "".join(c.translate(_CONFUSABLES).lower()[:1] or c for c in text)
        lowered = "".join(c.lower()[:1] or c for c in text)
    for host in hosts:
        skeleton = host.translate(_CONFUSABLES)
        for match in re.finditer(re.escape(skeleton), folded):
            if lowered[match.start():match.end()] != host:
                return True
    return False


# --- the HTML part ------------------------------------------------------------------------

# Attributes a client resolves as a URL (and loads or opens).
_URL_ATTRIBUTES = frozenset({
    "href", "src", "action", "formaction", "xlink:href", "background", "poster", "srcset",
    "cite", "ping", "data", "longdesc", "lowsrc", "dynsrc", "manifest", "codebase", "archive",
    "usemap", "icon", "profile", "imagesrcset",
})
# Elements that run code, frame another document, submit data or rebase every link.
_ACTIVE_TAGS = frozenset({
    "script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "form",
    "input", "button", "textarea", "select", "meta", "link", "portal", "noscript", "template",
})
_CSS_URL = re.compile(r"(?i)url\s*\(\s*['\"]?\s*([^'\")\s]*)|@import|expression\s*\(|behavior\s*:")
_FRAGMENT = re.compile(r"#[\w.:-]*")


class _HtmlPart(HTMLParser):
    """Splits an HTML part into visible text, URL-valued attributes and active content.
    The parser decodes entities in text and attribute values, as a browser would."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.urls: list[str] = []
        self.image_sources: list[str] = []  # <img src> values, judged apart (see `images`)
        self.active = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _ACTIVE_TAGS:
            self.active = True
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") or name in {"formaction", "srcdoc"}:
                self.active = True
            if tag == "img" and name == "src":
                self.image_sources.append(value)
            elif name in _URL_ATTRIBUTES:
                parts = value.split(",") if name.endswith("srcset") else [value]
                self.urls.extend(p.strip().split(" ")[0] if name.endswith("srcset") else p for p in parts)
            if name == "style":
                self._css(value)

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style":
            self._css(data)
        self.text.append(data)

    def _css(self, css: str) -> None:
        for match in _CSS_URL.finditer(css):
            if match.group(1) is None:
                self.active = True  # @import, expression(), behavior: code or another sheet
            else:
                self.urls.append(match.group(1))


def _url_allowed(value: str, hosts: frozenset[str], minted: str | None = None) -> bool:
    """An attribute URL passes only as an absolute http(s) link to an allowed host (or a
    bare in-page `#fragment`): relative links have no base in an email, and every other
    scheme is refused whatever its spelling."""
    url = re.sub(r"[\t\n\r]", "", value)
    url = re.sub(r"^[\x00-\x20]+|[\x00-\x20]+$", "", url)
    if _INVISIBLE.search(url):
        return False
    if not url or _FRAGMENT.fullmatch(url):
        return True
    scheme, sep, _rest = url.partition(":")
    if not sep or scheme.lower() not in _WEB_SCHEMES or not url[len(scheme) + 1:].startswith("//"):
        return False
    host = _host_of(url)
    if minted and host == _host_of(minted) and url != minted:
        return False
    return host is not None and host in hosts


@dataclass(frozen=True)
class _LinkFindings:
    text: str  # the copy with its allowed links removed, for the remaining checks
    bad_host: bool
    bad_scheme: bool
    active: bool


def _links_check(text: str, html_part: str | None, hosts: frozenset[str],
                 minted: str | None = None, images: frozenset[str] = frozenset()) -> _LinkFindings:
    """Every link in the text and the HTML part, read raw and decoded. An `<img src>` that
    is exactly one of `images` passes; every other image source is judged like a link."""
    active = False
    sources = [text]
    if html_part is not None:
        parser = _HtmlPart()
        parser.feed(html_part)
        parser.close()
        active = parser.active
        bad_attr = not all(_url_allowed(url, hosts, minted) for url in parser.urls) or not all(
            src in images or _url_allowed(src, hosts, minted) for src in parser.image_sources
        )
        # The visible text goes through the text checks; the raw source through the scheme
        # scan below (a scheme in a title or a broken tag is still refused).
        sources.append("\n".join(parser.text))
    else:
        bad_attr = False
    stripped, bad_host, bad_scheme = _strip_links("\n".join(sources), hosts, minted)
    raw = "\n".join([text, html_part or ""])
    decoded = _decoded(raw)
    if decoded != raw:  # plain copy decodes to itself: its links were read above
        # The allowed image sources were judged as attributes above; the visible text was
        # read without them, so an allowed logo URL typed into the copy is still refused.
        for src in images:
            decoded = decoded.replace(src, " ")
        _, decoded_bad_host, decoded_bad_scheme = _strip_links(decoded, hosts, minted)
        bad_host = bad_host or decoded_bad_host
        bad_scheme = bad_scheme or decoded_bad_scheme or _scheme_refused(decoded)
    bad_host = bad_host or _lookalike_host(decoded, hosts)
    bad_scheme = bad_scheme or bad_attr or _scheme_refused(raw)
    return _LinkFindings(text=stripped, bad_host=bad_host, bad_scheme=bad_scheme, active=active)


def guard_check(*, subject: str, body: str, html_body: str | None = None,
                extra_hosts: Iterable[str] = (), minted: str | None = None,
                images: Iterable[str] = ()) -> GuardVerdict:
    """Scan outgoing copy: the subject, the text part and (when there is one) the HTML part.
    `extra_hosts` adds hosts allowed for this one message only; `minted` is the link minted
    for this send, the only one to its host that may appear (the approvals send gates);
    `images` are exact URLs allowed as an `<img src>` of the HTML part and nowhere else (the
    tenant's validated logo)."""
    reasons: list[str] = []
    found = _links_check(f"{subject}\n{body}", html_body, allowed_hosts(extra_hosts), minted,
                         frozenset(i for i in images if i))
    if found.bad_host:
        reasons.append(LINK_HOST_NOT_ALLOWED)
    if found.bad_scheme:
        reasons.append(LINK_SCHEME_NOT_ALLOWED)
    if found.active:
        reasons.append(HTML_ACTIVE_CONTENT)
    text = found.text
    if _SECRETS.search(text):
        reasons.append(SECRET_SHAPED_TOKEN)
    if _CARD_DIGITS.search(text):
        reasons.append(CARD_LIKE_DIGITS)
    if _PLACEHOLDERS.search(text):
        reasons.append(LEFTOVER_PLACEHOLDER)
    return GuardVerdict(ok=not reasons, reasons=reasons)
