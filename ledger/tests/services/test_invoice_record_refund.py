"""Refunds: by refund id and by cumulative total, capped at what was recovered, refused in
another currency, nothing for invoices not recovered here; bad input refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, transaction

from ledger.models import Invoice, InvoiceRefund, LedgerInconsistency
from ledger.services import invoice_record_payment, invoice_record_refund
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db
WHEN = datetime(2026, 5, 1, 12, tzinfo=UTC)


@pytest.fixture
def recovered(tenant, record_failure) -> Invoice:  # type: ignore[no-untyped-def]
    record_failure()
    return invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_1",
                                  amount_paid_minor=4900, currency="usd").invoice


def _refund(tenant, **kwargs):  # type: ignore[no-untyped-def]
    values = {"tenant": tenant, "provider": "stripe", "external_invoice_id": "in_1", "currency": "usd",
              "refund_ref": "re_1", "occurred_at": WHEN, "event_ref": "stripe:evt_r"}
    values.update(kwargs)
    return invoice_record_refund(**values)


def test_a_refund_by_id_is_stored_and_audited_once(tenant, recovered) -> None:  # type: ignore[no-untyped-def]
    result = _refund(tenant, amount_minor=1000)
    assert (result.outcome, result.applied_minor, result.invoice.refunded_minor) == ("refunded", 1000, 1000)
    assert _refund(tenant, amount_minor=1000).outcome == "noop_refund_duplicate"
    row = InvoiceRefund.objects.get()
    assert (row.refund_ref, row.amount_minor, row.currency, row.occurred_at, row.event_ref) == (
        "re_1", 1000, "USD", WHEN, "stripe:evt_r")
    assert AuditEvent.objects.filter(event="ledger.invoice.refunded").count() == 1


def test_cumulative_totals_store_only_the_new_part(tenant, recovered) -> None:  # type: ignore[no-untyped-def]
    assert _refund(tenant, refund_ref="ch_1", cumulative_minor=1000).applied_minor == 1000
    assert _refund(tenant, refund_ref="ch_1", cumulative_minor=3000).applied_minor == 2000
    assert _refund(tenant, refund_ref="ch_1", cumulative_minor=3000).outcome == "noop_refund_duplicate"
    assert _refund(tenant, refund_ref="ch_1", cumulative_minor=2000).outcome == "noop_refund_stale"
    assert Invoice.objects.get().refunded_minor == 3000
    assert sorted(InvoiceRefund.objects.values_list("refund_ref", flat=True)) == ["ch_1#1000", "ch_1#3000"]


def test_more_than_recovered_is_capped_and_recorded(tenant, recovered) -> None:  # type: ignore[no-untyped-def]
    _refund(tenant, amount_minor=4000)
    result = _refund(tenant, refund_ref="re_2", amount_minor=2000)
    assert (result.outcome, result.applied_minor) == ("refunded_capped", 900)
    assert Invoice.objects.get().refunded_minor == 4900
    row = LedgerInconsistency.objects.get()
    assert (row.kind, row.amount_minor, row.event_ref) == ("refund_exceeds_recovered", 2000, "stripe:evt_r")


def test_another_currency_is_refused_untouched(tenant, recovered) -> None:  # type: ignore[no-untyped-def]
    assert _refund(tenant, amount_minor=1000, currency="eur").outcome == "refused_currency_mismatch"
    assert Invoice.objects.get().refunded_minor == 0 and not InvoiceRefund.objects.exists()
    assert LedgerInconsistency.objects.get().received_currency == "EUR"


def test_unknown_or_unrecovered_invoices_change_nothing(tenant, record_failure) -> None:  # type: ignore[no-untyped-def]
    assert _refund(tenant, amount_minor=1000).outcome == "noop_refund_unknown_invoice"
    record_failure()
    assert _refund(tenant, amount_minor=1000).outcome == "noop_refund_not_recovered"
    assert not InvoiceRefund.objects.exists() and Invoice.objects.get().refunded_minor == 0


@pytest.mark.parametrize("kwargs", [
    {}, {"amount_minor": 1, "cumulative_minor": 1}, {"amount_minor": 0}, {"amount_minor": -5},
    {"cumulative_minor": -1}, {"amount_minor": True}, {"amount_minor": 1, "refund_ref": ""},
])
def test_bad_input_is_refused(tenant, recovered, kwargs) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        _refund(tenant, **kwargs)


def test_the_database_refuses_net_below_zero(tenant, recovered) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IntegrityError), transaction.atomic():
        Invoice.objects.filter(pk=recovered.pk).update(refunded_minor=4901)


def test_refund_rows_are_append_only(tenant, recovered) -> None:  # type: ignore[no-untyped-def]
    _refund(tenant, amount_minor=1000)
    with pytest.raises(Exception), transaction.atomic():  # noqa: B017 - the trigger's error type differs per database
        InvoiceRefund.objects.update(amount_minor=1)
