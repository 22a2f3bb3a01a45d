"""The HTML part of a dunning email: the approved copy as escaped paragraphs, one button
carrying the signed link, the tenant's name, colour and logo, footer and disclosure.

Built for mail clients, not browsers: one table layout, inline styles only, no <style>,
<meta> or external CSS (the output guard refuses <meta> and <link> as active content), and
the button is a real <a href>. Every value is data: Django's autoescape writes the copy,
names and footer as text, and the colour and logo URL are validated again here
(`paypilot.branding`), so a value stored around the admin form falls back, never leaks in.
"""

from __future__ import annotations

import re

from django.template.loader import render_to_string

from dunning.catalogue import BASE_LOCALE, catalogue
from dunning.slots import safe_field
from paypilot.branding import brand_colour_or_default, logo_url_or_none, text_colour_on
from paypilot.models import Tenant

TEMPLATE = "approvals/email/dunning.html"
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def body_paragraphs(body: str) -> list[str]:
    """The approved text split at blank lines; single line breaks stay (as <br>)."""
    text = body.replace("\r\n", "\n").strip()
    return [p.strip("\n") for p in _PARAGRAPH_BREAK.split(text) if p.strip()] if text else []


def email_html_render(*, tenant: Tenant, locale: str, subject: str, body: str, link: str,
                      disclosure: str = "") -> str:
    """The HTML alternative for one email, in the draft's locale (English when that locale
    is not served). `body` is the approved text without the link line."""
    books = catalogue()
    used = locale if locale in books.available_locales() else BASE_LOCALE
    business = tenant.email_name
    # The header and the footer take the same slot rule the copy does (dunning.slots): an
    # unsafe name (a link, markup, bidi or zero-width characters) becomes the neutral
    # phrase ("The billing team") in both; a kept one is still escaped by the template.
    safe_business = safe_field(business)
    business_phrase = books.slot_value(used, "business", safe_business)
    colour = brand_colour_or_default(tenant.brand_colour)
    return render_to_string(TEMPLATE, {
        "lang": used,
        "subject": subject,
        "business": safe_business or business_phrase,
        "logo_url": logo_url_or_none(tenant.logo_url),
        "colour": colour,
        "button_text": text_colour_on(colour),
        "paragraphs": body_paragraphs(body),
        "link": link,
        "button": books.text(used, "email.button"),
        "secure_note": books.text(used, "email.secure_note"),
        "footer": books.text(used, "email.footer").replace("{business}", business_phrase),
        "disclosure": disclosure,
    })
