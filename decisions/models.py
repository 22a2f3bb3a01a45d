"""The decision audit, reported outcomes and refused bodies (append-only), and tenant rule versions."""

from __future__ import annotations

from django.db import models

from paypilot.models import Tenant


class RuleVersion(models.Model):
    """A tenant's own rules table: edited as a draft, frozen when first approved, active after
    two different approvers said yes (four eyes), retired when another version replaces it and
    restorable from there by the same two-approval step. Never deleted: decisions name it."""

    class Status(models.TextChoices):
        DRAFT = "draft"  # editable candidate; never used for a decision
        PENDING = "pending"  # frozen, one approval of the two it needs so far
        ACTIVE = "active"  # the table this tenant's decisions use now (at most one per tenant)
        RETIRED = "retired"  # was active, replaced; activating it again is the rollback

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    number = models.PositiveIntegerField()  # 1, 2, ... per tenant
    note = models.CharField(max_length=200, blank=True)  # why this version exists
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    digest = models.CharField(max_length=32, blank=True)  # stamped as rules_version once frozen
    # Django user ids (no FK: the audit keeps ids, and a removed user must not remove history).
    created_by_id = models.PositiveIntegerField(null=True, blank=True)
    edited_by_id = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    activated_at = models.DateTimeField(null=True, blank=True)
    # Bumped on every activation request, so approvals of an earlier activation never count
    # towards a later one (a restore needs two fresh approvals).
    approval_round = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "number"], name="rule_version_number_once"),
            models.UniqueConstraint(fields=["tenant"], condition=models.Q(status="active"),
                                    name="rule_version_one_active"),
        ]
        permissions = [("approve_ruleversion", "Can approve (activate or restore) a rule version")]

    def __str__(self) -> str:
        return f"v{self.number} ({self.status})"


class RuleVersionRow(models.Model):
    """One failure code's row in a tenant version (or the default row)."""

    version = models.ForeignKey(RuleVersion, on_delete=models.CASCADE, related_name="rows")
    failure_code = models.CharField(max_length=64)
    action = models.CharField(max_length=64)
    retry_in_days = models.PositiveSmallIntegerField()
    max_attempts = models.PositiveSmallIntegerField(null=True, blank=True)  # empty: no limit of ours
    offer = models.CharField(max_length=300)
    escalate_at = models.CharField(max_length=8, default="high")  # churn risk that tightens the cadence

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "failure_code"], name="rule_row_code_once")]
        ordering = ["pk"]

    def __str__(self) -> str:
        return self.failure_code


class RuleVersionApproval(models.Model):
    """One person's yes to activating a version, in one activation round, for one digest."""

    version = models.ForeignKey(RuleVersion, on_delete=models.PROTECT, related_name="approvals")
    approval_round = models.PositiveIntegerField()
    user_id = models.PositiveIntegerField()
    digest = models.CharField(max_length=32)
    approved_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "approval_round", "user_id"],
                                               name="rule_approval_once_per_person")]

    def __str__(self) -> str:
        return f"v{self.version_id} round {self.approval_round} by {self.user_id}"


