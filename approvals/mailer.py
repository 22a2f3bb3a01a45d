"""Composing and handing one email to Django's email backend (django-anymail for providers).

`EMAIL_BACKEND` is the one seam: console in development, locmem in tests, an anymail
backend (Resend, Postmark, SES, Mailgun, SendGrid...) in production. This module knows
nothing about gates or the database; `approvals.sending` decides whether to call it.
"""

from __future__ import annotations

import smtplib
import socket
from dataclasses import dataclass

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.mail.message import make_msgid

from approvals.email_html import email_html_render
from approvals.models import ApprovalRequest
from ledger.links import recovery_link_url

try:  # anymail is a dependency, but keep the classifier usable without it
    from anymail.exceptions import (
        AnymailAPIError,
        AnymailConfigurationError,
        AnymailInvalidAddress,
        AnymailRecipientsRefused,
        AnymailUnsupportedFeature,
    )
except ImportError:  # pragma: no cover
    AnymailAPIError = AnymailConfigurationError = AnymailInvalidAddress = None
    AnymailRecipientsRefused = AnymailUnsupportedFeature = None

try:  # anymail's HTTP backends run on requests
    from requests import exceptions as requests_exceptions
except ImportError:  # pragma: no cover
    requests_exceptions = None  # type: ignore[assignment]

LINK_LEAD = "Update your payment details here:"


@dataclass(frozen=True)
class ComposedEmail:
    recipient: str
    subject: str  # as approved
    body: str  # as approved, before link and disclosure
    link: str  # the signed /r/ link minted for this send
    full_body: str  # exactly what leaves (the text/plain part)
    html_body: str = ""  # the text/html alternative exactly as it leaves ("" = text only)


def email_compose(*, approval: ApprovalRequest) -> ComposedEmail:
    """The email as it would leave now: approved copy, then our signed link, then (for copy
    a model drafted) the PAYPILOT_AI_DISCLOSURE line when it is set; and the same copy, link
    and disclosure as the HTML alternative (`approvals.email_html`). The link is minted here,
    at send time, so nothing long-lived sits in the draft."""
    invoice = approval.invoice
    customer = invoice.customer
    link = recovery_link_url(invoice=invoice)
    parts = [approval.body.rstrip(), f"{LINK_LEAD}\n{link}"]
    disclosure = settings.PAYPILOT_AI_DISCLOSURE.strip()
    # Model-written copy stays model-written after a person's edit; committed template
    # copy gets no claim it was written by AI.
    if not (disclosure and approval.draft.source == "llm"):
        disclosure = ""
    if disclosure:
        parts.append(disclosure)
    return ComposedEmail(
        recipient=(customer.email.strip() if customer is not None else ""),
        subject=approval.subject,
        body=approval.body,
        link=link,
        full_body="\n\n".join(parts) + "\n",
        html_body=email_html_render(
            tenant=approval.tenant, locale=approval.draft.locale, subject=approval.subject,
            body=approval.body, link=link, disclosure=disclosure,
        ),
    )


class DeliveryError(Exception):
    """The backend did not confirm the message. `transient` says whether trying again later
    can help (timeouts, 429, 5xx, 4xx SMTP replies) or not (refused or invalid address,
    4xx API answers, configuration). `ambiguous`: the request reached the provider and its
    answer was lost (a read timeout, a 2xx we could not read), so the message may have gone
    out and must not be retried automatically."""

    def __init__(self, code: str, *, transient: bool, ambiguous: bool = False) -> None:
        super().__init__(code)
        self.code = code
        self.transient = transient
        self.ambiguous = ambiguous


def delivery_error_classify(exc: Exception) -> DeliveryError:
    """Map a backend exception to a DeliveryError with a stable code."""
    permanent_anymail = tuple(
        t for t in (AnymailRecipientsRefused, AnymailInvalidAddress, AnymailUnsupportedFeature,
                    AnymailConfigurationError) if t is not None
    )
    if permanent_anymail and isinstance(exc, permanent_anymail):
        return DeliveryError("provider_refused", transient=False)
    if AnymailAPIError is not None and isinstance(exc, AnymailAPIError):
        status = getattr(exc, "status_code", None)
        # anymail re-raises a requests failure as a subclass of both types: a read timeout
        # means the request was sent and only the answer is missing (a connect timeout is
        # both Timeout and ConnectionError, and nothing was sent).
        if (requests_exceptions is not None and isinstance(exc, requests_exceptions.Timeout)
                and not isinstance(exc, requests_exceptions.ConnectTimeout)):
            return DeliveryError("provider_timeout", transient=False, ambiguous=True)
        if status is not None and 200 <= status < 300:  # accepted, then unreadable
            return DeliveryError("provider_answer_unreadable", transient=False, ambiguous=True)
        if status is None or status == 429 or status >= 500:
            return DeliveryError("provider_unavailable", transient=True)
        return DeliveryError("provider_rejected", transient=False)
    if isinstance(exc, smtplib.SMTPRecipientsRefused | smtplib.SMTPSenderRefused):
        return DeliveryError("smtp_refused", transient=False)
    if isinstance(exc, smtplib.SMTPServerDisconnected | smtplib.SMTPConnectError):
        return DeliveryError("smtp_unavailable", transient=True)
    if isinstance(exc, smtplib.SMTPResponseException):
        transient = 400 <= exc.smtp_code < 500
        return DeliveryError("smtp_temporary" if transient else "smtp_permanent", transient=transient)
    if isinstance(exc, TimeoutError | socket.timeout | ConnectionError):
        return DeliveryError("connection_failed", transient=True)
    return DeliveryError("delivery_failed", transient=False)


def email_deliver(*, composed: ComposedEmail, send_id: int | None = None,
                  metadata: dict[str, str] | None = None, tags: list[str] | None = None) -> str:
    """Hand the message (text, plus the HTML alternative when there is one) to the
    configured backend; returns the provider's message id (anymail) or the Message-ID header
    we set (any other backend). Raises DeliveryError. A customer email passes `send_id`
    (tracking events find their `EmailSend` by it); other mail (the approvers' digest)
    passes its own metadata and tags."""
    message_id = make_msgid(domain=settings.DEFAULT_FROM_EMAIL.rpartition("@")[2] or None)
    message = EmailMultiAlternatives(
        subject=composed.subject,
        body=composed.full_body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[composed.recipient],
        headers={"Message-ID": message_id},
        connection=get_connection(fail_silently=False),
    )
    if composed.html_body:
        message.attach_alternative(composed.html_body, "text/html")
    # anymail passes these to the provider; tracking events echo them back.
    if send_id is not None:
        metadata = {**(metadata or {}), "paypilot_send": str(send_id)}
    message.metadata = metadata or {}  # type: ignore[attr-defined]
    message.tags = tags or ["paypilot-dunning"]  # type: ignore[attr-defined]
    try:
        accepted = message.send(fail_silently=False)
    except Exception as exc:  # every backend raises its own types; classify them once
        raise delivery_error_classify(exc) from exc
    if not accepted:
        raise DeliveryError("not_accepted", transient=True)
    status = getattr(message, "anymail_status", None)
    provider_id = getattr(status, "message_id", None) if status is not None else None
    # One recipient, so one id; anymail gives a set only when recipients' ids differ.
    if provider_id is not None and provider_id != "" and not isinstance(provider_id, set):
        return str(provider_id)
    return message_id
