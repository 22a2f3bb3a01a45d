"""The one locking state-transition service, the invoice-key locks, and the moves that
close or advance an invoice (churned, exhausted, voided, messaged, clicked).

Every real state move goes through `_move()` while the invoice row is locked
(`select_for_update()`), appends an `InvoiceTransition` (with the provider's event time in
`occurred_at`) and an audit event in the same transaction. A same-state move is a silent
no-op (a redelivered event); an illegal move raises `IllegalTransition` after an audit event
has been committed for it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from django.db import connection, transaction
from django.utils import timezone

from ledger.models import Invoice, InvoiceTransition
from paypilot.models import Tenant
from paypilot.services import audit_record

State = Invoice.State
T = TypeVar("T")

# The single table of allowed moves. Same-state moves are answered before this table is
# read (silent no-op), so messaged -> messaged is listed only to document that a second
# send is legal; it never writes a second row.
ALLOWED_MOVES: dict[str, frozenset[str]] = {
    State.FAILED: frozenset({State.MESSAGED, State.RECOVERED, State.CHURNED, State.EXHAUSTED, State.VOIDED}),
    State.MESSAGED: frozenset(
        {State.MESSAGED, State.CLICKED, State.RECOVERED, State.CHURNED, State.EXHAUSTED, State.VOIDED}
    ),
    State.CLICKED: frozenset(
        {State.MESSAGED, State.RECOVERED, State.CHURNED, State.EXHAUSTED, State.VOIDED}
    ),
    State.RECOVERED: frozenset(),
    State.CHURNED: frozenset(),
    State.EXHAUSTED: frozenset(),
    State.VOIDED: frozenset(),
}

# Causes written on transition rows (snake_case, defined once).
CAUSE_PAYMENT_FAILED = "payment_failed"  # first failure seen: the invoice enters the ledger
CAUSE_PAYMENT_SUCCEEDED = "payment_succeeded"  # provider reports the invoice paid
CAUSE_EMAIL_SENT = "email_sent"  # a real send (not a dry run, not suppressed)
CAUSE_LINK_CLICKED = "link_clicked"  # the customer opened the signed recovery link
CAUSE_SUBSCRIPTION_CANCELLED = "subscription_cancelled"  # subscription deleted while unpaid
CAUSE_RETRIES_EXHAUSTED = "retries_exhausted"  # the provider stopped retrying
CAUSE_INVOICE_VOIDED = "invoice_voided"  # the provider voided (or deleted) the invoice: nothing owed

# Reason codes on `IllegalTransition` and its audit event.
REASON_ILLEGAL_MOVE = "illegal_move"  # not in ALLOWED_MOVES (includes leaving a terminal state)
REASON_HOLDOUT = "holdout_never_messaged"  # holdout invoices are never messaged
REASON_VOID_OF_CLOSED = "void_of_closed_invoice"  # a void after the invoice closed: left as it was


class IllegalTransition(Exception):
    """A move the state table forbids. Already audited when raised from a service."""

    def __init__(self, *, from_state: str, to_state: str, reason: str = REASON_ILLEGAL_MOVE) -> None:
        self.from_state = from_state
        self.to_state = to_state
        self.reason = reason
        super().__init__(f"{reason}: {from_state} -> {to_state}")


# --- close hooks ----------------------------------------------------------------------------

# Called as hook(invoice=locked_row, to=state) inside the transaction of every move into a
# terminal state. The ledger sits above the apps that act on a closed invoice (approvals
# withdraws its pending request) and must not import them; they register here from their
# AppConfig.ready(), so every path that closes an invoice (webhooks one by one or batched,
# demo data, commands) takes them along in the same transaction as the move.
CloseHook = Callable[..., object]
_close_hooks: dict[str, CloseHook] = {}


def invoice_close_hook_register(*, name: str, hook: CloseHook) -> None:
    """Register (or replace, by `name`) a hook run on every close; idempotent."""
    _close_hooks[name] = hook


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
    occurred_at: datetime | None = None, **fields: Any,
) -> bool:
    """Apply one move to a row the caller holds locked, inside the caller's transaction.

    `occurred_at` is the provider's time of the event behind the move; PayPilot's own events
    (a send, a click) happen when they are applied, so it defaults to `now`."""
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
        cause=cause, event_ref=event_ref[:200], occurred_at=occurred_at or now,
    )
    audit_record(
        event=f"ledger.invoice.{to}",
        tenant=locked.tenant,
        detail={"invoice_id": locked.pk, "from_state": previous, "to_state": to, "cause": cause},
    )
    if to in Invoice.TERMINAL_STATES:
        for hook in _close_hooks.values():
            hook(invoice=locked, to=to, now=now)
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


def invoice_mark_churned(
    *, tenant: Tenant, provider: str, subscription_id: str, event_ref: str = "",
    occurred_at: datetime | None = None,
) -> int:
    """Move every open invoice of a cancelled subscription to `churned` (`closed_at` = the
    provider's cancellation time, else now); returns how many."""
    if not subscription_id:
        return 0
    moved = 0
    now = timezone.now()
    occurred_at = occurred_at or now
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
                           event_ref=event_ref, now=now, occurred_at=occurred_at, closed_at=occurred_at)
    return moved


