"""Customers, invoices in integer minor units, their state history and paid-before-failure markers."""

from __future__ import annotations

from django.db import models

from paypilot.models import Tenant


class Customer(models.Model):
    """A billed customer. The only model in PayPilot that holds a name or an email."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="customers")
    external_id = models.CharField(max_length=128)  # the billing provider's / tenant's own id
    name = models.CharField(max_length=200, blank=True)
    email = models.EmailField(max_length=254, blank=True)
    plan = models.CharField(max_length=100, blank=True)
    mrr_minor = models.BigIntegerField(null=True, blank=True)  # monthly recurring revenue
    currency = models.CharField(max_length=3, blank=True)  # ISO 4217, upper case
    locale = models.CharField(max_length=16, blank=True)  # e.g. "en", "de-DE"
    # Most recent last: [{"date": "2026-05-15", "status": "ok"|"failed", "failure_code": ...}]
    payment_history = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="ledger_customer_unique_ext"),
            models.CheckConstraint(
                condition=models.Q(mrr_minor__isnull=True) | models.Q(mrr_minor__gte=0),
                name="ledger_customer_mrr_not_negative",
            ),
        ]
        # Admin search "starts with" (paypilot.admin_perf.Prefix), see Invoice.
        indexes = [
            models.Index(fields=["external_id"], name="ledger_cust_ext_prefix", opclasses=["varchar_pattern_ops"]),
            models.Index(fields=["email"], name="ledger_cust_email_prefix", opclasses=["varchar_pattern_ops"]),
            models.Index(fields=["name"], name="ledger_cust_name_prefix", opclasses=["varchar_pattern_ops"]),
        ]

    def __str__(self) -> str:
        return f"customer {self.external_id}"


class Invoice(models.Model):
    """One failed (or later recovered) invoice; unique per tenant, provider and provider id."""

    class State(models.TextChoices):
        FAILED = "failed"  # a payment attempt failed; nothing sent yet
        MESSAGED = "messaged"  # at least one dunning email really went out
        CLICKED = "clicked"  # the customer opened our signed recovery link
        RECOVERED = "recovered"  # paid after we saw it fail (terminal)
        CHURNED = "churned"  # the subscription was cancelled while unpaid (terminal)
        EXHAUSTED = "exhausted"  # the provider gave up retrying (terminal)

    class Arm(models.TextChoices):
        HOLDOUT = "holdout"  # deliberately withheld from dunning: never drafted or messaged
        TREATMENT = "treatment"  # eligible for drafting and (after approval) sending

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="invoices")
    provider = models.CharField(max_length=32)  # "stripe", "recharge", "chargebee", "api"
    external_invoice_id = models.CharField(max_length=128)
    customer = models.ForeignKey(
        Customer, null=True, blank=True, on_delete=models.SET_NULL, related_name="invoices"
    )
    amount_minor = models.BigIntegerField()  # amount due, in the currency's minor unit
    currency = models.CharField(max_length=3)  # ISO 4217, upper case
    state = models.CharField(max_length=16, choices=State.choices, default=State.FAILED)
    arm = models.CharField(max_length=16, choices=Arm.choices)  # fixed at first sight
    failure_code = models.CharField(max_length=64, blank=True)  # one of decisions' seven codes
    attempt_count = models.PositiveIntegerField(default=1)
    subscription_id = models.CharField(max_length=128, blank=True)
    provider_customer_id = models.CharField(max_length=128, blank=True)
    hosted_invoice_url = models.URLField(max_length=1000, blank=True)
    failed_at = models.DateTimeField()  # first failure seen
    updated_at = models.DateTimeField(auto_now=True)
    first_messaged_at = models.DateTimeField(null=True, blank=True)  # first real send
    recovered_at = models.DateTimeField(null=True, blank=True)
    recovered_minor = models.BigIntegerField(default=0)  # amount paid on recovery

    OPEN_STATES = frozenset({State.FAILED, State.MESSAGED, State.CLICKED})
    TERMINAL_STATES = frozenset({State.RECOVERED, State.CHURNED, State.EXHAUSTED})

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "provider", "external_invoice_id"], name="ledger_invoice_unique_ext"
            ),
            models.CheckConstraint(condition=models.Q(amount_minor__gte=0), name="ledger_invoice_amount_not_negative"),
            models.CheckConstraint(
                condition=models.Q(recovered_minor__gte=0), name="ledger_invoice_recovered_not_negative"
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "state"]),
            models.Index(fields=["tenant", "subscription_id"]),
            models.Index(fields=["tenant", "failed_at"]),
            # The invoice changelist's order for platform admins (all tenants); a tenant's
            # staff are served by (tenant, failed_at).
            models.Index(fields=["failed_at", "id"], name="ledger_inv_failed"),
            # Admin search "starts with" (paypilot.admin_perf.Prefix): LIKE 'term%' on
            # PostgreSQL needs the pattern operator class; SQLite gets a plain index.
            models.Index(fields=["external_invoice_id"], name="ledger_inv_ext_prefix",
                         opclasses=["varchar_pattern_ops"]),
            models.Index(fields=["subscription_id"], name="ledger_inv_sub_prefix",
                         opclasses=["varchar_pattern_ops"]),
            models.Index(fields=["provider_customer_id"], name="ledger_inv_pcust_prefix",
                         opclasses=["varchar_pattern_ops"]),
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.external_invoice_id}"

    @property
    def is_open(self) -> bool:
        return self.state in self.OPEN_STATES


class InvoiceTransition(models.Model):
    """Append-only history of every real state move (UPDATE/DELETE refused by triggers)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="transitions")
    from_state = models.CharField(max_length=16, choices=Invoice.State.choices, blank=True)  # "" = created
    to_state = models.CharField(max_length=16, choices=Invoice.State.choices)
    cause = models.CharField(max_length=64)  # snake_case: payment_failed, email_sent, ...
    event_ref = models.CharField(max_length=200, blank=True)  # webhook event id, send id...
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["invoice", "created_at"])]

    def __str__(self) -> str:
        return f"{self.from_state or '-'} -> {self.to_state} ({self.cause})"


class PaidBeforeFailure(models.Model):
    """A payment for an invoice never seen failing: not a recovery, remembered in the database
    so a failure arriving later (out of order, or after a restart) is acknowledged as paid."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=32)
    external_invoice_id = models.CharField(max_length=128)
    amount_paid_minor = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    event_ref = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "provider", "external_invoice_id"], name="ledger_pbf_unique_ext"
            ),
            models.CheckConstraint(
                condition=models.Q(amount_paid_minor__gte=0), name="ledger_pbf_amount_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"paid before failure {self.provider}:{self.external_invoice_id}"
