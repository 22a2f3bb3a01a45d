"""Imported files and their canonical rows, confirmed layouts, contract versions, runs and breaks.

Money is integer minor units (`*_minor`) beside a three-letter currency. Dates also carry a
`*_day` integer (days since 1970-01-01, UTC) so the run's window arithmetic is the same
plain integer SQL on SQLite and PostgreSQL. Imported rows are never changed after import:
resolving a break writes the break, never the rows it points at.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.functions import Now

from paypilot.fields import IdentifierCharField, IdentifierTextField
from paypilot.models import Tenant


class Kind(models.TextChoices):
    PROVIDER = "provider"  # transactions at the payment provider (charges, refunds, fees, payouts)
    ORDERS = "orders"  # the shop or billing system's orders
    BANK = "bank"  # bank statement lines
    DISPUTES = "disputes"  # chargebacks and inquiries


class FileFormat(models.TextChoices):
    STRIPE_REPORT = "stripe_report"  # Stripe itemized balance / payout reconciliation report
    CAMT053 = "camt053"  # ISO 20022 camt.053 bank-to-customer statement
    MT940 = "mt940"  # SWIFT MT940 customer statement (through the mt-940 library)
    CAMT054 = "camt054"  # ISO 20022 camt.054 bank-to-customer debit/credit notification
    BAI2 = "bai2"  # BAI2 cash-management balance report (US banks)
    ADYEN_SETTLEMENT = "adyen_settlement"  # Adyen settlement details report
    PAYPAL_STL = "paypal_stl"  # PayPal settlement report (STL)
    BRAINTREE_FEES = "braintree_fees"  # Braintree transaction level fee report
    LAYOUT = "layout"  # any other CSV, through a confirmed layout
    SAMPLE = "sample"  # the shipped sample workspace (canonical JSON)


class ImportFile(models.Model):
    """One imported file; the same bytes (sha256) are stored once per tenant."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="recon_files")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    file_format = models.CharField(max_length=16, choices=FileFormat.choices)
    filename = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    size_bytes = models.BigIntegerField()
    rows = models.IntegerField()
    layout = models.ForeignKey("Layout", null=True, blank=True, on_delete=models.PROTECT)
    actor = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "sha256"], name="recon_file_once_per_tenant")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.filename}"


