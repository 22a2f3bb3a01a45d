"""Stripe events through signed webhooks into the ledger: provider event times (a backlog keeps
them), refunds (full, partial, two partials, redelivery, never below zero), `invoice.voided`,
and a payment in another currency refused as an inconsistency."""

from __future__ import annotations

import copy
import statistics
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from integrations.models import WebhookEvent
from integrations.tests.conftest import load_fixture
from ledger.models import Invoice, InvoiceRefund, InvoiceTransition, LedgerInconsistency, PaidBeforeFailure
from paypilot.models import AuditEvent

INVOICE = "in_1RzQ4xAcmeRobotics"
T0 = 1_776_000_000  # 2026-04-12, weeks before the tests run: a backlog processed late
# The tests run on 1 December 2026 whatever the day: the backlog is processed months late.
RUN_AT = datetime(2026, 12, 1, 12, tzinfo=UTC)
pytestmark = [pytest.mark.django_db, pytest.mark.frozen_clock(RUN_AT)]


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def failed(n: int, *, invoice: str = INVOICE, created: int = T0, currency: str = "usd",
           amount: int = 149900) -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("stripe", "invoice_payment_failed"))
    payload["id"] = f"evt_in_fail_{n:04d}"
    payload["created"] = created
    obj = payload["data"]["object"]
    obj.update(id=invoice, customer=f"cus_in_{invoice}", currency=currency, amount_due=amount)
    return payload


def paid(n: int, *, invoice: str = INVOICE, paid_at: int | None, created: int, currency: str = "usd",
         amount: int = 149900) -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("stripe", "invoice_paid"))
    payload["id"] = f"evt_in_paid_{n:04d}"
    payload["created"] = created
    obj = payload["data"]["object"]
    obj.update(id=invoice, currency=currency, amount_paid=amount)
    obj["status_transitions"] = {"paid_at": paid_at}
    return payload


def charge_refunded(n: int, *, cumulative: int, invoice: str = INVOICE, created: int = T0 + 900_000,
                    charge: str = "ch_3RzQ9kGlobexPro") -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("stripe", "charge_refunded_legacy"))
    payload["id"] = f"evt_in_refund_{n:04d}"
    payload["created"] = created
    obj = payload["data"]["object"]
    obj.update(id=charge, invoice=invoice, amount_refunded=cumulative)
    obj["refunds"]["data"] = []  # unexpanded (API 2022-11-15+ default): the event time is used
    return payload


def state() -> Invoice:
    return Invoice.objects.get(external_invoice_id=INVOICE)


def outcome_of(event_key: str) -> str:
    return WebhookEvent.objects.get(event_key=event_key).outcome


# --- event times ---------------------------------------------------------------------------

def test_a_backlog_processed_late_keeps_the_provider_times(stripe_tenant, post_stripe, recovery):
    """Seven weekly failures and their payments, all delivered today: every failure keeps its
    own week and the median time to recovery is the true one, not zero."""
    hours_to_pay = [24, 48, 96, 150, 192, 200, 300]
    for week, hours in enumerate(hours_to_pay):
        failed_at = T0 + week * 7 * 86_400
        invoice = f"in_backlog_{week}"
        assert post_stripe(failed(week, invoice=invoice, created=failed_at)).status_code == 200
        paid_at = failed_at + hours * 3600
        assert post_stripe(paid(week, invoice=invoice, paid_at=paid_at, created=paid_at + 2)).status_code == 200

    rows = list(Invoice.objects.order_by("external_invoice_id"))
    assert [row.state for row in rows] == ["recovered"] * 7
    assert sorted(row.failed_at for row in rows) == [at(T0 + w * 7 * 86_400) for w in range(7)]
    assert len({row.failed_at.isocalendar()[:2] for row in rows}) == 7  # seven weeks, not one
    # processing times sit beside them: today, not weeks ago
    assert all(row.failed_recorded_at > row.failed_at + timedelta(days=30) for row in rows)
    assert all(row.recovered_recorded_at > row.recovered_at for row in rows)
    hours = [(row.recovered_at - row.failed_at).total_seconds() / 3600 for row in rows]
    assert statistics.median(hours) == 150.0
    # every transition carries the provider's event time; created_at stays the processing time
    first = InvoiceTransition.objects.filter(invoice=rows[0]).order_by("occurred_at")
    assert [(t.to_state, t.occurred_at) for t in first] == [
        ("failed", at(T0)), ("recovered", at(T0 + 24 * 3600))]
    assert all(t.created_at > t.occurred_at for t in first)


