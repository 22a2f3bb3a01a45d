"""The approvers' digest: one email per user and period listing the drafts waiting for them.

Who: active staff users whose `DigestPreference` is hourly or daily, who hold the approve
permission and have an email address; a tenant member for their tenant, a platform admin
(superuser without a membership) for every tenant. What: pending requests not yet expired,
of active tenants only (a suspended tenant's drafts cannot be sent, so they are not asked
for), without the high-value ones this user already gave the first approval to (they need
someone else); oldest first, then highest amount. Each line links to the review page in the
admin (login required): the email itself approves nothing.

Once per period: the `DigestSend` row is inserted (unique on user, frequency, period) before
anything is sent, so a second worker or a task run again finds the period taken. Nothing
waits, nothing is sent and no row is written. With PAYPILOT_SEND_EMAIL off the digest is
recorded as a dry run and not sent. Every outcome writes an audit event in the transaction
of its row. Customer names and emails stay out of the digest (an inbox is outside the
console's access control): lines name the draft, amount, invoice id and age.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from approvals.mailer import ComposedEmail, DeliveryError, email_deliver
from approvals.models import AdminMembership, ApprovalRequest, DigestPreference, DigestSend
from approvals.services import APPROVE_PERMISSION
from dunning.slots import line_check
from ledger.money import format_minor
from paypilot.models import Tenant
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context

logger = logging.getLogger("paypilot.approvals")

DIGEST_MAX_LINES = 50  # the rest is a count and a link to the queue
Frequency = DigestPreference.Frequency


@dataclass(frozen=True)
class DigestLine:
    approval_id: int
    tenant: str  # the tenant's slug (a platform admin's digest spans tenants)
    subject: str
    amount: str  # "49.00 USD"
    amount_minor: int
    invoice: str  # the provider's invoice id
    requested_at: datetime
    waiting: str  # "3 h", "2 d"
    expires_in: str
    high_value: bool
    url: str  # the review page, absolute


@dataclass(frozen=True)
class DigestResult:
    user_id: int
    # sent | dry_run | failed | nothing_waiting | already_sent | not_due | not_eligible
    outcome: str
    items: int = 0


def digest_period_start(*, frequency: str, now: datetime) -> datetime | None:
    """The start of the period `now` falls in (UTC), or None when no digest is due yet
    (a daily one before PAYPILOT_DIGEST_DAILY_HOUR)."""
    now = now.astimezone(UTC)
    if frequency == Frequency.HOURLY:
        return now.replace(minute=0, second=0, microsecond=0)
    if frequency == Frequency.DAILY:
        start = now.replace(hour=settings.PAYPILOT_DIGEST_DAILY_HOUR, minute=0, second=0, microsecond=0)
        return start if now >= start else None
    return None


def _span(delta: timedelta) -> str:
    hours = max(int(delta.total_seconds() // 3600), 0)
    if hours < 1:
        return f"{max(int(delta.total_seconds() // 60), 0)} min"
    return f"{hours} h" if hours < 48 else f"{hours // 24} d"


def _review_url(approval_id: int) -> str:
    path = reverse("admin:approvals_approvalrequest_change", args=[approval_id])
    return f"{settings.PAYPILOT_PUBLIC_BASE_URL.rstrip('/')}{path}"


def _digest_subject(approval_id: int, subject: str) -> str:
    """A draft's subject as the digest may show it: the copy rule of `dunning.slots` (no
    link, scheme, markup, bidi or zero-width characters), else a neutral line naming the
    draft; the approver sees the full subject on the review page."""
    check = line_check(subject)
    return check.value or f"Draft #{approval_id} (subject not shown: {check.reason or 'empty'})"


def _tenants_of(user: Any) -> list[Tenant]:
    """Active tenants the user approves for: their membership's, or all for a platform admin."""
    membership = AdminMembership.objects.select_related("tenant").filter(user=user).first()
    if membership is not None:
        tenants = [membership.tenant]
    elif user.is_superuser:
        tenants = list(Tenant.objects.order_by("pk"))
    else:
        tenants = []
    return [t for t in tenants if t.is_active]


def digest_lines(*, user: Any, now: datetime) -> tuple[list[DigestLine], int]:
    """What waits for `user`: the first DIGEST_MAX_LINES lines (oldest first, then the
    highest amount) and how many there are in all. Each tenant is read under its own
    binding (PostgreSQL row-level security)."""
    lines: list[DigestLine] = []
    total = 0
    for tenant in _tenants_of(user):
        with tenant_context(tenant.pk):
            waiting = (
                ApprovalRequest.objects.filter(tenant=tenant, status=ApprovalRequest.Status.PENDING,
                                               expires_at__gt=now)
                .exclude(first_approver=user)
            )
            total += waiting.count()
            rows = waiting.select_related("invoice").order_by(
                "requested_at", "-invoice__amount_minor", "id")[:DIGEST_MAX_LINES]
            for row in rows:
                invoice = row.invoice
                lines.append(DigestLine(
                    approval_id=row.pk, tenant=tenant.slug, subject=_digest_subject(row.pk, row.subject),
                    amount=f"{format_minor(invoice.amount_minor, invoice.currency)} {invoice.currency}",
                    amount_minor=invoice.amount_minor, invoice=invoice.external_invoice_id,
                    requested_at=row.requested_at, waiting=_span(now - row.requested_at),
                    expires_in=_span(row.expires_at - now), high_value=row.high_value,
                    url=_review_url(row.pk),
                ))
    lines.sort(key=lambda line: (line.requested_at, -line.amount_minor, line.approval_id))
    return lines[:DIGEST_MAX_LINES], total


