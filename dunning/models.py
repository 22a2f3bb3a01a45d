"""Drafted dunning emails, stored idempotent responses and metered LLM spend."""

from __future__ import annotations

from django.db import models

from paypilot.models import Tenant


class Draft(models.Model):
    """One drafted email for a failed payment, waiting for a person's approval elsewhere.

    The body carries no link: approvals adds the signed recovery link at send time.
    """

    class Source(models.TextChoices):
        TEMPLATE = "template"  # the committed, reviewed catalogue copy
        LLM = "llm"  # a model draft that passed the output guard

    # No index of its own: dunning_draft_invoice leads with the tenant (one index fewer written per row).
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    invoice = models.ForeignKey(
        "ledger.Invoice", null=True, blank=True, on_delete=models.CASCADE, related_name="drafts"
    )
    decision = models.ForeignKey(
        "decisions.DecisionRecord", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    subject = models.CharField(max_length=300)
    body = models.TextField()
    diagnosis = models.TextField(blank=True)  # for the approver, never sent
    locale = models.CharField(max_length=16)  # the locale actually used
    source = models.CharField(max_length=16, choices=Source.choices)
    fallback_used = models.BooleanField(default=False)  # LLM path ran but the template was kept
    guard_verdict = models.JSONField(default=dict)  # {"ok": bool, "reasons": [...]} of the LLM draft
    # [{"field": "name"|"plan"|"business", "reason": code}]: outside values the copy left out
    # (dunning.slots); the value itself is never stored here.
    dropped_fields = models.JSONField(default=list, db_default=[], blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "invoice", "-created_at"], name="dunning_draft_invoice")]

    def __str__(self) -> str:
        return f"draft {self.pk} ({self.source}, {self.locale})"


class IdempotencyRecord(models.Model):
    """The first response to an `Idempotency-Key`, per tenant, replayed on a retry."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)  # sha256 of route + canonical body
    status_code = models.PositiveSmallIntegerField()
    # The first answer's exact bytes and media type. Not a JSONField: PostgreSQL's jsonb
    # reorders keys and drops whitespace, so a replay differed byte for byte (issue 18).
    response_body = models.BinaryField()
    content_type = models.CharField(max_length=100, default="application/json")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "key"], name="dunning_idempotency_unique_key"),
        ]

    def __str__(self) -> str:
        return f"idempotency {self.key[:16]}"


class LlmUsage(models.Model):
    """Tokens and estimated cost of one model call: the ledger the spend cap reads."""

    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    model = models.CharField(max_length=100)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.model} ${self.cost_usd}"