class Layout(models.Model):
    """A confirmed column mapping, keyed by the file's normalised header row."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="recon_layouts")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    header_key = models.CharField(max_length=64)  # sha256 of the normalised header row
    headers = models.JSONField()
    columns = models.JSONField()  # canonical field -> header
    values = models.JSONField(default=dict, blank=True)  # field -> {export word: canonical value}
    date_format = models.CharField(max_length=64)
    decimal_separator = models.CharField(max_length=1)
    delimiter = models.CharField(max_length=1)
    actor = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "kind", "header_key"], name="recon_layout_per_header")
        ]

    def __str__(self) -> str:
        return f"{self.kind} layout {self.header_key[:10]}"


# The three bulk row tables (a million rows per file) keep their tenant and file keys without
# a database constraint or a single-column index. A constraint costs a trigger and a lookup
# per inserted row (on PostgreSQL 9.5 s of a 24 s insert of a million provider rows, measured
# in isolation; docs/benchmarks.md, Reconciliation); the rows are written only by the import
# service, in the transaction that creates their ImportFile, with that file's own tenant and
# id, and deleting a tenant or a file still cascades through Django's collector. Every query
# on these tables names the tenant first, so the composite indexes below serve it; a lone
# tenant or file index is never read and cost another index insert per row.
BULK_ROW_KEY: dict[str, Any] = {"db_constraint": False, "db_index": False}


class OrderRow(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, **BULK_ROW_KEY)
    file = models.ForeignKey(ImportFile, on_delete=models.CASCADE, **BULK_ROW_KEY)
    line = models.IntegerField()
    order_id = IdentifierCharField(max_length=128)
    ordered_at = models.DateTimeField()
    ordered_day = models.IntegerField()
    amount_minor = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    payment_reference = IdentifierCharField(max_length=128, blank=True)
    # Salted hash only: names and emails live in the ledger (DESIGN section 1).
    customer_email_hash = models.CharField(max_length=32, blank=True)
    status = models.CharField(max_length=32, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "order_id"]),
            models.Index(fields=["tenant", "payment_reference"]),
        ]

    def __str__(self) -> str:
        return f"order {self.order_id}"


class ProviderRow(models.Model):
    class Type(models.TextChoices):
        CHARGE = "charge"  # a capture
        REFUND = "refund"  # money back to the customer (negative)
        DISPUTE = "dispute"  # chargeback debit (negative) with the chargeback fee
        DISPUTE_REVERSAL = "dispute_reversal"  # a won dispute credited back
        FEE = "fee"  # a stand-alone provider fee
        PAYOUT = "payout"  # the transfer to the bank itself
        ADJUSTMENT = "adjustment"  # anything else the provider booked

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, **BULK_ROW_KEY)
    file = models.ForeignKey(ImportFile, on_delete=models.CASCADE, **BULK_ROW_KEY)
    line = models.IntegerField()
    transaction_id = IdentifierCharField(max_length=128)
    created_at = models.DateTimeField()
    created_day = models.IntegerField()
    type = models.CharField(max_length=20, choices=Type.choices)
    amount_minor = models.BigIntegerField()
    fee_minor = models.BigIntegerField()
    net_minor = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    charge_id = IdentifierCharField(max_length=128, blank=True)
    order_reference = IdentifierCharField(max_length=128, blank=True)
    payout_id = IdentifierCharField(max_length=128, blank=True)
    payout_date = models.DateField(null=True, blank=True)
    payout_day = models.IntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            # The lookups made (services/facts.py, the MCP break detail): by transaction and
            # by charge (captures and what refers to them). Not by order reference: a
            # refund check or triage by order scans the tenant's rows for it once, where an
            # index would cost every import (docs/reconciliation.md, Speed).
            models.Index(fields=["tenant", "transaction_id"]),
            models.Index(fields=["tenant", "charge_id"]),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.transaction_id}"


class BankRow(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, **BULK_ROW_KEY)
    file = models.ForeignKey(ImportFile, on_delete=models.CASCADE, **BULK_ROW_KEY)
    line = models.IntegerField()
    booking_date = models.DateField()
    booking_day = models.IntegerField()
    value_date = models.DateField(null=True, blank=True)
    amount_minor = models.BigIntegerField()  # signed: credits positive
    currency = models.CharField(max_length=3)
    reference = IdentifierCharField(max_length=255, blank=True)
    remittance = IdentifierTextField(blank=True)
    bank_reference = IdentifierCharField(max_length=128, blank=True)
    # A credit converted from another currency (a foreign payout): the amount instructed in
    # that currency and the rate the statement states from it into `currency` (exact decimal
    # text; "" when none). Blank on a line booked as it was sent.
    original_amount_minor = models.BigIntegerField(null=True, blank=True)
    original_currency = models.CharField(max_length=3, blank=True, db_default="")
    fx_rate = models.CharField(max_length=32, blank=True, db_default="")

    class Meta:
        indexes = [models.Index(fields=["tenant", "currency", "amount_minor"])]

    def __str__(self) -> str:
        return f"bank {self.booking_date} {self.amount_minor} {self.currency}"


class DisputeRow(models.Model):
    """A dispute as a file listed it, or as Stripe's `charge.dispute.*` webhooks report it.

    File rows are never changed after import (one per file line). A live row (`file` empty)
    is one per tenant and dispute id, updated in place by each newer event (ordered by the
    provider's event time, `last_event_at`). Readers take, per dispute id, the row PayPilot
    learned last (`known_at`): a file's import time, or when the last event was applied."""

    class Source(models.TextChoices):
        FILE = "file"  # a line of an imported disputes file
        STRIPE_WEBHOOK = "stripe_webhook"  # kept current by Stripe's charge.dispute.* events

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    file = models.ForeignKey(ImportFile, null=True, blank=True, on_delete=models.CASCADE)
    line = models.IntegerField()  # 0 on a live row
    dispute_id = IdentifierCharField(max_length=128)
    charge_id = IdentifierCharField(max_length=128, blank=True)
    amount_minor = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    reason = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=64, blank=True)
    evidence_due_by = models.DateField(null=True, blank=True)
    created_at = models.DateTimeField()
    # Database defaults: the imports' set-based INSERT names only the columns above.
    source = models.CharField(max_length=16, choices=Source.choices, db_default=Source.FILE)
    known_at = models.DateTimeField(db_default=Now())  # when PayPilot learned this state
    last_event_id = models.CharField(max_length=200, blank=True, db_default="")  # live rows: the event applied
    last_event_at = models.DateTimeField(null=True, blank=True)  # live rows: that event's time at the provider
    # Live rows: facts from the dispute object (payment intent, network reason code,
    # evidence due time, has_evidence, past_due, submission_count, is_charge_refundable,
    # funds withdrawn or reinstated in minor units, the last event type).
    details = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "dispute_id"])]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "dispute_id"], condition=models.Q(file__isnull=True),
                                    name="recon_live_dispute_once"),
        ]

    def __str__(self) -> str:
        return f"dispute {self.dispute_id}"


