"""Chargebee and Recharge events through authenticated / signed webhooks into the ledger:
provider event times, refunds (Chargebee `payment_refunded`, Recharge `charge/refunded`),
Chargebee voids (`invoice_deleted`, `invoice_updated` with status voided), currency checks."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from integrations.models import WebhookEvent
from integrations.tests.conftest import load_fixture
from ledger.models import Invoice, InvoiceRefund, LedgerInconsistency

# Chargebee refuses events older than 4 days by the wall clock: every test runs at NOW.
NOW_AT = datetime(2026, 12, 1, 12, tzinfo=UTC)
NOW = int(NOW_AT.timestamp())
pytestmark = [pytest.mark.django_db, pytest.mark.frozen_clock(NOW_AT)]


def cb(name: str, *, occurred_at: int, event_id: str = "", version_bump: int = 0) -> dict[str, Any]:
    """A Chargebee fixture at a given event time (Chargebee refuses events older than 4 days)."""
    payload = copy.deepcopy(load_fixture("chargebee", name))
    payload["occurred_at"] = occurred_at
    if event_id:
        payload["id"] = event_id
    if version_bump and "invoice" in payload["content"]:
        payload["content"]["invoice"]["resource_version"] += version_bump
    return payload


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


# --- Chargebee -----------------------------------------------------------------------------

def test_chargebee_times_are_the_event_and_payment_times(post_chargebee, recovery):
    failed_at = NOW - 3 * 86_400
    post_chargebee(cb("payment_failed", occurred_at=failed_at))
    payment = cb("payment_succeeded", occurred_at=NOW - 3600)
    payment["content"]["invoice"]["paid_at"] = NOW - 7200
    post_chargebee(payment)

    invoice = Invoice.objects.get()
    assert invoice.failed_at == at(failed_at)
    assert (invoice.state, invoice.recovered_at) == ("recovered", at(NOW - 7200))  # invoice.paid_at


def test_chargebee_payment_refunded_reduces_net_and_a_second_delivery_does_not(post_chargebee, recovery):
    post_chargebee(cb("payment_failed", occurred_at=NOW - 3 * 86_400))
    post_chargebee(cb("payment_succeeded", occurred_at=NOW - 2 * 86_400))
    refund = cb("payment_refunded", occurred_at=NOW - 3600)
    post_chargebee(refund)
    # the same refund transaction in another event (Chargebee retries with the same id,
    # but a re-sent event from the console has a new one)
    post_chargebee(cb("payment_refunded", occurred_at=NOW - 3000, event_id="ev_resent_refund", version_bump=5))

    invoice = Invoice.objects.get()
    assert (invoice.recovered_minor, invoice.refunded_minor) == (29900, 9900)
    [row] = InvoiceRefund.objects.all()
    assert (row.refund_ref, row.amount_minor, row.currency, row.occurred_at) == (
        "txn_AzZhUGSPAr7Rf1", 9900, "EUR", at(1780905590))  # the refund transaction's date
    assert WebhookEvent.objects.get(event_key="ev_resent_refund").outcome == "noop_refund_duplicate"


def test_chargebee_refund_finds_its_invoice_through_the_credit_note(post_chargebee, recovery):
    post_chargebee(cb("payment_failed", occurred_at=NOW - 3 * 86_400))
    post_chargebee(cb("payment_succeeded", occurred_at=NOW - 2 * 86_400))
    refund = cb("payment_refunded", occurred_at=NOW - 3600)
    del refund["content"]["invoice"]
    post_chargebee(refund)
    assert Invoice.objects.get().refunded_minor == 9900


def test_chargebee_invoice_deleted_voids_an_open_invoice(post_chargebee, recovery):
    post_chargebee(cb("payment_failed", occurred_at=NOW - 3 * 86_400))
    post_chargebee(cb("invoice_deleted", occurred_at=NOW - 60))

    invoice = Invoice.objects.get()
    assert (invoice.state, invoice.closed_at) == ("voided", at(NOW - 60))


def test_chargebee_invoice_updated_to_voided_voids_it(post_chargebee, recovery):
    post_chargebee(cb("payment_failed", occurred_at=NOW - 3 * 86_400))
    post_chargebee(cb("invoice_updated_voided", occurred_at=NOW - 60))

    invoice = Invoice.objects.get()
    assert (invoice.state, invoice.closed_at) == ("voided", at(1780559990))  # invoice.voided_at


def test_chargebee_other_invoice_updates_are_ignored(post_chargebee, recovery):
    post_chargebee(cb("payment_failed", occurred_at=NOW - 3 * 86_400))
    update = cb("invoice_updated_voided", occurred_at=NOW - 60)
    update["content"]["invoice"]["status"] = "payment_due"
    post_chargebee(update)
    assert Invoice.objects.get().state == "failed"
    assert WebhookEvent.objects.get(event_type="invoice_updated").outcome == "invoice_update_not_void"


def test_chargebee_payment_in_another_currency_is_refused(post_chargebee, recovery):
    post_chargebee(cb("payment_failed", occurred_at=NOW - 3 * 86_400))
    payment = cb("payment_succeeded", occurred_at=NOW - 3600)
    payment["content"]["invoice"]["currency_code"] = "JPY"
    payment["content"]["invoice"]["amount_paid"] = 4500
    post_chargebee(payment)

    assert Invoice.objects.get().state == "failed"
    row = LedgerInconsistency.objects.get()
    assert (row.expected_currency, row.received_currency, row.amount_minor) == ("EUR", "JPY", 4500)


# --- Recharge ------------------------------------------------------------------------------

def test_recharge_times_and_a_cumulative_refund(recharge_tenant, post_recharge, recovery):
    post_recharge(load_fixture("recharge", "charge_failed_card_expired"))
    post_recharge(load_fixture("recharge", "charge_paid"))
    refund = load_fixture("recharge", "charge_refunded")
    post_recharge(refund)
    post_recharge(refund)  # redelivered: the inbox answers duplicate
    later = copy.deepcopy(refund)
    later["charge"].update(status="refunded", total_refunds="59.90", updated_at="2026-06-20T10:00:00")
    post_recharge(later)

    invoice = Invoice.objects.get()
    assert invoice.failed_at == datetime(2026, 6, 8, 0, 0, 7, tzinfo=UTC)  # the charge's updated_at
    assert invoice.recovered_at == datetime(2026, 6, 11, 4, 0, 12, tzinfo=UTC)  # processed_at
    assert (invoice.recovered_minor, invoice.refunded_minor) == (5990, 5990)
    assert sorted(InvoiceRefund.objects.values_list("amount_minor", "occurred_at")) == [
        (2000, datetime(2026, 6, 15, 9, 30, tzinfo=UTC)), (3990, datetime(2026, 6, 20, 10, 0, tzinfo=UTC))]
    assert WebhookEvent.objects.filter(event_type="charge/refunded").count() == 2


def test_recharge_refund_topic_needs_a_refunded_charge(recharge_tenant, post_recharge, recovery):
    """The topic header is not signed: a paid charge relabelled charge/refunded stays a payment."""
    post_recharge(load_fixture("recharge", "charge_paid"), topic="charge/refunded")
    assert WebhookEvent.objects.get().event_type == "charge/paid"
