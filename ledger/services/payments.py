"""Failed and successful payments: the invoice upsert from a failure (one or many), the
recovery on payment, and the paid-before-failure marker."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from ledger.holdout import holdout_arm_for
from ledger.models import Customer, Invoice, InvoiceTransition, LedgerInconsistency, PaidBeforeFailure
from ledger.money import currency_normalise
from ledger.services.inconsistencies import OUTCOME_CURRENCY_MISMATCH, inconsistency_record
from ledger.services.transitions import (
    CAUSE_PAYMENT_FAILED,
    CAUSE_PAYMENT_SUCCEEDED,
    State,
    _invoice_key_lock,
    _invoice_keys_lock,
    _move,
)
from paypilot.bulk import values_insert
from paypilot.keyed import rows_locked_by_keys
from paypilot.models import Tenant
from paypilot.services import audit_record, audit_record_many, audit_values, rows_insert


@dataclass(frozen=True)
class FailureResult:
    invoice: Invoice | None  # None only when outcome == "already_paid"
    created: bool
    outcome: str  # "recorded" | "repeat" | "closed_noop" | "already_paid"


@dataclass(frozen=True)
class PaymentResult:
    invoice: Invoice | None  # None when the payment was stored as paid-before-failure
    outcome: str  # "recovered" | "paid_before_failure" | "noop" | "refused_currency_mismatch"


def _check_amount(value: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{field} must be a non-negative integer in minor units")
    return value


@dataclass(frozen=True)
class FailureInput:
    """One failed payment for `invoice_record_failures` (see `invoice_record_failure`)."""

    provider: str
    external_invoice_id: str
    amount_minor: int
    currency: str
    failure_code: str
    attempt: int = 1
    customer: Customer | None = None
    subscription_id: str = ""
    provider_customer_id: str = ""
    hosted_invoice_url: str = ""
    event_ref: str = ""
    occurred_at: datetime | None = None  # the provider's time of this failure (None: now)


def invoice_record_failure(
    *,
    tenant: Tenant,
    provider: str,
    external_invoice_id: str,
    amount_minor: int,
    currency: str,
    failure_code: str,
    attempt: int = 1,
    customer: Customer | None = None,
    subscription_id: str = "",
    provider_customer_id: str = "",
    hosted_invoice_url: str = "",
    event_ref: str = "",
    occurred_at: datetime | None = None,
    now: datetime | None = None,
) -> FailureResult:
    """Upsert an invoice from a failed payment.

    New invoice: stored `failed` with its holdout arm fixed now (outcome "recorded"),
    `failed_at` = the provider's failure time (`occurred_at`, else now) and
    `failed_recorded_at` = now. Open invoice: attempt count (never lowered), failure code and
    amount updated ("repeat"). Closed invoice: never reopened ("closed_noop"). In both cases
    an older failure delivered late lowers `failed_at` (the first failure is the earliest
    seen; audited). An invoice already stored as paid-before-failure is not created at all
    ("already_paid"). Raises ValueError on bad input.
    """
    failure = FailureInput(
        provider=provider, external_invoice_id=external_invoice_id, amount_minor=amount_minor,
        currency=currency, failure_code=failure_code, attempt=attempt, customer=customer,
        subscription_id=subscription_id, provider_customer_id=provider_customer_id,
        hosted_invoice_url=hosted_invoice_url, event_ref=event_ref, occurred_at=occurred_at,
    )
    return invoice_record_failures(tenant=tenant, failures=[failure], now=now)[0]


def _failure_checked(tenant: Tenant, failure: FailureInput) -> FailureInput:
    if not failure.provider or not failure.external_invoice_id:
        raise ValueError("provider and external_invoice_id are required")
    _check_amount(failure.amount_minor, "amount_minor")
    attempt = failure.attempt
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise ValueError("attempt must be a positive integer")
    if failure.customer is not None and failure.customer.tenant_id != tenant.pk:
        raise ValueError("customer belongs to another tenant")
    return replace(failure, currency=currency_normalise(failure.currency))


def invoice_record_failures(
    *, tenant: Tenant, failures: list[FailureInput], now: datetime | None = None
) -> list[FailureResult]:
    """`invoice_record_failure` for many distinct invoices of one tenant, in one transaction
    with every invoice key locked: one read per table for all of them, one INSERT per table
    for the new invoices, their transitions and audit events. Results come back in order.
    Raises ValueError (nothing stored) on bad input or a repeated invoice key."""
    checked = [_failure_checked(tenant, failure) for failure in failures]
    keys = [(f.provider, f.external_invoice_id) for f in checked]
    if len(set(keys)) != len(keys):
        raise ValueError("invoice keys must be distinct within one call")
    now = now or timezone.now()
    # Provider and id both in the filter, so the (tenant, provider, id) unique index answers:
    # without the middle column PostgreSQL scans every invoice of the tenant. The invoices
    # themselves are read one probe of that index per key (`rows_locked_by_keys`).
    providers, external_ids = {provider for provider, _ in keys}, {ext for _, ext in keys}
    results: list[FailureResult] = []
    created: list[Invoice] = []
    audits: list[dict[str, Any]] = []
    with transaction.atomic(), _invoice_keys_lock(tenant_id=tenant.pk, keys=keys):
        paid = set(
            PaidBeforeFailure.objects.filter(
                tenant=tenant, provider__in=providers, external_invoice_id__in=external_ids
            ).values_list("provider", "external_invoice_id")
        )
        stored = {
            (row.provider, row.external_invoice_id): row
            for row in rows_locked_by_keys(Invoice, key_fields=("provider", "external_invoice_id"), keys=keys,
                                           filters={"tenant_id": tenant.pk})
        }
        for key, failure in zip(keys, checked, strict=True):
            invoice = stored.get(key)
            if key in paid:
                audits.append(audit_values(event="ledger.invoice.failure_after_payment", tenant=tenant,
                                           detail={"provider": failure.provider, "attempt": failure.attempt}))
                results.append(FailureResult(invoice=None, created=False, outcome="already_paid"))
            elif invoice is None:
                invoice = _invoice_new(tenant, failure, now=now)
                created.append(invoice)
                results.append(FailureResult(invoice=invoice, created=True, outcome="recorded"))
            elif not invoice.is_open:
                if _failed_at_lowered(tenant, invoice, failure, audits):
                    invoice.save(update_fields=["failed_at", "updated_at"])
                results.append(FailureResult(invoice=invoice, created=False, outcome="closed_noop"))
            else:
                _invoice_repeat(tenant, invoice, failure, audits)
                results.append(FailureResult(invoice=invoice, created=False, outcome="repeat"))
        if created:
            rows_insert(created)
            event_refs = {(f.provider, f.external_invoice_id): f.event_ref for f in checked}
            values_insert(InvoiceTransition, [  # only written: no instance
                {"tenant_id": tenant.pk, "invoice_id": invoice.pk, "from_state": "", "to_state": State.FAILED,
                 "cause": CAUSE_PAYMENT_FAILED, "occurred_at": invoice.failed_at,
                 "event_ref": event_refs[(invoice.provider, invoice.external_invoice_id)][:200]}
                for invoice in created
            ])
            audits.extend(
                audit_values(event="ledger.invoice.failed", tenant=tenant, detail={
                    "invoice_id": invoice.pk, "provider": invoice.provider, "arm": invoice.arm,
                    "amount_minor": invoice.amount_minor, "currency": invoice.currency,
                    "attempt": invoice.attempt_count,
                })
                for invoice in created
            )
        audit_record_many(audits)
    return results


def _invoice_new(tenant: Tenant, failure: FailureInput, *, now: datetime) -> Invoice:
    """A new `failed` invoice (unsaved) with its holdout arm fixed now, at first sight."""
    return Invoice(
        tenant=tenant, provider=failure.provider, external_invoice_id=failure.external_invoice_id,
        customer=failure.customer, amount_minor=failure.amount_minor, currency=failure.currency,
        failure_code=failure.failure_code, attempt_count=failure.attempt,
        subscription_id=failure.subscription_id, provider_customer_id=failure.provider_customer_id,
        hosted_invoice_url=failure.hosted_invoice_url,
        # The tenant's holdout in force at the failure's provider time: the report's cohorts
        # (and the holdout's start week) are by that same time.
        arm=holdout_arm_for(invoice_id=failure.external_invoice_id, tenant=tenant, at=failure.occurred_at or now),
        state=State.FAILED, failed_at=failure.occurred_at or now, failed_recorded_at=now,
    )


def _failed_at_lowered(tenant: Tenant, invoice: Invoice, failure: FailureInput, audits: list[dict[str, Any]]) -> bool:
    """An older failure of a known invoice (delivered late, e.g. from a backlog): the first
    failure is the earliest one the provider reported, so `failed_at` moves back to it.
    Never moved forward: a newer failure is a retry, not the first one."""
    if failure.occurred_at is None or failure.occurred_at >= invoice.failed_at:
        return False
    audits.append(audit_values(event="ledger.invoice.failed_at_lowered", tenant=tenant, detail={
        "invoice_id": invoice.pk, "failed_at_from": invoice.failed_at.isoformat(),
        "failed_at_to": failure.occurred_at.isoformat(),
    }))
    invoice.failed_at = failure.occurred_at
    return True


def _invoice_repeat(tenant: Tenant, invoice: Invoice, failure: FailureInput, audits: list[dict[str, Any]]) -> None:
    """Another failure of an open invoice the caller holds locked: attempt count never
    lowered, code and (same-currency) amount updated, missing references filled in, and
    `failed_at` lowered to an older failure's time."""
    invoice.attempt_count = max(invoice.attempt_count, failure.attempt)
    invoice.failure_code = failure.failure_code or invoice.failure_code
    update = ["attempt_count", "failure_code", "updated_at"]
    if _failed_at_lowered(tenant, invoice, failure, audits):
        update.append("failed_at")
    if failure.currency == invoice.currency:  # an amount in another currency is not comparable
        invoice.amount_minor = failure.amount_minor
        update.append("amount_minor")
    for name, value in (("subscription_id", failure.subscription_id),
                        ("provider_customer_id", failure.provider_customer_id),
                        ("hosted_invoice_url", failure.hosted_invoice_url)):
        if value and getattr(invoice, name) != value:
            setattr(invoice, name, value)
            update.append(name)
    if failure.customer is not None and invoice.customer_id is None:
        invoice.customer = failure.customer
        update.append("customer")
    invoice.save(update_fields=update)


