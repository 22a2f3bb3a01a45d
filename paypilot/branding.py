"""A tenant's email branding (display name, brand colour, logo URL): validators used by the
model, the admin form and again at render time, so a value written around the form (a raw
UPDATE, an old row) still never reaches an email unchecked."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

DEFAULT_BRAND_COLOUR = "#1f4b99"
_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
LOGO_URL_MAX = 500
# Letters a browser drops or reads as a separator inside a URL: never in a logo address.
_URL_UNSAFE = re.compile(r"[\x00-\x20\x7f\\\"'<>`]")


def brand_colour_validate(value: str) -> None:
    """`#rrggbb` only: the colour lands in an inline style, so nothing else may."""
    if value and not _COLOUR.match(value):
        raise ValidationError("Use a colour of the form #rrggbb (for example #1f4b99).",
                              code="brand_colour_invalid")


def logo_url_validate(value: str) -> None:
    """An absolute https:// URL with a host and no credentials, quotes, spaces or
    backslashes: no javascript:, data:, http: (mixed content) or protocol-relative forms."""
    if not value:
        return
    problem = ""
    if len(value) > LOGO_URL_MAX:
        problem = f"at most {LOGO_URL_MAX} characters"
    elif _URL_UNSAFE.search(value) or not value.isascii():
        problem = "no spaces, quotes, backslashes or non-ASCII characters"
    else:
        try:
            parts = urlsplit(value)
            host = parts.hostname
        except ValueError:
            parts, host = None, None
        if parts is None or parts.scheme != "https" or not value.startswith("https://"):
            problem = "an https:// address"
        elif not host or "@" in parts.netloc or "." not in host:
            problem = "a public host name, without user or password"
    if problem:
        raise ValidationError(f"The logo URL must be {problem}.", code="logo_url_invalid")


def brand_colour_or_default(value: str) -> str:
    try:
        brand_colour_validate(value)
    except ValidationError:
        return DEFAULT_BRAND_COLOUR
    return value.lower() if value else DEFAULT_BRAND_COLOUR


def logo_url_or_none(value: str) -> str | None:
    try:
        logo_url_validate(value)
    except ValidationError:
        return None
    return value or None


def text_colour_on(background: str) -> str:
    """Black or white, whichever reads better on `background` (WCAG relative luminance)."""
    channels = [int(background[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    # Contrast with white is 1.05 / (L + 0.05), with black (L + 0.05) / 0.05.
    return "#ffffff" if 1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.05 else "#111111"
