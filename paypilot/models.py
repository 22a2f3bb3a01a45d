"""Tenants, API tokens and the append-only security/audit event log."""

from __future__ import annotations

from django.db import models

from paypilot.branding import LOGO_URL_MAX, brand_colour_validate, logo_url_validate


class Tenant(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"  # serves API calls, processes webhooks, may send email
        SUSPENDED = "suspended"  # temporarily refused (403 tenant_suspended); data kept
        DEACTIVATED = "deactivated"  # closed for good; refused like a suspended tenant

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    # The tenant's randomised holdout (ledger/holdout.py): null pct = PAYPILOT_HOLDOUT_PCT.
    # New invoices failing (provider time) on or after holdout_start get holdout_pct; set only through
    # ledger.services.tenant_holdout_set (audited).
    holdout_pct = models.PositiveSmallIntegerField(null=True, blank=True)
    holdout_start = models.DateField(null=True, blank=True)
    # The customer email's branding (approvals/email_html.py), set in the admin. Blank display
    # name = `name`; blank colour = paypilot.branding.DEFAULT_BRAND_COLOUR; blank logo = none.
    display_name = models.CharField(max_length=200, blank=True,
                                    help_text="Name shown to customers in emails (blank: the tenant's name).")
    brand_colour = models.CharField(max_length=7, blank=True, validators=[brand_colour_validate],
                                    help_text="#rrggbb, used for the email's header bar and button.")
    logo_url = models.CharField(max_length=LOGO_URL_MAX, blank=True, validators=[logo_url_validate],
                                help_text="Optional https:// URL of a logo image (about 160x48 px).")

    def __str__(self) -> str:
        return self.slug

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE

    @property
    def email_name(self) -> str:
        return (self.display_name or self.name).strip() or self.slug


class Role(models.TextChoices):
    PLATFORM_ADMIN = "platform_admin"  # operates PayPilot itself, every tenant
    TENANT_ADMIN = "tenant_admin"  # administers one tenant
    APPROVER = "approver"  # finance person who approves or rejects drafts
    INTEGRATOR = "integrator"  # API client: decisions, payment-failed calls
    VIEWER = "viewer"  # read-only: reports


class ApiToken(models.Model):
    """A bearer token: only the SHA-256 of the secret is stored, looked up by its prefix."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="tokens")
    role = models.CharField(max_length=32, choices=Role.choices)
    label = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix} ({self.role})"


class AuditEvent(models.Model):
    """Append-only: UPDATE and DELETE are refused by database triggers.

    Holds ids and salted hashes only, never names, emails or request bodies.
    """

    event = models.CharField(max_length=100, db_index=True)  # dotted: paypilot.auth.rejected
    # No index of its own: (tenant, event, created_at) leads with the tenant (one index fewer
    # written per row).
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.PROTECT, db_index=False)
    actor = models.CharField(max_length=100, blank=True)  # token prefix, user id or "system"
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "event", "created_at"])]

    def __str__(self) -> str:
        return f"{self.event} @ {self.created_at:%Y-%m-%d %H:%M:%S}"


class AppendOnlyOverride(models.Model):
    """A row here, inside one transaction, lets the append-only triggers allow one named
    operation (GDPR erasure, retention purge). It is deleted before that transaction
    commits, so no other transaction ever sees it."""

    operation = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.operation
