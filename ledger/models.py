"""Customers, invoices in integer minor units, their state history, refunds, inconsistencies
and paid-before-failure markers.

Times: every `*_at` that names something that happened at the provider (a failure, a payment,
a cancellation, a refund) is the provider's own event time; the matching `*_recorded_at` is
when PayPilot applied it. Reports order and bucket by event time, so a backlog that is
processed late still lands in the week it happened.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from paypilot.models import Tenant


class Customer(models.Model):
    """A billed customer. The only model in PayPilot that holds a name or an email."""

    # No index of its own: the unique (tenant, external_id) serves every lookup by tenant.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="customers", db_index=False)
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
        VOIDED = "voided"  # the invoice was voided at the provider: nothing is owed (terminal)

    class Arm(models.TextChoices):
        HOLDOUT = "holdout"  # deliberately withheld from dunning: never drafted or messaged
        TREATMENT = "treatment"  # eligible for drafting and (after approval) sending

    # No index of its own: the unique key and the indexes below lead with the tenant, and a
    # lone one would be written again for every invoice a webhook batch inserts.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="invoices", db_index=False)
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
    failed_at = models.DateTimeField()  # provider's time of the first failure seen
    failed_recorded_at = models.DateTimeField(default=timezone.now)  # when PayPilot recorded it
    updated_at = models.DateTimeField(auto_now=True)
    first_messaged_at = models.DateTimeField(null=True, blank=True)  # first real send
    recovered_at = models.DateTimeField(null=True, blank=True)  # provider's time of the payment
    recovered_recorded_at = models.DateTimeField(null=True, blank=True)  # when PayPilot applied it
    recovered_minor = models.BigIntegerField(default=0)  # amount paid on recovery (gross)
    refunded_minor = models.BigIntegerField(default=0)  # refunded since recovery; net = recovered - refunded
    closed_at = models.DateTimeField(null=True, blank=True)  # provider's time of churn / exhaustion / void

    OPEN_STATES = frozenset({State.FAILED, State.MESSAGED, State.CLICKED})
    TERMINAL_STATES = frozenset({State.RECOVERED, State.CHURNED, State.EXHAUSTED, State.VOIDED})
    # Voided invoices owed nothing: they leave every recovery denominator.
    REPORTED_STATES = frozenset(set(State) - {State.VOIDED})

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "provider", "external_invoice_id"], name="ledger_invoice_unique_ext"
            ),
            models.CheckConstraint(condition=models.Q(amount_minor__gte=0), name="ledger_invoice_amount_not_negative"),
            models.CheckConstraint(
                condition=models.Q(recovered_minor__gte=0), name="ledger_invoice_recovered_not_negative"
            ),
            # A refund reduces what was recovered, never below zero.
            models.CheckConstraint(
                condition=models.Q(refunded_minor__gte=0) & models.Q(refunded_minor__lte=models.F("recovered_minor")),
                name="ledger_invoice_refund_within_recovered",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "state"]),
            # The platform admin's invoice changelist filtered by state, in its order
            # (-failed_at, -id): a range of this index with no sort. Without it SQLite sorted
            # every invoice of the state (143,000 recovered of 1,000,000: 320 ms a page).
            models.Index(fields=["state", "failed_at", "id"], name="ledger_inv_state"),
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
            # The finance home's "recovered this month": a range of recovered invoices by
            # payment time, carrying the summed columns (an index-only read on both vendors).
            models.Index(fields=["tenant", "recovered_at", "currency", "recovered_minor", "refunded_minor"],
                         condition=models.Q(state="recovered"), name="ledger_inv_recovered_when"),
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
    occurred_at = models.DateTimeField(null=True, blank=True)  # provider's event time, when known
    created_at = models.DateTimeField(auto_now_add=True)  # when PayPilot applied it

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


class InvoiceRefund(models.Model):
    """Append-only: one refund (full or partial) of a recovered invoice's payment, as the
    provider reported it. The sum per invoice is mirrored in `Invoice.refunded_minor`."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="refunds")
    provider = models.CharField(max_length=32)
    refund_ref = models.CharField(max_length=200)  # the provider's refund / credit-note id
    amount_minor = models.BigIntegerField()  # this refund alone, in the invoice's currency
    currency = models.CharField(max_length=3)
    occurred_at = models.DateTimeField()  # provider's time of the refund
    event_ref = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)  # when PayPilot applied it

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "provider", "refund_ref"], name="ledger_refund_unique_ref"),
            models.CheckConstraint(condition=models.Q(amount_minor__gt=0), name="ledger_refund_amount_positive"),
        ]

    def __str__(self) -> str:
        return f"refund {self.refund_ref}"


class LedgerInconsistency(models.Model):
    """An event the ledger refused to apply because it contradicts what is stored (a payment
    in another currency than its invoice, ...): recorded for a person, never converted or
    guessed. Append-only."""

    class Kind(models.TextChoices):
        CURRENCY_MISMATCH = "currency_mismatch"  # payment/refund currency differs from the invoice's
        REFUND_EXCEEDS_RECOVERED = "refund_exceeds_recovered"  # refunds above the recovered amount: capped

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    # A visible reverse relation (not "+"): operations.records reaches rows through reverse
    # relations, so the GDPR erase and the retention purge find these with their invoice.
    invoice = models.ForeignKey(Invoice, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="inconsistencies")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    provider = models.CharField(max_length=32)
    external_invoice_id = models.CharField(max_length=128)
    event_ref = models.CharField(max_length=200, blank=True)
    expected_currency = models.CharField(max_length=3, blank=True)
    received_currency = models.CharField(max_length=3, blank=True)
    amount_minor = models.BigIntegerField(null=True, blank=True)  # in received_currency's minor unit
    occurred_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["tenant", "kind"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.provider}:{self.external_invoice_id}"


class ReportRollup(models.Model):
    """The recovery report's only input: invoice counts and sums per (tenant, arm, currency,
    cohort week, state, messaged, recovery delay bucket), kept exact by database triggers on
    `ledger_invoice` (INSERT, UPDATE, DELETE; `ledger/rollup.py`), so every write path (the
    services, bulk inserts, GDPR erasure, retention purge, a raw SQL repair) updates it in
    the same transaction. Never written by Python except `report_rebuild`."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    arm = models.CharField(max_length=16)  # Invoice.Arm value
    currency = models.CharField(max_length=3)
    week = models.DateField()  # Monday (UTC) of the week of `Invoice.failed_at`: the cohort
    state = models.CharField(max_length=16)  # Invoice.State value
    messaged = models.BooleanField()  # `first_messaged_at` is set
    # -1: not recovered. Otherwise hours from failure to payment (provider times), in 1-hour
    # buckets below 72 h and whole-day buckets (lower bound in hours) from there; the last
    # bucket, ROLLUP_DELAY_CAP_HOURS, holds every recovery at or after 366 days.
    delay_hours = models.IntegerField()
    invoices = models.BigIntegerField()
    failed_minor = models.BigIntegerField()  # sum of amount_minor
    recovered_minor = models.BigIntegerField()  # sum of recovered_minor (gross)
    refunded_minor = models.BigIntegerField()  # sum of refunded_minor

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "arm", "currency", "week", "state", "messaged", "delay_hours"],
                name="ledger_reportrollup_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id} {self.arm} {self.currency} {self.week} {self.state} x{self.invoices}"
