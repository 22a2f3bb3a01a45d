"""Ledger writes: customers, failures, payments and the one locking state-transition service.

Every real state move goes through `_move()` while the invoice row is locked
(`select_for_update()`), appends an `InvoiceTransition` and an audit event in the same
transaction. A same-state move is a silent no-op (a redelivered event); an illegal move
raises `IllegalTransition` after an audit event has been committed for it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from ledger.holdout import holdout_arm_for
from ledger.models import Customer, Invoice, InvoiceTransition, PaidBeforeFailure
from ledger.money import currency_normalise
from paypilot.models import AuditEvent, Tenant
from paypilot.services import audit_entry, audit_record, audit_record_many

State = Invoice.State
T = TypeVar("T")

# The single table of allowed moves. Same-state moves are answered before this table is
# read (silent no-op), so messaged -> messaged is listed only to document that a second
# send is legal; it never writes a second row.
ALLOWED_MOVES: dict[str, frozenset[str]] = {
    State.FAILED: frozenset({State.MESSAGED, State.RECOVERED, State.CHURNED, State.EXHAUSTED}),
    State.MESSAGED: frozenset(
        {State.MESSAGED, State.CLICKED, State.RECOVERED, State.CHURNED, State.EXHAUSTED}
    ),
    State.CLICKED: frozenset({State.MESSAGED, State.RECOVERED, State.CHURNED, State.EXHAUSTED}),
    State.RECOVERED: frozenset(),
    State.CHURNED: frozenset(),
    State.EXHAUSTED: frozenset(),
}

# Causes written on transition rows (snake_case, defined once).
CAUSE_PAYMENT_FAILED = "payment_failed"  # first failure seen: the invoice enters the ledger
CAUSE_PAYMENT_SUCCEEDED = "payment_succeeded"  # provider reports the invoice paid
CAUSE_EMAIL_SENT = "email_sent"  # a real send (not a dry run, not suppressed)
CAUSE_LINK_CLICKED = "link_clicked"  # the customer opened the signed recovery link
CAUSE_SUBSCRIPTION_CANCELLED = "subscription_cancelled"  # subscription deleted while unpaid
CAUSE_RETRIES_EXHAUSTED = "retries_exhausted"  # the provider stopped retrying

# Reason codes on `IllegalTransition` and its audit event.
REASON_ILLEGAL_MOVE = "illegal_move"  # not in ALLOWED_MOVES (includes leaving a terminal state)
REASON_HOLDOUT = "holdout_never_messaged"  # holdout invoices are never messaged


class IllegalTransition(Exception):
    """A move the state table forbids. Already audited when raised from a service."""

    def __init__(self, *, from_state: str, to_state: str, reason: str = REASON_ILLEGAL_MOVE) -> None:
        self.from_state = from_state
        self.to_state = to_state
        self.reason = reason
        super().__init__(f"{reason}: {from_state} -> {to_state}")


@dataclass(frozen=True)
class FailureResult:
    invoice: Invoice | None  # None only when outcome == "already_paid"
    created: bool
    outcome: str  # "recorded" | "repeat" | "closed_noop" | "already_paid"


@dataclass(frozen=True)
class PaymentResult:
    invoice: Invoice | None  # None when the payment was stored as paid-before-failure
    outcome: str  # "recovered" | "paid_before_failure" | "noop"


# --- locking ------------------------------------------------------------------------------

def _invoice_lock_id(tenant_id: int, provider: str, external_invoice_id: str) -> int:
    key = f"ledger:{tenant_id}:{provider}:{external_invoice_id}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big", signed=True)


@contextmanager
def _invoice_key_lock(*, tenant_id: int, provider: str, external_invoice_id: str) -> Iterator[None]:
    """Serialise writers on one invoice key even before its row exists.

    Row locks cannot cover a row that is not there yet, and a failure and a payment for the
    same unseen invoice arriving together must not both act on "nothing there". PostgreSQL
    gets a transaction-scoped advisory lock; SQLite runs with IMMEDIATE transactions, which
    already serialise writers.
    """
    with _invoice_keys_lock(tenant_id=tenant_id, keys=[(provider, external_invoice_id)]):
        yield


@contextmanager
def _invoice_keys_lock(*, tenant_id: int, keys: list[tuple[str, str]]) -> Iterator[None]:
    """`_invoice_key_lock` for many (provider, external id) keys in one round trip, taken in
    ascending lock-id order so two batches wait for each other instead of deadlocking."""
    if connection.vendor == "postgresql" and keys:
        lock_ids = sorted({_invoice_lock_id(tenant_id, provider, ext) for provider, ext in keys})
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(k) FROM (SELECT unnest(%s::bigint[]) AS k ORDER BY 1) AS ordered",
                [lock_ids],
            )
    yield


def _locked_invoice(pk: int) -> Invoice:
    return Invoice.objects.select_for_update().get(pk=pk)


def _move(
    locked: Invoice, *, to: str, cause: str, event_ref: str, now: datetime | None = None,
    **fields: Any,
) -> bool:
    """Apply one move to a row the caller holds locked, inside the caller's transaction."""
    if locked.state == to:
        return False
    if to not in ALLOWED_MOVES[locked.state]:
        raise IllegalTransition(from_state=locked.state, to_state=to)
    if to == State.MESSAGED and locked.arm == Invoice.Arm.HOLDOUT:
        raise IllegalTransition(from_state=locked.state, to_state=to, reason=REASON_HOLDOUT)
    now = now or timezone.now()
    previous = locked.state
    locked.state = to
    update = ["state", "updated_at", *fields]
    for name, value in fields.items():
        setattr(locked, name, value)
    if to == State.MESSAGED and locked.first_messaged_at is None:
        locked.first_messaged_at = now
        update.append("first_messaged_at")
    locked.save(update_fields=update)
    InvoiceTransition.objects.create(
        tenant_id=locked.tenant_id, invoice=locked, from_state=previous, to_state=to,
        cause=cause, event_ref=event_ref[:200],
    )
    audit_record(
        event=f"ledger.invoice.{to}",
        tenant=locked.tenant,
        detail={"invoice_id": locked.pk, "from_state": previous, "to_state": to, "cause": cause},
    )
    return True


