"""The one locking transition service: allowed, forbidden, duplicate, holdout, atomicity."""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import override_settings

from ledger.models import Invoice, InvoiceTransition
from ledger.services import ALLOWED_MOVES, IllegalTransition, invoice_transition
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_allowed_move_writes_one_row_and_one_audit(record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    assert invoice_transition(invoice=invoice, to="messaged", cause="email_sent", event_ref="send:1")
    assert invoice.state == "messaged" and invoice.first_messaged_at is not None
    row = InvoiceTransition.objects.filter(invoice=invoice).last()
    assert (row.from_state, row.to_state, row.cause, row.event_ref) == ("failed", "messaged", "email_sent", "send:1")
    audit = AuditEvent.objects.get(event="ledger.invoice.messaged")
    assert audit.detail == {"invoice_id": invoice.pk, "from_state": "failed", "to_state": "messaged",
                            "cause": "email_sent"}


def test_same_state_move_is_a_silent_noop(record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    invoice_transition(invoice=invoice, to="messaged", cause="email_sent")
    rows, audits = InvoiceTransition.objects.count(), AuditEvent.objects.count()
    assert invoice_transition(invoice=invoice, to="messaged", cause="email_sent") is False
    assert (InvoiceTransition.objects.count(), AuditEvent.objects.count()) == (rows, audits)


@pytest.mark.parametrize(("path", "illegal"), [
    ([], "clicked"),
    (["recovered"], "failed"),
    (["recovered"], "messaged"),
    (["churned"], "recovered"),
    (["exhausted"], "churned"),
    (["messaged"], "failed"),
])
def test_illegal_move_raises_and_is_audited(record_failure, path, illegal) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    for step in path:
        invoice_transition(invoice=invoice, to=step, cause="test")
    before = invoice.state
    rows = InvoiceTransition.objects.count()
    with pytest.raises(IllegalTransition) as info:
        invoice_transition(invoice=invoice, to=illegal, cause="test")
    assert (info.value.from_state, info.value.to_state) == (before, illegal)
    invoice.refresh_from_db()
    assert invoice.state == before
    assert InvoiceTransition.objects.count() == rows
    audit = AuditEvent.objects.get(event="ledger.invoice.illegal_transition")
    assert audit.detail["reason"] == "illegal_move" and audit.detail["to_state"] == illegal


def test_terminal_states_allow_nothing() -> None:
    for state in Invoice.TERMINAL_STATES:
        assert ALLOWED_MOVES[state] == frozenset()


@override_settings(PAYPILOT_HOLDOUT_PCT=100)
def test_holdout_invoice_is_never_messaged(record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    assert invoice.arm == "holdout"
    with pytest.raises(IllegalTransition) as info:
        invoice_transition(invoice=invoice, to="messaged", cause="email_sent")
    assert info.value.reason == "holdout_never_messaged"
    assert AuditEvent.objects.filter(event="ledger.invoice.illegal_transition").count() == 1
    # ...but it can still recover on its own
    assert invoice_transition(invoice=invoice, to="recovered", cause="payment_succeeded")


def test_state_change_and_history_row_commit_together(record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    with mock.patch.object(InvoiceTransition.objects, "create", side_effect=RuntimeError("boom")):
        with pytest.raises(RuntimeError):
            invoice_transition(invoice=invoice, to="exhausted", cause="retries_exhausted")
    invoice.refresh_from_db()
    assert invoice.state == "failed"


def test_unknown_state_is_refused(record_failure) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        invoice_transition(invoice=record_failure().invoice, to="paid", cause="x")


def test_row_is_locked_for_update(record_failure, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        invoice_transition(invoice=invoice, to="churned", cause="subscription_cancelled")
    selects = [q["sql"] for q in ctx.captured_queries if 'FROM "ledger_invoice"' in q["sql"]]
    if connection.vendor == "postgresql":
        assert any("FOR UPDATE" in sql for sql in selects)
    else:  # SQLite has no row locks; IMMEDIATE transactions serialise writers instead
        assert selects
