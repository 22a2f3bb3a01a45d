"""Voids: an open invoice moves to voided (terminal, out of the reported states), a closed one
stays as it was (audited), an unknown one is not created."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ledger.models import Invoice, InvoiceTransition
from ledger.services import (
    IllegalTransition,
    invoice_mark_messaged,
    invoice_record_payment,
    invoice_record_void,
    invoice_transition,
)
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db
WHEN = datetime(2026, 5, 1, 12, tzinfo=UTC)


def _void(tenant, invoice_id="in_1"):  # type: ignore[no-untyped-def]
    return invoice_record_void(tenant=tenant, provider="stripe", external_invoice_id=invoice_id,
                               event_ref="stripe:evt_v", occurred_at=WHEN)


def test_an_open_invoice_is_voided_once(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    if invoice.arm == "treatment":  # voided from messaged too, when the arm allows a send
        invoice_mark_messaged(invoice=invoice)
    assert _void(tenant) == "voided"
    assert _void(tenant) == "noop"  # redelivery
    invoice.refresh_from_db()
    assert (invoice.state, invoice.closed_at) == ("voided", WHEN)
    assert "voided" not in Invoice.REPORTED_STATES
    row = InvoiceTransition.objects.filter(invoice=invoice).last()
    assert (row.to_state, row.cause, row.occurred_at, row.event_ref) == ("voided", "invoice_voided", WHEN,
                                                                         "stripe:evt_v")
    assert not AuditEvent.objects.filter(event="ledger.invoice.void_ignored").exists()


def test_a_voided_invoice_never_leaves_voided(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    _void(tenant)
    with pytest.raises(IllegalTransition):
        invoice_transition(invoice=invoice, to="recovered", cause="prop")
    payment = invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_1",
                                     amount_paid_minor=4900, currency="usd")
    assert payment.outcome == "noop"


def test_a_void_of_a_recovered_invoice_is_audited_and_ignored(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure()
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_1",
                           amount_paid_minor=4900, currency="usd")
    assert _void(tenant) == "noop"
    assert Invoice.objects.get().state == "recovered"
    assert AuditEvent.objects.get(event="ledger.invoice.void_ignored").detail["state"] == "recovered"


def test_an_unknown_invoice_is_not_created(tenant) -> None:  # type: ignore[no-untyped-def]
    assert _void(tenant, "in_never") == "unknown"
    assert not Invoice.objects.exists()
