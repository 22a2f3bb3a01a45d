"""Churned, exhausted, messaged and clicked."""

from __future__ import annotations

import pytest
from django.test import override_settings

from ledger.services import (
    IllegalTransition,
    invoice_mark_churned,
    invoice_mark_clicked,
    invoice_mark_exhausted,
    invoice_mark_messaged,
    invoice_record_payment,
)

pytestmark = pytest.mark.django_db


def test_churn_moves_only_open_invoices_of_the_subscription(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    a = record_failure("in_a").invoice
    b = record_failure("in_b").invoice
    c = record_failure("in_c", subscription_id="sub_2").invoice
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_b",
                           amount_paid_minor=4900, currency="usd")
    assert invoice_mark_churned(tenant=tenant, provider="stripe", subscription_id="sub_1") == 1
    for inv in (a, b, c):
        inv.refresh_from_db()
    assert (a.state, b.state, c.state) == ("churned", "recovered", "failed")
    assert invoice_mark_churned(tenant=tenant, provider="stripe", subscription_id="sub_1") == 0
    assert invoice_mark_churned(tenant=tenant, provider="stripe", subscription_id="") == 0


def test_exhausted_outcomes(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    record_failure()
    kwargs = {"tenant": tenant, "provider": "stripe"}
    assert invoice_mark_exhausted(**kwargs, external_invoice_id="in_1") == "exhausted"
    assert invoice_mark_exhausted(**kwargs, external_invoice_id="in_1") == "noop"
    assert invoice_mark_exhausted(**kwargs, external_invoice_id="in_x") == "unknown"


def test_messaged_then_clicked_then_messaged_again(record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    assert invoice_mark_messaged(invoice=invoice, event_ref="send:1") is True
    assert invoice_mark_messaged(invoice=invoice, event_ref="send:1") is False
    assert invoice_mark_clicked(invoice=invoice) is True
    assert invoice_mark_clicked(invoice=invoice) is False
    assert invoice_mark_messaged(invoice=invoice, event_ref="send:2") is True
    assert invoice.state == "messaged"


def test_click_before_any_send_is_illegal(record_failure) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IllegalTransition):
        invoice_mark_clicked(invoice=record_failure().invoice)


def test_late_click_or_send_on_a_closed_invoice_changes_nothing(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    invoice_mark_messaged(invoice=invoice)
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_1",
                           amount_paid_minor=4900, currency="usd")
    assert invoice_mark_clicked(invoice=invoice) is False
    assert invoice_mark_messaged(invoice=invoice) is False
    assert invoice.state == "recovered"


@override_settings(PAYPILOT_HOLDOUT_PCT=100)
def test_holdout_invoice_cannot_be_marked_messaged(record_failure) -> None:  # type: ignore[no-untyped-def]
    invoice = record_failure().invoice
    with pytest.raises(IllegalTransition):
        invoice_mark_messaged(invoice=invoice)
    assert invoice.state == "failed" and invoice.first_messaged_at is None