def _audit_illegal(locked: Invoice, exc: IllegalTransition, cause: str) -> None:
    audit_record(
        event="ledger.invoice.illegal_transition",
        tenant=locked.tenant,
        detail={
            "invoice_id": locked.pk, "from_state": exc.from_state, "to_state": exc.to_state,
            "cause": cause, "reason": exc.reason,
        },
    )


def _run_locked(invoice: Invoice, step: Callable[[Invoice], T], *, cause: str) -> T:
    """Lock the row, run `step` on it, commit; an IllegalTransition is audited, committed,
    then re-raised (raising inside the block would roll the audit row back with it).
    The caller's `invoice` instance is refreshed to the stored state."""
    illegal: IllegalTransition | None = None
    result: T | None = None
    with transaction.atomic():
        locked = _locked_invoice(invoice.pk)
        try:
            with transaction.atomic():  # savepoint: a half-applied move never survives
                result = step(locked)
        except IllegalTransition as exc:
            _audit_illegal(locked, exc, cause)
            illegal = exc
    invoice.refresh_from_db()
    if illegal is not None:
        raise illegal
    return result  # type: ignore[return-value]


# --- the one transition service ---------------------------------------------------------

def invoice_transition(*, invoice: Invoice, to: str, cause: str, event_ref: str = "") -> bool:
    """Move `invoice` to `to` under a row lock.

    Returns True on a real move (transition row + audit event written in the same
    transaction), False for a same-state move (silent no-op). Raises IllegalTransition
    (audited) for a move the table forbids or for messaging a holdout invoice.
    """
    target = State(to)
    return _run_locked(
        invoice, lambda locked: _move(locked, to=target, cause=cause, event_ref=event_ref), cause=cause
    )


# --- customers ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CustomerInput:
    """One customer for `customer_upsert_many`; empty values leave stored ones alone."""

    external_id: str
    name: str = ""
    email: str = ""
    plan: str = ""
    mrr_minor: int | None = None
    currency: str = ""
    locale: str = ""
    payment_history: list[dict[str, Any]] | None = None


def customer_upsert(
    *,
    tenant: Tenant,
    external_id: str,
    name: str = "",
    email: str = "",
    plan: str = "",
    mrr_minor: int | None = None,
    currency: str = "",
    locale: str = "",
    payment_history: list[dict[str, Any]] | None = None,
) -> Customer:
    """Create or update a customer by (tenant, external id). Empty arguments leave the stored
    value alone, so a partial webhook never blanks a name. Audited with the id only."""
    item = CustomerInput(external_id=external_id, name=name, email=email, plan=plan, mrr_minor=mrr_minor,
                         currency=currency, locale=locale, payment_history=payment_history)
    return customer_upsert_many(tenant=tenant, customers=[item])[0]


def _customer_values(item: CustomerInput) -> dict[str, Any]:
    if not item.external_id:
        raise ValueError("external_id is required")
    if item.mrr_minor is not None and (isinstance(item.mrr_minor, bool) or item.mrr_minor < 0):
        raise ValueError("mrr_minor must be a non-negative integer")
    values: dict[str, Any] = {
        "name": item.name, "email": item.email, "plan": item.plan, "locale": item.locale,
        "currency": currency_normalise(item.currency) if item.currency else "",
    }
    values = {k: v for k, v in values.items() if v}
    if item.mrr_minor is not None:
        values["mrr_minor"] = int(item.mrr_minor)
    if item.payment_history is not None:
        values["payment_history"] = list(item.payment_history)
    return values


