"""Admin tenant membership, approval requests, sends, suppressed sends and draft edits."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from dunning.models import Draft
from paypilot.models import Tenant


class AdminMembership(models.Model):
    """Links a Django staff user to the one tenant whose data they see in the admin.

    Superusers are platform admins and need no membership. A staff user without one sees
    nothing (`paypilot.admin_tenancy` fails closed).
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="admin_membership"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="admin_members")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"user {self.user_id} @ {self.tenant_id}"


class ApprovalRequest(models.Model):
    """One per draft: a person's recorded yes or no before anything reaches a customer.

    `subject` and `body` start as the draft's copy and change only through
    `approval_edit` (guards re-run, a `DraftEdit` row kept); the draft itself stays what the
    pipeline wrote.
    """

    class Status(models.TextChoices):
        PENDING = "pending"  # waiting for a finance person (or a second one, when high value)
        APPROVED = "approved"  # a person said yes (two different people when high value)
        REJECTED = "rejected"  # a person said no: never sent
        EXPIRED = "expired"  # nobody decided within PAYPILOT_APPROVAL_TTL_HOURS: never sent
        # The invoice closed (paid, cancelled, exhausted, voided) or a newer draft for it
        # replaced this one before anyone decided: nothing to approve any more, never sent.
        WITHDRAWN = "withdrawn"

    class WithdrawnReason(models.TextChoices):
        INVOICE_PAID = "invoice_paid", "the invoice was paid"
        INVOICE_CANCELLED = "invoice_cancelled", "the subscription was cancelled"
        INVOICE_EXHAUSTED = "invoice_exhausted", "the provider stopped retrying"
        INVOICE_VOIDED = "invoice_voided", "the invoice was voided"
        SUPERSEDED = "superseded", "a newer draft replaced it"

    # No single-column index on tenant or invoice: every index below leads with the tenant,
    # and `approval_invoice_status` with the invoice, so each would be a second index
    # written on every request opened (the webhook drain opens one per delivery).
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)
    draft = models.OneToOneField("dunning.Draft", on_delete=models.PROTECT, related_name="approval")
    # The draft's source, copied when the request is opened so the console's "template or
    # LLM" filter is a range of this table's indexes instead of a join to every request's
    # draft. Nothing changes a draft after the pipeline writes it, so the copy cannot go stale.
    source = models.CharField(max_length=16, choices=Draft.Source.choices)
    invoice = models.ForeignKey("ledger.Invoice", on_delete=models.PROTECT, related_name="approvals", db_index=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    subject = models.CharField(max_length=300)
    body = models.TextField()
    edited = models.BooleanField(default=False)  # a person changed subject or body
    requested_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    # High value (PAYPILOT_HIGH_VALUE_ANNUAL) needs two different approvers; fixed at opening.
    high_value = models.BooleanField(default=False)
    annual_value_minor = models.BigIntegerField(null=True, blank=True)
    first_approver = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    first_approved_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=1000, blank=True)
    # Why a withdrawn request left the queue (empty for every other status).
    withdrawn_reason = models.CharField(max_length=32, choices=WithdrawnReason.choices, blank=True)

    class Meta:
        permissions = [("approve_approvalrequest", "Can approve or reject drafts")]
        # The console's orderings, each ending in id so a page window is read from the index
        # alone: the queue of one status, and ?queue=all; per tenant and (platform admins)
        # across tenants. The source twins serve the same orderings under the "template or
        # LLM" filter, where a rare source (LLM) would otherwise mean walking the expiry
        # index past every request of the other one.
        indexes = [
            models.Index(fields=["tenant", "status", "expires_at", "id"], name="approval_tenant_queue"),
            models.Index(fields=["status", "expires_at", "id"], name="approval_status_queue"),
            models.Index(fields=["tenant", "expires_at", "id"], name="approval_tenant_expiry"),
            models.Index(fields=["expires_at", "id"], name="approval_expiry"),
            models.Index(fields=["tenant", "source", "status", "expires_at", "id"],
                         name="approval_tenant_source_queue"),
            models.Index(fields=["source", "status", "expires_at", "id"], name="approval_source_queue"),
            models.Index(fields=["tenant", "source", "expires_at", "id"], name="approval_tenant_source_expiry"),
            models.Index(fields=["source", "expires_at", "id"], name="approval_source_expiry"),
            # An invoice's pending request (superseded or withdrawn when the invoice closes):
            # both columns bound, so the probe is chosen with or without statistics
            # (paypilot.keyed); also the invoice's foreign-key lookups.
            models.Index(fields=["invoice", "status"], name="approval_invoice_status"),
        ]

    def __str__(self) -> str:
        return f"approval {self.pk} ({self.status})"


