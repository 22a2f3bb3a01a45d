"""anymail tracking webhooks (delivered, bounced, clicked) -> the send row and the ledger.

anymail's own views verify and normalise each provider's webhook and fire its `tracking`
signal; `tracking_receiver` (connected in `ApprovalsConfig.ready`) hands the normalised
event to `send_tracking_apply`. The views are mounted by `approvals/urls.py` behind
`webhook_secret_required`, so a deployment without a webhook secret refuses them instead
of trusting anyone who posts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from approvals.models import EmailSend
from ledger.services import IllegalTransition, invoice_mark_clicked
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context, tenant_for_row

logger = logging.getLogger("paypilot.approvals")

# anymail event type -> the send status it sets (None: recorded on a timestamp only).
TRACKED_EVENTS: dict[str, str | None] = {
    "delivered": EmailSend.Status.DELIVERED,
    "bounced": EmailSend.Status.BOUNCED,
    "clicked": None,
}
_AUTH_KEYS_SUFFIXES = ("WEBHOOK_SECRET", "_SIGNING_KEY", "_SIGNING_SECRET", "_WEBHOOK_KEY")


def webhook_auth_configured() -> bool:
    """True when anymail has a shared secret (basic auth) or a provider signing key."""
    config = getattr(settings, "ANYMAIL", {}) or {}
    return any(value and str(key).upper().endswith(_AUTH_KEYS_SUFFIXES) for key, value in config.items())


def webhook_secret_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Refuse (403 webhook_auth_not_configured) when nothing authenticates the webhook."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not webhook_auth_configured():
            return JsonResponse(
                {"error": "webhook_auth_not_configured",
                 "detail": "set ANYMAIL WEBHOOK_SECRET (or the provider's signing key)"},
                status=403,
            )
        return view(request, *args, **kwargs)

    wrapped.csrf_exempt = True  # type: ignore[attr-defined]
    return wrapped


def _find_send(*, message_id: str | None, metadata: dict[str, Any] | None) -> EmailSend | None:
    if message_id:
        found = EmailSend.objects.filter(message_id=message_id).select_related(
            "invoice", "tenant"
        ).first()
        if found is not None:
            return found
    ref = (metadata or {}).get("paypilot_send")
    if ref and str(ref).isdigit():
        return EmailSend.objects.filter(pk=int(ref)).select_related("invoice", "tenant").first()
    return None


def send_tracking_apply(
    *, event_type: str, message_id: str | None, metadata: dict[str, Any] | None = None,
    timestamp: datetime | None = None,
) -> bool:
    """Apply one tracking event. Returns False for an event we do not track or a message we
    did not send. A bounce is final (a later "delivered" does not undo it); a click moves
    the invoice to `clicked` through the ledger."""
    if event_type not in TRACKED_EVENTS:
        return False
    # Our send id travels in the provider's metadata: it names the tenant to bind (row-level
    # security) before anything tenant-scoped is read.
    ref = str((metadata or {}).get("paypilot_send", ""))
    tenant_id = tenant_for_row(EmailSend, int(ref)) if ref.isdigit() else None
    when = timestamp or timezone.now()
    with tenant_context(tenant_id):
        send = _find_send(message_id=message_id, metadata=metadata)
        if send is None:
            return False
        locked = EmailSend.objects.select_for_update().get(pk=send.pk)
        if locked.status not in EmailSend.TOUCH_STATUSES:
            return False  # a provider event for a message we never recorded as sent
        fields: list[str] = []
        if event_type == "delivered" and locked.status == EmailSend.Status.SENT:
            locked.status, locked.delivered_at = EmailSend.Status.DELIVERED, when
            fields = ["status", "delivered_at"]
        elif event_type == "bounced" and locked.status != EmailSend.Status.BOUNCED:
            locked.status, locked.bounced_at = EmailSend.Status.BOUNCED, when
            fields = ["status", "bounced_at"]
        elif event_type == "clicked" and locked.clicked_at is None:
            locked.clicked_at = when
            fields = ["clicked_at"]
        if not fields:
            return True  # a redelivered event
        locked.save(update_fields=fields)
        audit_record(
            event=f"approvals.send.{event_type}", tenant=send.tenant,
            detail={"send": locked.pk, "approval": locked.approval_id, "invoice_id": locked.invoice_id},
        )
        if event_type == "clicked":
            try:
                invoice_mark_clicked(invoice=send.invoice, event_ref=f"send:{send.pk}")
            except IllegalTransition:
                logger.warning("click on send %s could not move invoice %s", send.pk, send.invoice_id)
    return True


def tracking_receiver(sender: Any, event: Any, esp_name: str, **kwargs: Any) -> None:
    """anymail `tracking` signal handler."""
    send_tracking_apply(
        event_type=str(getattr(event, "event_type", "")),
        message_id=getattr(event, "message_id", None),
        metadata=getattr(event, "metadata", None),
        timestamp=getattr(event, "timestamp", None),
    )