class DecisionRecord(models.Model):
    """One decision as it was returned. UPDATE and DELETE are refused by database triggers.

    Holds the input codes and the answer, never a name, an email or the request body.
    """

    class Source(models.TextChoices):
        API = "api"  # POST /decide
        PIPELINE = "pipeline"  # the recovery pipeline deciding for a ledger invoice

    # No index of its own: decision_tenant_invoice and decision_tenant_decided lead with the
    # tenant (one index fewer written per row).
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)
    invoice_ref = models.CharField(max_length=64)
    source = models.CharField(max_length=16, choices=Source.choices)
    failure_code = models.CharField(max_length=64)
    attempt = models.PositiveSmallIntegerField()
    prior_failures = models.PositiveSmallIntegerField()
    rule_fired = models.CharField(max_length=64)
    matched = models.BooleanField()
    churn_risk = models.CharField(max_length=8)
    action = models.CharField(max_length=64)
    retry_in_days = models.PositiveSmallIntegerField()
    offer = models.CharField(max_length=300)
    escalated = models.BooleanField()
    retry_at = models.DateTimeField(null=True, blank=True)
    schedule_source = models.CharField(max_length=64)
    likelihood = models.FloatField()
    expected_recovered_minor = models.BigIntegerField(null=True, blank=True)
    annual_value_at_risk_minor = models.BigIntegerField(null=True, blank=True)
    rules_version = models.CharField(max_length=32)
    decided_at = models.DateTimeField()
    # The card network's own answer, when the caller or provider passed it on.
    card_brand = models.CharField(max_length=32, blank=True)
    network_advice_code = models.CharField(max_length=16, blank=True)
    network_decline_code = models.CharField(max_length=16, blank=True)
    # Citations of the network rules that shaped the answer: [{"rule_id", "effect", "summary",
    # "source", "source_url", "confidence"}]; ids and public sources only.
    network_rules = models.JSONField(default=list, blank=True)
    # The tenant rule version the answer came from; null: the built-in table.
    rule_version = models.ForeignKey(RuleVersion, null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="+")
    # The currency of the amounts above (ISO 4217, upper case) when the decider knew it (the
    # pipeline, for a ledger invoice); null on rows written before it was stored and on /decide
    # answers, which carry no amount. Nullable so SQLite adds the column in place (a NOT NULL
    # one rebuilds the table and drops its append-only triggers).
    currency = models.CharField(max_length=3, null=True, blank=True)  # noqa: DJ001

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "invoice_ref", "-decided_at"], name="decision_tenant_invoice"),
            # Admin search "starts with" on PostgreSQL (LIKE 'term%'; paypilot.admin_perf.Prefix).
            models.Index(fields=["invoice_ref"], name="decision_ref_prefix", opclasses=["varchar_pattern_ops"]),
            # the shadow replay reads one tenant's window
            models.Index(fields=["tenant", "decided_at"], name="decision_tenant_decided"),
        ]

    def __str__(self) -> str:
        return f"{self.invoice_ref}: {self.rule_fired} ({self.rules_version})"


class DecisionOutcome(models.Model):
    """What happened to a decided invoice, as reported by the caller. Append-only.

    A separate table rather than a column on the decision, because a column would need an
    UPDATE and the decision audit allows none.
    """

    class Outcome(models.TextChoices):
        PAID = "paid"  # the invoice was paid after the decision
        NOT_PAID = "not_paid"  # the caller says it was not paid
        # "unknown" is deliberately not a choice: it is what no report means.

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    invoice_ref = models.CharField(max_length=64)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    report_key = models.CharField(max_length=128)
    reported_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "report_key"], name="decision_outcome_report_key_once"),
        ]
        indexes = [models.Index(fields=["tenant", "invoice_ref"], name="outcome_tenant_invoice")]

    def __str__(self) -> str:
        return f"{self.invoice_ref}: {self.outcome}"


class DecisionRefusal(models.Model):
    """A refused POST /decide body: which gate refused it and why, never the input itself."""

    class Gate(models.TextChoices):
        SIZE = "size"  # body larger than the limit
        PARSE = "parse"  # body is not a JSON object
        FIELDS = "fields"  # unknown field, or a field failing its constraint

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    gate = models.CharField(max_length=16, choices=Gate.choices)
    reason = models.CharField(max_length=64)  # body_too_large, invalid_body, unknown_field...
    field = models.CharField(max_length=64, blank=True)  # the field's name when one is at fault
    # The id the refused caller got (paypilot.refusals). Nullable because SQLite adds a
    # nullable column in place; a NOT NULL one rebuilds the table and drops its triggers.
    refusal_id = models.CharField(max_length=32, null=True, blank=True, db_index=True)  # noqa: DJ001
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["tenant", "-created_at"], name="refusal_tenant_created")]

    def __str__(self) -> str:
        return f"{self.gate}/{self.reason}"
