"""Template tags of the approval console: the banner shown while sending is switched off."""

from __future__ import annotations

from django import template
from django.conf import settings
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag
def sending_off_banner() -> SafeString:
    """While PAYPILOT_SEND_EMAIL is off an approval is recorded but nothing is mailed (the
    `sending_enabled` gate records a dry run): every approval screen says so up front."""
    if settings.PAYPILOT_SEND_EMAIL:
        return mark_safe("")
    return mark_safe(  # constant text, nothing interpolated
        '<div class="pp-banner" id="pp-sending-off" role="alert"><strong>Sending is switched off.</strong> '
        "Approving records your decision, but no email leaves: each approved draft is stopped at the "
        "&ldquo;sending switched on&rdquo; gate and recorded as a dry run. An operator turns sending on with "
        "<code>PAYPILOT_SEND_EMAIL=true</code>.</div>"
    )