class ContractVersion(models.Model):
    """Fee terms for one currency from an effective date. Never edited: a change is a new
    version (the admin and services only ever insert)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="recon_contracts")
    currency = models.CharField(max_length=3)
    version = models.IntegerField()  # 1, 2, ... per tenant and currency
    effective_from = models.DateField()
    effective_day = models.IntegerField()
    percent = models.DecimalField(max_digits=8, decimal_places=4)  # 2.9 means 2.9 %
    percent_micro = models.BigIntegerField()  # the same in millionths of the amount (29000)
    fixed_minor = models.BigIntegerField()
    chargeback_fee_minor = models.BigIntegerField()
    payout_delay_days = models.IntegerField()  # a count of `payout_delay_unit`
    # "T+2" and "2 business days" are banking days of `payout_calendar` ("US", "TARGET", "GB"):
    # stored as read, never turned into calendar days (a weekend or holiday lies between).
    payout_delay_unit = models.CharField(max_length=16, default="days", db_default="days")
    payout_calendar = models.CharField(max_length=16, blank=True, default="", db_default="")
    rolling_reserve_days = models.IntegerField(null=True, blank=True)  # how long each reserved part is held
    # Stored, not applied: exports rarely say where a card was issued.
    international_surcharge_percent = models.DecimalField(max_digits=8, decimal_places=4, null=True, blank=True)
    rolling_reserve_percent = models.DecimalField(max_digits=8, decimal_places=4, null=True, blank=True)
    # How far (per cent) a foreign payout's booked amount may fall from its instructed amount
    # at the statement's rate before it is a break; empty: DEFAULT_FX_MARGIN_PERCENT (runs).
    fx_margin_percent = models.DecimalField(max_digits=8, decimal_places=4, null=True, blank=True)
    quotes = models.JSONField(default=dict, blank=True)  # field -> verbatim clause it was read from
    actor = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "currency", "version"], name="recon_contract_version_once")
        ]

    def __str__(self) -> str:
        return f"{self.currency} v{self.version} (from {self.effective_from})"

    @property
    def label(self) -> str:
        return f"{self.currency} v{self.version} from {self.effective_from.isoformat()}"


class Run(models.Model):
    """One stored reconciliation: the result JSON exactly as printed, and its input digest."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="recon_runs")
    as_of = models.DateField()
    input_digest = models.CharField(max_length=64)
    result_json = models.TextField()  # byte-identical for the same inputs and as-of date
    result_sha256 = models.CharField(max_length=64)
    match_rate = models.FloatField(null=True)
    breaks_count = models.IntegerField()
    actor = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "as_of", "input_digest"], name="recon_run_once_per_inputs")
        ]
        indexes = [models.Index(fields=["tenant", "as_of", "created_at"])]

    def __str__(self) -> str:
        return f"review as of {self.as_of}"


class Break(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"  # nobody has closed it yet
        RESOLVED = "resolved"  # a person resolved it with a note; the imported rows are unchanged

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="breaks")
    position = models.IntegerField()  # index in the run's `breaks` list
    kind = models.CharField(max_length=32)
    amount_minor = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    refs = models.JSONField()
    explanation = models.TextField()
    contract_version = models.ForeignKey(ContractVersion, null=True, blank=True, on_delete=models.PROTECT)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolution_note = models.TextField(blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "position"], name="recon_break_position")]
        indexes = [models.Index(fields=["tenant", "status", "kind"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount_minor} {self.currency}"


class ContractProposal(models.Model):
    """Fee terms read from a pricing document, each checked against the document, waiting for
    a person's yes. Confirming makes a ContractVersion; the proposal itself is never edited
    except for that one move (pending -> confirmed)."""

    class Status(models.TextChoices):
        PENDING = "pending"  # read and checked; nobody has confirmed it yet
        CONFIRMED = "confirmed"  # a person confirmed it: `contract_version` holds the saved terms

    class Source(models.TextChoices):
        RULES = "rules"  # the deterministic extractor (no model, or the model's answer was unusable)
        MODEL = "model"  # the chat model through the guarded LLM seam

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="recon_proposals")
    filename = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    document_format = models.CharField(max_length=16)  # text, markdown, html, pdf
    # The document as text (what the extractor and the model read, what quotes are checked
    # against): confirming re-checks every quote against it, not against a cached verdict.
    document_text = models.TextField()
    source = models.CharField(max_length=8, choices=Source.choices)
    currency = models.CharField(max_length=3, blank=True)  # blank when the document did not say
    terms = models.JSONField()  # term -> {value, unit, quote, verified, reason, reason_code, ...}
    confirmable = models.BooleanField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    contract_version = models.ForeignKey(ContractVersion, null=True, blank=True, on_delete=models.PROTECT,
                                         related_name="+")
    actor = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)
    confirmed_by = models.CharField(max_length=100, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "created_at"])]
        permissions = [("confirm_contractproposal", "Can confirm a contract proposal into a contract version")]

    def __str__(self) -> str:
        return f"proposal {self.pk} from {self.filename}"
