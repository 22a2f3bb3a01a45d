"""The batch forms: invoice_record_failures and customer_upsert_many answer in order, one
result per item, exactly as the single services would, and refuse a repeated key."""

from __future__ import annotations

import pytest

from ledger.models import Customer, Invoice, InvoiceTransition
from ledger.services import (
    CustomerInput,
    FailureInput,
    customer_upsert,
    customer_upsert_many,
    invoice_record_failure,
    invoice_record_failures,
    invoice_record_payment,
    invoice_transition,
)
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


def failure(invoice_id: str, **fields) -> FailureInput:  # type: ignore[no-untyped-def]
    values = {"provider": "stripe", "external_invoice_id": invoice_id, "amount_minor": 4900, "currency": "usd",
              "failure_code": "insufficient_funds", **fields}
    return FailureInput(**values)


def test_failures_answer_in_order_with_every_outcome(tenant) -> None:  # type: ignore[no-untyped-def]
    invoice_record_failure(tenant=tenant, provider="stripe", external_invoice_id="in_open", amount_minor=100,
                           currency="USD", failure_code="card_declined", attempt=1)
    closed = invoice_record_failure(tenant=tenant, provider="stripe", external_invoice_id="in_closed",
                                    amount_minor=100, currency="USD", failure_code="card_declined").invoice
    invoice_transition(invoice=closed, to="churned", cause="subscription_cancelled")
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_paid", amount_paid_minor=4900,
                           currency="USD")
    transitions_before = InvoiceTransition.objects.count()

    results = invoice_record_failures(tenant=tenant, failures=[
        failure("in_new_1"), failure("in_open", attempt=3), failure("in_closed"), failure("in_paid"),
        failure("in_new_2", amount_minor=12000),
    ])

    assert [r.outcome for r in results] == ["recorded", "repeat", "closed_noop", "already_paid", "recorded"]
    assert [r.created for r in results] == [True, False, False, False, True]
    assert results[1].invoice.attempt_count == 3 and results[2].invoice.state == "churned"
    assert results[3].invoice is None
    new = Invoice.objects.get(external_invoice_id="in_new_2")
    assert (new.pk, new.amount_minor, new.currency, new.state) == (results[4].invoice.pk, 12000, "USD", "failed")
    assert InvoiceTransition.objects.count() == transitions_before + 2
    assert AuditEvent.objects.filter(event="ledger.invoice.failed").count() == 4  # 2 before, 2 now
    assert AuditEvent.objects.filter(event="ledger.invoice.failure_after_payment").count() == 1


def test_failures_refuse_a_repeated_invoice_and_store_nothing(tenant) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="distinct"):
        invoice_record_failures(tenant=tenant, failures=[failure("in_1"), failure("in_2"), failure("in_1")])
    with pytest.raises(ValueError, match="attempt"):
        invoice_record_failures(tenant=tenant, failures=[failure("in_1"), failure("in_2", attempt=0)])
    assert not Invoice.objects.exists()


def test_customers_created_updated_and_untouched_in_order(tenant) -> None:  # type: ignore[no-untyped-def]
    customer_upsert(tenant=tenant, external_id="cus_same", name="Same", email="same@example.com")
    changed = customer_upsert(tenant=tenant, external_id="cus_changed", name="Old name")
    audits_before = AuditEvent.objects.filter(event__startswith="ledger.customer").count()

    rows = customer_upsert_many(tenant=tenant, customers=[
        CustomerInput(external_id="cus_new", name="New", currency="eur"),
        CustomerInput(external_id="cus_same", name="Same"),
        CustomerInput(external_id="cus_changed", name="New name", email=""),
    ])

    assert [c.external_id for c in rows] == ["cus_new", "cus_same", "cus_changed"]
    assert rows[0].pk is not None and rows[0].currency == "EUR"
    assert rows[2].pk == changed.pk
    assert Customer.objects.get(external_id="cus_changed").name == "New name"
    assert Customer.objects.get(external_id="cus_same").email == "same@example.com"  # empty leaves alone
    events = list(AuditEvent.objects.filter(event__startswith="ledger.customer").order_by("pk")
                  .values_list("event", flat=True))[audits_before:]
    assert sorted(events) == ["ledger.customer.created", "ledger.customer.updated"]


def test_customers_refuse_a_repeated_id(tenant) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="distinct"):
        customer_upsert_many(tenant=tenant, customers=[CustomerInput(external_id="c"), CustomerInput(external_id="c")])
    assert not Customer.objects.exists()
