"""Payments: recovery of a seen failure, paid-before-failure markers, redeliveries."""

from __future__ import annotations

import pytest

from ledger.models import InvoiceTransition, PaidBeforeFailure
from ledger.services import invoice_mark_churned, invoice_record_payment
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


def _pay(tenant, invoice_id="in_1", amount=4900):  # type: ignore[no-untyped-def]
    return invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id=invoice_id,
                                  amount_paid_minor=amount, currency="usd", event_ref="evt_1")


def test_payment_of_a_failed_invoice_is_a_recovery(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure()
    result = _pay(tenant, amount=4800)
    assert result.outcome == "recovered"
    invoice = result.invoice
    assert (invoice.state, invoice.recovered_minor) == ("recovered", 4800)
    assert invoice.recovered_at is not None
    row = InvoiceTransition.objects.filter(invoice=invoice).last()
    assert (row.to_state, row.cause, row.event_ref) == ("recovered", "payment_succeeded", "evt_1")
    assert AuditEvent.objects.filter(event="ledger.invoice.recovered").count() == 1


def test_redelivered_payment_is_a_noop(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure()
    _pay(tenant)
    assert _pay(tenant, amount=1).outcome == "noop"
    assert InvoiceTransition.objects.count() == 2
    assert _pay(tenant).invoice.recovered_minor == 4900


def test_payment_after_churn_changes_nothing(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure()
    invoice_mark_churned(tenant=tenant, provider="stripe", subscription_id="sub_1")
    result = _pay(tenant)
    assert result.outcome == "noop" and result.invoice.state == "churned"


def test_payment_never_seen_failing_is_stored_not_counted(tenant) -> None:  # type: ignore[no-untyped-def]
    result = _pay(tenant, "in_new")
    assert (result.outcome, result.invoice) == ("paid_before_failure", None)
    marker = PaidBeforeFailure.objects.get()
    assert (marker.external_invoice_id, marker.amount_paid_minor, marker.currency) == ("in_new", 4900, "USD")
    assert _pay(tenant, "in_new").outcome == "paid_before_failure"  # redelivery
    assert PaidBeforeFailure.objects.count() == 1
    assert AuditEvent.objects.filter(event="ledger.invoice.paid_before_failure").count() == 1


def test_negative_payment_is_refused(tenant) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        _pay(tenant, amount=-5)
