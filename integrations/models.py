"""Webhook inbox, per-tenant provider credentials (encrypted at rest) and link settings."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from paypilot.models import Tenant


class Provider(models.TextChoices):
    STRIPE = "stripe"  # Stripe-Signature (HMAC-SHA256, 300 s tolerance)
    RECHARGE = "recharge"  # X-Recharge-Webhook-Signature or legacy X-Recharge-Hmac-Sha256
    CHARGEBEE = "chargebee"  # HTTP Basic shared secret + unguessable URL segment


class WebhookEvent(models.Model):
    """One delivery as received. The raw body is append-only (database trigger); status,
    outcome, error and attempts move as the worker processes it."""

    class Status(models.TextChoices):
        RECEIVED = "received"  # stored and enqueued, not processed yet (or awaiting a retry)
        PROCESSED = "processed"  # applied to the ledger; outcome says what happened
        IGNORED = "ignored"  # acknowledged and deliberately left alone; outcome is the reason
        FAILED = "failed"  # processing raised; error holds the cause, attempts the count

    # No index of its own: the unique (tenant, provider, event_key) leads with the tenant (one
    # index fewer written per row).
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)
    provider = models.CharField(max_length=16, choices=Provider.choices)
    event_key = models.CharField(max_length=255)  # provider event id, or a derived key
    event_type = models.CharField(max_length=100)
    body = models.BinaryField()  # the exact bytes that were verified
    headers = models.JSONField(default=dict, blank=True)  # signature/topic headers only
    received_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    outcome = models.CharField(max_length=64, blank=True)  # snake_case, e.g. draft_opened
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)  # processing attempts that ran
    enqueued_at = models.DateTimeField(default=timezone.now)  # last time a task was queued
    processed_at = models.DateTimeField(null=True, blank=True)  # when the last attempt ended
    resource_key = models.CharField(max_length=200, blank=True)  # e.g. "invoice:inv_1042"
    resource_version = models.BigIntegerField(null=True, blank=True)  # provider's, larger newer
    # The ORM broker's queue row (django_q_ormq.id) of the task enqueued with the event
    # (PostgreSQL; null elsewhere): a batch that applies this event under another event's
    # task deletes this row in the same transaction, so the task never runs for nothing.
    task_row = models.BigIntegerField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "provider", "event_key"], name="integrations_webhook_unique_key"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "enqueued_at"], name="integrations_wh_status_enq"),
            models.Index(fields=["tenant", "provider", "resource_key"], name="integrations_wh_resource"),
            # A processing batch reads the received events after its own, in id order: a
            # partial index holds only those, so the read does not grow with the history.
            models.Index(fields=["tenant", "id"], condition=models.Q(status="received"),
                         name="integrations_wh_received"),
        ]
        permissions = [("reprocess_webhookevent", "Can reprocess webhook events")]

    def __str__(self) -> str:
        return f"{self.provider}:{self.event_key}"


class ProviderCredential(models.Model):
    """A tenant's secrets for one provider, Fernet-encrypted (see integrations.crypto).

    Never shown back: the admin form only replaces them.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=16, choices=Provider.choices)
    # Stripe: endpoint signing secret (whsec_...); Recharge: API client secret;
    # Chargebee: the Basic-auth password.
    secret_encrypted = models.TextField(blank=True)
    # Stripe only: restricted key (invoices read, billing portal sessions write).
    api_key_encrypted = models.TextField(blank=True)
    username = models.CharField(max_length=100, blank=True)  # Chargebee Basic-auth user name
    url_key_encrypted = models.TextField(blank=True)  # Chargebee unguessable URL segment
    default_currency = models.CharField(max_length=3, default="USD")  # Recharge 2021-01 payloads
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "provider"], name="integrations_credential_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}:{self.provider}"


class LinkSettings(models.Model):
    """Where a recovery link sends the customer when no provider page can be minted."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="+")
    update_url = models.URLField(max_length=500, blank=True)  # tenant's own payment-update page
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "link settings"

    def __str__(self) -> str:
        return f"link settings for {self.tenant_id}"