class EmailSend(models.Model):
    """A real send (or an attempt at one) for an approved draft: at most one per draft,
    enforced by the unique constraint, so a send task run twice cannot mail twice."""

    class Status(models.TextChoices):
        SENDING = "sending"  # claimed; the provider call is under way (never blindly retried)
        RETRYING = "retrying"  # a transient provider failure; another attempt is due
        SENT = "sent"  # the provider accepted the message
        DELIVERED = "delivered"  # the provider reported delivery (tracking webhook)
        BOUNCED = "bounced"  # the provider reported a bounce (tracking webhook)
        FAILED = "failed"  # permanent failure or retries used up: nothing went out
        # Handed to the backend with no acceptance recorded (its sender died, or the
        # provider's answer was lost), or its one automatic retry died too: whether it went
        # out cannot be known here. A person checks the provider's log and marks it sent or
        # resends it; nothing resends it automatically.
        UNKNOWN = "unknown", "delivery unknown"

    # Statuses that reached a provider: they count towards max touches and the cooldown.
    TOUCH_STATUSES = (Status.SENT, Status.DELIVERED, Status.BOUNCED)

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    approval = models.OneToOneField(ApprovalRequest, on_delete=models.PROTECT, related_name="send")
    draft = models.ForeignKey("dunning.Draft", on_delete=models.PROTECT, related_name="+")
    invoice = models.ForeignKey("ledger.Invoice", on_delete=models.PROTECT, related_name="+")
    customer = models.ForeignKey(
        "ledger.Customer", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    recipient_hash = models.CharField(max_length=32)  # pii_hash of the address
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SENDING)
    message_id = models.CharField(max_length=255, blank=True, db_index=True)  # provider's id
    attempts = models.PositiveSmallIntegerField(default=0)
    error_code = models.CharField(max_length=64, blank=True)  # e.g. provider_permanent
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # When the current attempt took the slot (`sending`); the sweeper treats a claim older
    # than PAYPILOT_SEND_CLAIM_TIMEOUT as its sender's death.
    claimed_at = models.DateTimeField(null=True, blank=True)
    # Committed just before the backend is called: a dead claim without it never reached
    # the backend, so it may be retried; with it, delivery is unknown.
    handed_at = models.DateTimeField(null=True, blank=True)
    # The sweeper already gave a dead claim its one automatic retry.
    reclaimed = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    bounced_at = models.DateTimeField(null=True, blank=True)
    clicked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["draft"], name="approvals_one_send_per_draft"),
        ]
        indexes = [
            models.Index(fields=["invoice", "status"], name="send_invoice_status"),
            models.Index(fields=["customer", "sent_at"], name="send_customer_sent"),
            models.Index(fields=["status", "next_attempt_at"], name="send_status_next"),
        ]

    def __str__(self) -> str:
        return f"send {self.pk} ({self.status})"


class SuppressedSend(models.Model):
    """A send a gate refused, with the gate and its reason code. Append-only.

    A refusal at the `sending_enabled` gate is a dry run (`dry_run=True`): everything before
    it passed and only the switch stopped it.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    approval = models.ForeignKey(ApprovalRequest, on_delete=models.PROTECT, related_name="suppressed")
    invoice = models.ForeignKey("ledger.Invoice", on_delete=models.PROTECT, related_name="+")
    gate = models.CharField(max_length=32)
    reason = models.CharField(max_length=64)
    dry_run = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "-created_at"], name="suppressed_tenant_created")]

    def __str__(self) -> str:
        return f"{self.gate}/{self.reason}"


class DraftEdit(models.Model):
    """A finance user's change to subject or body before approving. Append-only: the
    before and after copy and who made it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    approval = models.ForeignKey(ApprovalRequest, on_delete=models.PROTECT, related_name="edits")
    editor = models.CharField(max_length=64)  # "user:<id>"
    subject_before = models.CharField(max_length=300)
    subject_after = models.CharField(max_length=300)
    body_before = models.TextField()
    body_after = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"edit {self.pk} of approval {self.approval_id}"


class DigestPreference(models.Model):
    """How often one admin user is emailed the list of drafts waiting for them.

    Per user: an admin user belongs to one tenant (`AdminMembership` is one-to-one), so a
    per-membership setting would be the same thing. Set in the admin by the user (platform
    admins for anyone); nothing is sent while it is `off`, the default.
    """

    class Frequency(models.TextChoices):
        OFF = "off"  # no digest
        HOURLY = "hourly"  # at most one per clock hour (UTC), only when something waits
        DAILY = "daily"  # at most one per day, from PAYPILOT_DIGEST_DAILY_HOUR (UTC) on

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="digest_preference"
    )
    frequency = models.CharField(max_length=8, choices=Frequency.choices, default=Frequency.OFF)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"digest for user {self.user_id}: {self.frequency}"


class DigestSend(models.Model):
    """One digest per user, frequency and period. The unique constraint is the claim: a
    second worker, or a task run again, cannot insert the same period, so nobody gets it
    twice. A claim whose worker died stays `claimed` and is not retried (the next period
    lists the same drafts). Holds ids and counts only; no tenant column, because a platform
    admin's digest spans tenants (each tenant's rows are read under its own binding)."""

    class Status(models.TextChoices):
        CLAIMED = "claimed"  # taken by a worker, not yet handed to the backend (or it died)
        SENT = "sent"  # accepted by the email backend
        DRY_RUN = "dry_run"  # PAYPILOT_SEND_EMAIL is off: recorded, not sent
        FAILED = "failed"  # the backend refused or failed; not retried within the period

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    frequency = models.CharField(max_length=8, choices=DigestPreference.Frequency.choices)
    period_start = models.DateTimeField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.CLAIMED)
    items = models.PositiveIntegerField(default=0)  # drafts waiting when it was composed
    message_id = models.CharField(max_length=255, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "frequency", "period_start"], name="digest_once_per_period"),
        ]

    def __str__(self) -> str:
        return f"digest {self.pk} for user {self.user_id} ({self.status})"
