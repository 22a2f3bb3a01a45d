"""Signed recovery links: `/r/<token>` under PAYPILOT_PUBLIC_BASE_URL.

The token is Django's `signing` of the invoice primary key with a timestamp, so it carries
no personal data, cannot be forged without SECRET_KEY and expires after
PAYPILOT_LINK_TTL_DAYS. approvals adds the link at send time; integrations serves it.
"""

from __future__ import annotations

from django.conf import settings
from django.core import signing

from ledger.models import Invoice

LINK_SALT = "paypilot.ledger.recovery-link"


def recovery_link_token(*, invoice: Invoice) -> str:
    return signing.dumps(invoice.pk, salt=LINK_SALT)


def recovery_link_url(*, invoice: Invoice) -> str:
    base = settings.PAYPILOT_PUBLIC_BASE_URL.rstrip("/")
    return f"{base}/r/{recovery_link_token(invoice=invoice)}"


def recovery_link_parse(token: str) -> int | None:
    """The invoice pk the token was minted for, or None when it is forged, altered or expired."""
    try:
        value = signing.loads(
            token, salt=LINK_SALT, max_age=settings.PAYPILOT_LINK_TTL_DAYS * 86400
        )
    except (signing.BadSignature, ValueError, TypeError):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value