def test_paid_time_falls_back_to_the_event_time(stripe_tenant, post_stripe, recovery):
    post_stripe(failed(1))
    post_stripe(paid(1, paid_at=None, created=T0 + 7200))
    assert state().recovered_at == at(T0 + 7200)


def test_an_older_failure_delivered_late_lowers_the_first_failure_time(stripe_tenant, post_stripe, recovery):
    post_stripe(failed(2, created=T0 + 86_400))
    assert state().failed_at == at(T0 + 86_400)

    post_stripe(failed(1, created=T0))  # the first attempt's event, retried by Stripe later
    assert state().failed_at == at(T0)
    post_stripe(failed(3, created=T0 + 3 * 86_400))  # a newer retry never moves it forward
    assert state().failed_at == at(T0)
    assert AuditEvent.objects.filter(event="ledger.invoice.failed_at_lowered").count() == 1


def test_a_late_older_failure_lowers_it_on_a_closed_invoice_too(stripe_tenant, post_stripe, recovery):
    post_stripe(failed(2, created=T0 + 86_400))
    post_stripe(paid(1, paid_at=T0 + 2 * 86_400, created=T0 + 2 * 86_400))
    post_stripe(failed(1, created=T0))
    invoice = state()
    assert invoice.state == "recovered"
    assert invoice.recovered_at - invoice.failed_at == timedelta(days=2)


# --- refunds ------------------------------------------------------------------------------

@pytest.fixture
def recovered(stripe_tenant, post_stripe, recovery) -> Invoice:
    post_stripe(failed(1))
    post_stripe(paid(1, paid_at=T0 + 86_400, created=T0 + 86_400))
    invoice = state()
    assert (invoice.state, invoice.recovered_minor, invoice.refunded_minor) == ("recovered", 149900, 0)
    return invoice


def test_a_partial_refund_reduces_net_recovered(recovered, post_stripe):
    post_stripe(charge_refunded(1, cumulative=50000, created=T0 + 5 * 86_400))

    invoice = state()
    assert (invoice.recovered_minor, invoice.refunded_minor) == (149900, 50000)
    [refund] = InvoiceRefund.objects.all()
    assert (refund.amount_minor, refund.currency, refund.occurred_at) == (50000, "USD", at(T0 + 5 * 86_400))
    assert outcome_of("evt_in_refund_0001") == "refunded"
    audit = AuditEvent.objects.get(event="ledger.invoice.refunded")
    assert audit.detail["amount_minor"] == 50000 and audit.detail["refunded_minor"] == 50000


def test_two_partial_refunds_add_up_and_a_redelivery_changes_nothing(recovered, post_stripe):
    first = charge_refunded(1, cumulative=50000)
    post_stripe(first)
    response = post_stripe(first)  # the same event again
    assert response.json()["duplicate"] is True
    post_stripe(charge_refunded(2, cumulative=120000))
    post_stripe(charge_refunded(3, cumulative=120000))  # a new event repeating the same total

    assert state().refunded_minor == 120000
    assert sorted(InvoiceRefund.objects.values_list("amount_minor", flat=True)) == [50000, 70000]
    assert outcome_of("evt_in_refund_0003") == "noop_refund_duplicate"