def customer_upsert_many(
    *, tenant: Tenant, customers: list[CustomerInput], _retry: bool = True
) -> list[Customer]:
    """`customer_upsert` for many distinct external ids in one transaction: one read for
    all, one INSERT for the new ones, a save per changed one, one audit event each.
    Returns the customers in order. Raises ValueError on bad input or a repeated id."""
    wanted = [(item.external_id, _customer_values(item)) for item in customers]
    ids = [external_id for external_id, _ in wanted]
    if len(set(ids)) != len(ids):
        raise ValueError("external ids must be distinct within one call")
    with transaction.atomic():
        stored = {
            row.external_id: row
            for row in Customer.objects.select_for_update().filter(tenant=tenant, external_id__in=ids)
        }
        created = [Customer(tenant=tenant, external_id=eid, **values) for eid, values in wanted if eid not in stored]
        if created:
            try:
                with transaction.atomic():
                    _insert(Customer, created)
            except IntegrityError:
                if not _retry:
                    raise
                # A concurrent writer stored some of them first: read again, update those.
                return customer_upsert_many(tenant=tenant, customers=customers, _retry=False)
        audits = [audit_entry(event="ledger.customer.created", tenant=tenant, detail={"customer": row.pk})
                  for row in created]
        for external_id, values in wanted:
            customer = stored.get(external_id)
            changed = [k for k, v in values.items() if getattr(customer, k) != v] if customer else []
            if customer is not None and changed:
                for key in changed:
                    setattr(customer, key, values[key])
                customer.save(update_fields=[*changed, "updated_at"])
                audits.append(audit_entry(event="ledger.customer.updated", tenant=tenant,
                                          detail={"customer": customer.pk}))
        audit_record_many(audits)
    by_id = {**stored, **{row.external_id: row for row in created}}
    return [by_id[external_id] for external_id in ids]


def _insert(model: type[T], rows: list[T]) -> None:
    """Insert new rows, ids set on them: one plain INSERT for one row, one multi-row INSERT
    for several (both backends return the ids)."""
    if len(rows) == 1:
        rows[0].save(force_insert=True)  # type: ignore[attr-defined]
    else:
        model._default_manager.bulk_create(rows)  # type: ignore[attr-defined]


def customer_update(*, customer: Customer, actor: str, fields: dict[str, Any]) -> Customer:
    """Save admin edits to an existing customer; audited with the id and the actor."""
    editable = {"name", "email", "plan", "mrr_minor", "currency", "locale", "payment_history"}
    unknown = set(fields) - editable
    if unknown:
        raise ValueError(f"not editable: {', '.join(sorted(unknown))}")
    if fields.get("currency"):
        fields = {**fields, "currency": currency_normalise(fields["currency"])}
    with transaction.atomic():
        for key, value in fields.items():
            setattr(customer, key, value)
        customer.save()
        audit_record(event="ledger.customer.edited", tenant=customer.tenant, actor=actor,
                     detail={"customer": customer.pk, "count": len(fields)})
    return customer