def invoice_mark_exhausted(
    *, tenant: Tenant, provider: str, external_invoice_id: str, event_ref: str = "",
    occurred_at: datetime | None = None,
) -> str:
    """The provider stopped retrying: "exhausted" on a move, "noop" when already closed,
    "unknown" when the invoice was never seen failing. `closed_at` = the provider's time."""
    return _close(tenant=tenant, provider=provider, external_invoice_id=external_invoice_id,
                  to=State.EXHAUSTED, cause=CAUSE_RETRIES_EXHAUSTED, event_ref=event_ref,
                  occurred_at=occurred_at)


def invoice_record_void(
    *, tenant: Tenant, provider: str, external_invoice_id: str, event_ref: str = "",
    occurred_at: datetime | None = None,
) -> str:
    """The provider voided (or deleted) the invoice: nothing is owed any more.

    Open invoice -> `voided` ("voided"; `closed_at` = the provider's time), which takes it
    out of every recovery denominator. Already closed -> untouched ("noop"): a void after a
    payment is the provider tidying up, and a recovered invoice stays recovered; the noop is
    audited because money was recorded against it. Never seen failing -> "unknown".
    """
    return _close(tenant=tenant, provider=provider, external_invoice_id=external_invoice_id,
                  to=State.VOIDED, cause=CAUSE_INVOICE_VOIDED, event_ref=event_ref, occurred_at=occurred_at)


def _close(
    *, tenant: Tenant, provider: str, external_invoice_id: str, to: str, cause: str, event_ref: str,
    occurred_at: datetime | None,
) -> str:
    with transaction.atomic():
        invoice = (
            Invoice.objects.select_for_update()
            .filter(tenant=tenant, provider=provider, external_invoice_id=external_invoice_id)
            .first()
        )
        if invoice is None:
            return "unknown"
        if not invoice.is_open:
            if to == State.VOIDED and invoice.state != State.VOIDED:
                audit_record(event="ledger.invoice.void_ignored", tenant=tenant, detail={
                    "invoice_id": invoice.pk, "state": invoice.state, "reason": REASON_VOID_OF_CLOSED,
                })
            return "noop"
        now = timezone.now()
        occurred_at = occurred_at or now
        _move(invoice, to=to, cause=cause, event_ref=event_ref, now=now, occurred_at=occurred_at,
              closed_at=occurred_at)
        return str(to)


def invoice_mark_messaged(*, invoice: Invoice, event_ref: str = "", now: datetime | None = None) -> bool:
    """Record a real send (at `now`, default the present: only a backfill such as the demo
    history passes a past time). False when it is a repeat send or the invoice closed
    meanwhile (the email went out, but a closed invoice is never reopened). Raises
    IllegalTransition (audited) for a holdout invoice."""
    return _run_locked(
        invoice,
        lambda locked: locked.is_open
        and _move(locked, to=State.MESSAGED, cause=CAUSE_EMAIL_SENT, event_ref=event_ref, now=now),
        cause=CAUSE_EMAIL_SENT,
    )


def invoice_mark_clicked(*, invoice: Invoice, event_ref: str = "", now: datetime | None = None) -> bool:
    """Record a click on the recovery link (at `now`, as `invoice_mark_messaged`). False for
    a repeat click or a closed invoice (a late click on an old email); raises
    IllegalTransition (audited) for a never-messaged one."""
    return _run_locked(
        invoice,
        lambda locked: locked.is_open
        and _move(locked, to=State.CLICKED, cause=CAUSE_LINK_CLICKED, event_ref=event_ref, now=now),
        cause=CAUSE_LINK_CLICKED,
    )