def invoice_record_payment(
    *,
    tenant: Tenant,
    provider: str,
    external_invoice_id: str,
    amount_paid_minor: int,
    currency: str,
    event_ref: str = "",
    occurred_at: datetime | None = None,
    now: datetime | None = None,
) -> PaymentResult:
    """A payment reported by the provider.

    Open invoice -> `recovered` with the amount paid ("recovered"; `recovered_at` = the
    provider's payment time `occurred_at`, else now; `recovered_recorded_at` = now). Closed
    invoice -> nothing ("noop"). Never seen failing -> stored as a paid-before-failure
    marker, not a recovery ("paid_before_failure"; a redelivery answers the same and stores
    nothing new). A payment in another currency than its open invoice is refused: a
    `LedgerInconsistency` row and an audit event, the invoice left open and untouched, never
    converted ("refused_currency_mismatch").
    """
    _check_amount(amount_paid_minor, "amount_paid_minor")
    currency = currency_normalise(currency)
    now = now or timezone.now()
    key = {"tenant": tenant, "provider": provider, "external_invoice_id": external_invoice_id}
    with transaction.atomic(), _invoice_key_lock(
        tenant_id=tenant.pk, provider=provider, external_invoice_id=external_invoice_id
    ):
        invoice = Invoice.objects.select_for_update().filter(**key).first()
        if invoice is None:
            _paid_before_failure_store(key=key, amount_paid_minor=amount_paid_minor,
                                       currency=currency, event_ref=event_ref)
            return PaymentResult(invoice=None, outcome="paid_before_failure")
        if not invoice.is_open:
            return PaymentResult(invoice=invoice, outcome="noop")
        if currency != invoice.currency:
            inconsistency_record(invoice=invoice, kind=LedgerInconsistency.Kind.CURRENCY_MISMATCH,
                                 received_currency=currency, amount_minor=amount_paid_minor,
                                 occurred_at=occurred_at, event_ref=event_ref, cause="payment")
            return PaymentResult(invoice=invoice, outcome=OUTCOME_CURRENCY_MISMATCH)
        _move(invoice, to=State.RECOVERED, cause=CAUSE_PAYMENT_SUCCEEDED, event_ref=event_ref,
              now=now, occurred_at=occurred_at or now, recovered_minor=amount_paid_minor,
              recovered_at=occurred_at or now, recovered_recorded_at=now)
        return PaymentResult(invoice=invoice, outcome="recovered")


def _paid_before_failure_store(*, key: dict[str, Any], amount_paid_minor: int, currency: str,
                               event_ref: str) -> None:
    try:
        with transaction.atomic():
            marker, created = PaidBeforeFailure.objects.get_or_create(
                **key,
                defaults={"amount_paid_minor": amount_paid_minor, "currency": currency,
                          "event_ref": event_ref[:200]},
            )
    except IntegrityError:  # a concurrent delivery stored it first: same outcome
        return
    if created:
        audit_record(event="ledger.invoice.paid_before_failure", tenant=key["tenant"],
                     detail={"provider": key["provider"], "currency": currency})