# --- failures and payments -----------------------------------------------------------------

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
    now: datetime | None = None,
) -> FailureResult:
    """Upsert an invoice from a failed payment.

    New invoice: stored `failed` with its holdout arm fixed now (outcome "recorded").
    Open invoice: attempt count (never lowered), failure code and amount updated ("repeat").
    Closed invoice: untouched, never reopened ("closed_noop"). An invoice already stored as
    paid-before-failure is not created at all ("already_paid"). Raises ValueError on bad input.
    """
    failure = FailureInput(
        provider=provider, external_invoice_id=external_invoice_id, amount_minor=amount_minor,
        currency=currency, failure_code=failure_code, attempt=attempt, customer=customer,
        subscription_id=subscription_id, provider_customer_id=provider_customer_id,
        hosted_invoice_url=hosted_invoice_url, event_ref=event_ref,
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
    external_ids = {ext for _, ext in keys}
    results: list[FailureResult] = []
    created: list[Invoice] = []
    audits: list[AuditEvent] = []
    with transaction.atomic(), _invoice_keys_lock(tenant_id=tenant.pk, keys=keys):
        paid = set(
            PaidBeforeFailure.objects.filter(tenant=tenant, external_invoice_id__in=external_ids)
            .values_list("provider", "external_invoice_id")
        )
        stored = {
            (row.provider, row.external_invoice_id): row
            for row in Invoice.objects.select_for_update().filter(tenant=tenant, external_invoice_id__in=external_ids)
        }
        for key, failure in zip(keys, checked, strict=True):
            invoice = stored.get(key)
            if key in paid:
                audits.append(audit_entry(event="ledger.invoice.failure_after_payment", tenant=tenant,
                                          detail={"provider": failure.provider, "attempt": failure.attempt}))
                results.append(FailureResult(invoice=None, created=False, outcome="already_paid"))
            elif invoice is None:
                invoice = _invoice_new(tenant, failure, now=now)
                created.append(invoice)
                results.append(FailureResult(invoice=invoice, created=True, outcome="recorded"))
            elif not invoice.is_open:
                results.append(FailureResult(invoice=invoice, created=False, outcome="closed_noop"))
            else:
                _invoice_repeat(invoice, failure)
                results.append(FailureResult(invoice=invoice, created=False, outcome="repeat"))
        if created:
            _insert(Invoice, created)
            event_refs = {(f.provider, f.external_invoice_id): f.event_ref for f in checked}
            _insert(InvoiceTransition, [
                InvoiceTransition(tenant_id=tenant.pk, invoice=invoice, from_state="", to_state=State.FAILED,
                                  cause=CAUSE_PAYMENT_FAILED,
                                  event_ref=event_refs[(invoice.provider, invoice.external_invoice_id)][:200])
                for invoice in created
            ])
            audits.extend(
                audit_entry(event="ledger.invoice.failed", tenant=tenant, detail={
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
        arm=holdout_arm_for(invoice_id=failure.external_invoice_id), state=State.FAILED, failed_at=now,
    )


def _invoice_repeat(invoice: Invoice, failure: FailureInput) -> None:
    """Another failure of an open invoice the caller holds locked: attempt count never
    lowered, code and (same-currency) amount updated, missing references filled in."""
    invoice.attempt_count = max(invoice.attempt_count, failure.attempt)
    invoice.failure_code = failure.failure_code or invoice.failure_code
    update = ["attempt_count", "failure_code", "updated_at"]
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
    now: datetime | None = None,
) -> PaymentResult:
    """A payment reported by the provider.

    Open invoice -> `recovered` with the amount paid ("recovered"). Closed invoice -> nothing
    ("noop"). Never seen failing -> stored as a paid-before-failure marker, not a recovery
    ("paid_before_failure"; a redelivery answers the same and stores nothing new).
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
        _move(invoice, to=State.RECOVERED, cause=CAUSE_PAYMENT_SUCCEEDED, event_ref=event_ref,
              now=now, recovered_minor=amount_paid_minor, recovered_at=now)
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


def invoice_mark_churned(
    *, tenant: Tenant, provider: str, subscription_id: str, event_ref: str = ""
) -> int:
    """Move every open invoice of a cancelled subscription to `churned`; returns how many."""
    if not subscription_id:
        return 0
    moved = 0
    with transaction.atomic():
        # Locked in primary-key order so two cancellations never deadlock on each other.
        rows = list(
            Invoice.objects.select_for_update()
            .filter(tenant=tenant, provider=provider, subscription_id=subscription_id,
                    state__in=Invoice.OPEN_STATES)
            .order_by("pk")
        )
        for invoice in rows:
            moved += _move(invoice, to=State.CHURNED, cause=CAUSE_SUBSCRIPTION_CANCELLED,
                           event_ref=event_ref)
    return moved


def invoice_mark_exhausted(
    *, tenant: Tenant, provider: str, external_invoice_id: str, event_ref: str = ""
) -> str:
    """The provider stopped retrying: "exhausted" on a move, "noop" when already closed,
    "unknown" when the invoice was never seen failing."""
    with transaction.atomic():
        invoice = (
            Invoice.objects.select_for_update()
            .filter(tenant=tenant, provider=provider, external_invoice_id=external_invoice_id)
            .first()
        )
        if invoice is None:
            return "unknown"
        if not invoice.is_open:
            return "noop"
        _move(invoice, to=State.EXHAUSTED, cause=CAUSE_RETRIES_EXHAUSTED, event_ref=event_ref)
        return "exhausted"


def invoice_mark_messaged(*, invoice: Invoice, event_ref: str = "") -> bool:
    """Record a real send. False when it is a repeat send or the invoice closed meanwhile
    (the email went out, but a closed invoice is never reopened). Raises IllegalTransition
    (audited) for a holdout invoice."""
    return _run_locked(
        invoice,
        lambda locked: locked.is_open
        and _move(locked, to=State.MESSAGED, cause=CAUSE_EMAIL_SENT, event_ref=event_ref),
        cause=CAUSE_EMAIL_SENT,
    )


def invoice_mark_clicked(*, invoice: Invoice, event_ref: str = "") -> bool:
    """Record a click on the recovery link. False for a repeat click or a closed invoice (a
    late click on an old email); raises IllegalTransition (audited) for a never-messaged one."""
    return _run_locked(
        invoice,
        lambda locked: locked.is_open
        and _move(locked, to=State.CLICKED, cause=CAUSE_LINK_CLICKED, event_ref=event_ref),
        cause=CAUSE_LINK_CLICKED,
    )
