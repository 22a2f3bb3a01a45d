"""Recording failures: create, repeat, closed, already paid, bad input."""

from __future__ import annotations

import pytest

from ledger.models import Invoice, InvoiceTransition, PaidBeforeFailure
from ledger.services import invoice_record_failure, invoice_record_payment, invoice_transition
from ledger.tests.factories import CustomerFactory
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_new_invoice_starts_failed_with_history_and_audit(record_failure) -> None:  # type: ignore[no-untyped-def]
    result = record_failure("in_9", amount_minor=1234, attempt=2, hosted_invoice_url="https://invoice.stripe.com/i/x")
    invoice = result.invoice
    assert (result.outcome, result.created) == ("recorded", True)
    assert (invoice.state, invoice.amount_minor, invoice.currency, invoice.attempt_count) == ("failed", 1234, "USD", 2)
    assert invoice.arm == "treatment"  # default PAYPILOT_HOLDOUT_PCT=0
    row = InvoiceTransition.objects.get(invoice=invoice)
    assert (row.from_state, row.to_state, row.cause) == ("", "failed", "payment_failed")
    audit = AuditEvent.objects.get(event="ledger.invoice.failed")
    assert audit.detail["invoice_id"] == invoice.pk and audit.detail["amount_minor"] == 1234


def test_repeat_updates_attempt_code_and_amount_while_open(record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure(amount_minor=1000, attempt=1)
    result = record_failure(amount_minor=1200, attempt=3, failure_code="insufficient_funds")
    assert (result.outcome, result.created) == ("repeat", False)
    invoice = result.invoice
    assert (invoice.attempt_count, invoice.failure_code, invoice.amount_minor) == (3, "insufficient_funds", 1200)
    # an older attempt redelivered late never lowers the count
    assert record_failure(amount_minor=1200, attempt=2).invoice.attempt_count == 3
    assert Invoice.objects.count() == 1
    assert InvoiceTransition.objects.count() == 1


def test_closed_invoice_is_never_reopened(record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure(amount_minor=1000).invoice
    invoice_transition(invoice=invoice, to="recovered", cause="payment_succeeded")
    result = record_failure(amount_minor=9999, attempt=4)
    assert result.outcome == "closed_noop"
    invoice.refresh_from_db()
    assert (invoice.state, invoice.amount_minor, invoice.attempt_count) == ("recovered", 1000, 1)


def test_failure_after_paid_before_failure_is_already_paid(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_1",
                           amount_paid_minor=4900, currency="usd")
    result = record_failure("in_1")
    assert (result.outcome, result.invoice, result.created) == ("already_paid", None, False)
    assert not Invoice.objects.exists()
    assert PaidBeforeFailure.objects.count() == 1


def test_same_external_id_is_separate_per_tenant_and_provider(tenant, other_tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure("in_1")
    record_failure("in_1", provider="recharge")
    invoice_record_failure(tenant=other_tenant, provider="stripe", external_invoice_id="in_1",
                           amount_minor=1, currency="usd", failure_code="card_expired")
    assert Invoice.objects.count() == 3


def test_customer_is_linked(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    customer = CustomerFactory(tenant=tenant)
    assert record_failure(customer=customer).invoice.customer == customer


@pytest.mark.parametrize("bad", [
    {"amount_minor": -1}, {"amount_minor": 12.5}, {"amount_minor": True}, {"currency": "dollars"},
    {"attempt": 0}, {"external_invoice_id": ""}, {"provider": ""},
])
def test_bad_input_is_refused(record_failure, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        record_failure(**bad)
    assert not Invoice.objects.exists()


def test_customer_of_another_tenant_is_refused(other_tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        record_failure(customer=CustomerFactory(tenant=other_tenant))