def test_an_older_cumulative_total_arriving_late_is_stale(recovered, post_stripe):
    post_stripe(charge_refunded(2, cumulative=120000))
    post_stripe(charge_refunded(1, cumulative=50000))

    assert state().refunded_minor == 120000
    assert outcome_of("evt_in_refund_0001") == "noop_refund_stale"


def test_a_full_refund_brings_net_to_zero(recovered, post_stripe):
    post_stripe(charge_refunded(1, cumulative=149900))
    invoice = state()
    assert invoice.recovered_minor - invoice.refunded_minor == 0
    assert invoice.state == "recovered"  # still a recovery in the counts; its net revenue is zero


def test_a_refund_above_what_was_recovered_is_capped_and_recorded(recovered, post_stripe):
    post_stripe(charge_refunded(1, cumulative=100000))
    post_stripe(charge_refunded(2, cumulative=200000))  # 100000 more, only 49900 left

    invoice = state()
    assert invoice.refunded_minor == invoice.recovered_minor == 149900  # never below zero
    assert outcome_of("evt_in_refund_0002") == "refunded_capped"
    [row] = LedgerInconsistency.objects.all()
    assert (row.kind, row.invoice_id, row.amount_minor, row.expected_currency) == (
        "refund_exceeds_recovered", invoice.pk, 100000, "USD")
    post_stripe(charge_refunded(3, cumulative=250000))  # fully refunded already: nothing left to take
    assert state().refunded_minor == 149900
    assert outcome_of("evt_in_refund_0003") == "refunded_capped"


def test_a_credit_note_counts_its_refunds_and_out_of_band_part_on_current_versions(recovered, post_stripe):
    post_stripe(load_fixture("stripe", "credit_note_created"))

    invoice = state()
    assert invoice.refunded_minor == 60000  # 50000 refunded through Stripe + 10000 out of band
    [refund] = InvoiceRefund.objects.all()
    assert (refund.refund_ref, refund.occurred_at) == ("cn_1RzS2gAcmeRobotics", at(1781827195))


def test_before_basil_a_credit_note_adds_only_its_out_of_band_part(recovered, post_stripe):
    """Its card refund arrives as charge.refunded: counting both would count it twice."""
    note = load_fixture("stripe", "credit_note_created")
    note["api_version"] = "2024-06-20"
    post_stripe(note)
    post_stripe(charge_refunded(1, cumulative=50000))
    assert state().refunded_minor == 60000


def test_from_basil_on_a_charge_names_no_invoice_and_is_ignored(recovered, post_stripe):
    payload = charge_refunded(1, cumulative=50000)
    payload["api_version"] = "2026-06-24.dahlia"
    del payload["data"]["object"]["invoice"]
    post_stripe(payload)
    event = WebhookEvent.objects.get(event_key="evt_in_refund_0001")
    assert (event.status, event.outcome) == ("ignored", "charge_without_invoice")
    assert state().refunded_minor == 0


def test_a_refund_of_an_invoice_never_seen_failing_changes_nothing(stripe_tenant, post_stripe, recovery):
    post_stripe(paid(1, invoice="in_paid_first", paid_at=T0, created=T0))  # paid before any failure
    post_stripe(charge_refunded(1, invoice="in_paid_first", cumulative=50000))

    assert not Invoice.objects.exists() and not InvoiceRefund.objects.exists()
    assert PaidBeforeFailure.objects.count() == 1
    assert outcome_of("evt_in_refund_0001") == "noop_refund_unknown_invoice"


def test_a_refund_of_an_open_invoice_changes_nothing(stripe_tenant, post_stripe, recovery):
    post_stripe(failed(1))
    post_stripe(charge_refunded(1, cumulative=50000))
    assert (state().state, state().refunded_minor) == ("failed", 0)
    assert outcome_of("evt_in_refund_0001") == "noop_refund_not_recovered"


# --- voided --------------------------------------------------------------------------------