def digest_compose(*, user: Any, lines: list[DigestLine], total: int, frequency: str) -> ComposedEmail:
    """The digest as it leaves: a text part and an HTML part from the same lines."""
    queue = f"{settings.PAYPILOT_PUBLIC_BASE_URL.rstrip('/')}{reverse('admin:approvals_approvalrequest_changelist')}"
    noun = "draft waits" if total == 1 else "drafts wait"
    context = {"lines": lines, "total": total, "more": total - len(lines), "queue_url": queue,
               "frequency": frequency, "noun": noun, "username": user.get_username()}
    return ComposedEmail(
        recipient=user.email.strip(),
        subject=f"PayPilot: {total} {noun} for your approval",
        body="",
        link=queue,
        full_body=render_to_string("approvals/email/digest.txt", context),
        html_body=render_to_string("approvals/email/digest.html", context),
    )


def _audit_tenant(user: Any) -> Tenant | None:
    membership = AdminMembership.objects.select_related("tenant").filter(user=user).first()
    return membership.tenant if membership is not None else None


def _finish(*, digest: DigestSend, user: Any, status: str, event: str, **fields: Any) -> None:
    tenant = _audit_tenant(user)
    with transaction.atomic():
        DigestSend.objects.filter(pk=digest.pk).update(status=status, **fields)
        audit_record(event=event, tenant=tenant, detail={
            "digest": digest.pk, "approver": user.pk, "frequency": digest.frequency,
            "period_start": digest.period_start.isoformat(), "count": digest.items,
            "dry_run": status == DigestSend.Status.DRY_RUN, **({"reason": fields["error_code"]}
                                                              if fields.get("error_code") else {}),
        })


def digest_send_one(*, user: Any, frequency: str, now: datetime) -> DigestResult:
    """Send (or record as a dry run) this user's digest for the period `now` is in, at most
    once. Never raises for a delivery failure: it is recorded (`failed`) and audited."""
    period = digest_period_start(frequency=frequency, now=now)
    if period is None:
        return DigestResult(user.pk, "not_due")
    if not (user.is_active and user.is_staff and user.email and user.has_perm(APPROVE_PERMISSION)):
        return DigestResult(user.pk, "not_eligible")
    if DigestSend.objects.filter(user=user, frequency=frequency, period_start=period).exists():
        return DigestResult(user.pk, "already_sent")  # the cheap check; the insert decides
    lines, total = digest_lines(user=user, now=now)
    if total == 0:
        return DigestResult(user.pk, "nothing_waiting")
    try:
        with transaction.atomic():
            digest = DigestSend.objects.create(user=user, frequency=frequency, period_start=period, items=total)
    except IntegrityError:
        return DigestResult(user.pk, "already_sent", total)  # another worker took the period
    if not settings.PAYPILOT_SEND_EMAIL:
        _finish(digest=digest, user=user, status=DigestSend.Status.DRY_RUN, event="approvals.digest.dry_run")
        return DigestResult(user.pk, "dry_run", total)
    composed = digest_compose(user=user, lines=lines, total=total, frequency=frequency)
    try:
        message_id = email_deliver(composed=composed, metadata={"paypilot_digest": str(digest.pk)},
                                   tags=["paypilot-digest"])
    except DeliveryError as error:
        logger.warning("digest %s for user %s not delivered: %s", digest.pk, user.pk, error.code)
        _finish(digest=digest, user=user, status=DigestSend.Status.FAILED, event="approvals.digest.failed",
                error_code=error.code[:64])
        return DigestResult(user.pk, "failed", total)
    _finish(digest=digest, user=user, status=DigestSend.Status.SENT, event="approvals.digest.sent",
            message_id=message_id[:255], sent_at=timezone.now())
    return DigestResult(user.pk, "sent", total)


def digest_send_due(*, now: datetime | None = None) -> list[DigestResult]:
    """Every user whose digest period has begun: the scheduled job's work."""
    now = now or timezone.now()
    preferences = (DigestPreference.objects.exclude(frequency=Frequency.OFF)
                   .select_related("user").order_by("user_id"))
    return [digest_send_one(user=pref.user, frequency=pref.frequency, now=now) for pref in preferences]