def test_invoice_voided_moves_an_open_invoice_to_voided(stripe_tenant, post_stripe, recovery):
    post_stripe(failed(1))
    post_stripe(load_fixture("stripe", "invoice_voided"))

    invoice = state()
    assert invoice.state == "voided" and invoice.closed_at == at(1782000000)  # status_transitions.voided_at
    assert invoice.state not in Invoice.REPORTED_STATES and not invoice.is_open
    last = InvoiceTransition.objects.filter(invoice=invoice).order_by("id").last()
    assert (last.from_state, last.to_state, last.cause, last.occurred_at) == (
        "failed", "voided", "invoice_voided", at(1782000000))
    assert WebhookEvent.objects.get(event_type="invoice.voided").outcome == "voided"


def test_a_void_after_recovery_leaves_the_recovery_and_is_audited(recovered, post_stripe):
    post_stripe(load_fixture("stripe", "invoice_voided"))
    assert state().state == "recovered"
    assert WebhookEvent.objects.get(event_type="invoice.voided").outcome == "noop_voided_noop"
    audit = AuditEvent.objects.get(event="ledger.invoice.void_ignored")
    assert audit.detail["reason"] == "void_of_closed_invoice"


def test_a_void_of_an_unknown_invoice_stores_nothing(stripe_tenant, post_stripe, recovery):
    post_stripe(load_fixture("stripe", "invoice_voided"))
    assert not Invoice.objects.exists()
    assert WebhookEvent.objects.get().outcome == "noop_voided_unknown"


# --- currency ------------------------------------------------------------------------------

def test_a_jpy_payment_on_a_usd_invoice_is_refused_and_the_invoice_stays_open(stripe_tenant, post_stripe,
                                                                              recovery):
    post_stripe(failed(1, amount=4500))
    post_stripe(paid(1, paid_at=T0 + 3600, created=T0 + 3600, currency="jpy", amount=4500))

    invoice = state()
    assert (invoice.state, invoice.recovered_minor, invoice.recovered_at) == ("failed", 0, None)
    assert outcome_of("evt_in_paid_0001") == "refused_currency_mismatch"
    [row] = LedgerInconsistency.objects.all()
    assert (row.kind, row.invoice_id, row.expected_currency, row.received_currency, row.amount_minor,
            row.occurred_at, row.external_invoice_id) == (
        "currency_mismatch", invoice.pk, "USD", "JPY", 4500, at(T0 + 3600), INVOICE)
    audit = AuditEvent.objects.get(event="ledger.invoice.inconsistency")
    assert audit.detail["kind"] == "currency_mismatch" and audit.detail["cause"] == "payment"

    post_stripe(paid(2, paid_at=T0 + 7200, created=T0 + 7200, amount=4500))  # the real USD payment
    assert (state().state, state().recovered_minor) == ("recovered", 4500)


def test_a_refund_in_another_currency_is_refused(recovered, post_stripe):
    payload = charge_refunded(1, cumulative=50000)
    payload["data"]["object"]["currency"] = "eur"
    post_stripe(payload)
    assert state().refunded_minor == 0
    assert outcome_of("evt_in_refund_0001") == "refused_currency_mismatch"
    assert LedgerInconsistency.objects.get().received_currency == "EUR"


def test_a_malformed_refund_event_fails_alone_and_changes_nothing(recovered, post_stripe):
    note = load_fixture("stripe", "credit_note_created")
    note["data"]["object"]["invoice"] = None
    assert post_stripe(note).status_code == 200  # acknowledged: the raw event is stored first
    event = WebhookEvent.objects.get(event_type="credit_note.created")
    assert event.status == "failed" and "invoice_missing" in event.error
    assert state().refunded_minor == 0 and not InvoiceRefund.objects.exists()


def test_a_bad_signature_on_a_refund_stores_nothing(recovered, post_stripe):
    response = post_stripe(charge_refunded(1, cumulative=50000), secret="whsec_wrong")
    assert (response.status_code, response.json()["error"]) == (400, "signature_mismatch")
    assert not WebhookEvent.objects.filter(event_type="charge.refunded").exists()
