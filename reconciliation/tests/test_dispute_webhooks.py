"""Stripe's charge.dispute.* webhooks, signed with the real SDK, through the inbox into the
dispute table: one live row per dispute, updated in event order, never a second copy of a
file's dispute, audited, and on the next morning's review."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest
from django.test import Client

from integrations.models import WebhookEvent
from integrations.providers.stripe import sign
from integrations.services import credential_set
from integrations.tests.conftest import STRIPE_SECRET, body_of, load_fixture
from paypilot import disputes as seam
from paypilot.models import AuditEvent
from reconciliation.models import DisputeRow
from reconciliation.services.disputes import dispute_list
from reconciliation.services.review import morning_review
from reconciliation.tests.factories import dispute, load, order, txn

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)


@pytest.fixture
def post(tenant, client: Client):
    credential_set(tenant=tenant, provider="stripe", secret=STRIPE_SECRET)

    def _post(payload: dict[str, Any], *, secret: str = STRIPE_SECRET) -> Any:
        body = body_of(payload)
        return client.post(f"/t/{tenant.slug}/webhooks/stripe", data=body, content_type="application/json",
                           headers={"Stripe-Signature": sign(body=body, secret=secret)})

    return _post


def test_created_stores_one_live_row_audited(tenant, post) -> None:
    response = post(load_fixture("stripe", "charge_dispute_created"))

    assert response.status_code == 200
    event = WebhookEvent.objects.get()
    assert (event.status, event.outcome) == ("processed", "dispute_recorded")
    row = DisputeRow.objects.get()
    assert (row.dispute_id, row.charge_id, row.amount_minor, row.currency) == (
        "du_1QdAcmeDup0001", "ch_3QdAcme1003b", 6500, "USD")
    assert (row.reason, row.status, row.evidence_due_by) == ("duplicate", "needs_response", date(2026, 11, 18))
    assert row.file is None and row.source == "stripe_webhook" and row.line == 0
    assert row.details["network_reason_code"] == "12.6.1" and row.details["payment_intent"] == "pi_3QdAcme1003b"
    audit = AuditEvent.objects.get(event="reconciliation.dispute.created")
    assert audit.tenant == tenant and audit.detail["recon_dispute"] == row.pk
    assert audit.detail["webhook_event"] == "stripe:evt_1QdAcmeDisputeCreated"


def test_later_events_update_the_same_row_in_order(tenant, post) -> None:
    for name in ("charge_dispute_created", "charge_dispute_funds_withdrawn", "charge_dispute_updated"):
        post(load_fixture("stripe", name))
    row = DisputeRow.objects.get()
    assert row.status == "under_review" and row.details["has_evidence"] is True
    assert row.details["funds_withdrawn_minor"] == 6500 and row.details["dispute_fee_minor"] == 1500
    assert row.last_event_id == "stripe:evt_1QdAcmeDisputeUpdated"
    post(load_fixture("stripe", "charge_dispute_closed"))
    post(load_fixture("stripe", "charge_dispute_funds_reinstated"))
    row = DisputeRow.objects.get()
    assert row.status == "won" and row.details["funds_reinstated_minor"] == 6500
    assert row.details["last_event_type"] == "charge.dispute.funds_reinstated"
    assert AuditEvent.objects.filter(event="reconciliation.dispute.updated").count() == 4


def test_an_older_event_arriving_late_changes_nothing(tenant, post) -> None:
    post(load_fixture("stripe", "charge_dispute_closed"))
    post(load_fixture("stripe", "charge_dispute_created"))  # older, delivered late

    row = DisputeRow.objects.get()
    assert row.status == "won"
    late = WebhookEvent.objects.get(event_key="evt_1QdAcmeDisputeCreated")
    assert (late.status, late.outcome) == ("processed", "noop_older_dispute_event")


def test_a_same_second_event_never_reopens_a_decided_dispute(tenant, post) -> None:
    closed = load_fixture("stripe", "charge_dispute_closed")
    stale = copy.deepcopy(load_fixture("stripe", "charge_dispute_updated"))
    stale["id"], stale["created"] = "evt_sameSecond", closed["created"]
    post(closed)
    post(stale)
    assert DisputeRow.objects.get().status == "won"


def test_duplicate_delivery_is_applied_once(tenant, post) -> None:
    payload = load_fixture("stripe", "charge_dispute_created")
    post(payload)
    again = post(payload)

    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert DisputeRow.objects.count() == 1 and WebhookEvent.objects.count() == 1
    assert AuditEvent.objects.filter(event__startswith="reconciliation.dispute.").count() == 1


def test_bad_signature_stores_nothing(tenant, post) -> None:
    response = post(load_fixture("stripe", "charge_dispute_created"), secret="whsec_wrong")

    assert response.status_code in (400, 401, 403)
    assert not DisputeRow.objects.exists() and not WebhookEvent.objects.exists()


def test_a_failing_store_rolls_back_and_marks_the_event_failed(tenant, post, monkeypatch) -> None:
    def broken(**kwargs: Any) -> str:
        raise RuntimeError("disk full")

    monkeypatch.setattr(seam, "_sinks", [broken])
    post(load_fixture("stripe", "charge_dispute_created"))

    event = WebhookEvent.objects.get()
    assert event.status == "failed" and "RuntimeError" in event.error
    assert not DisputeRow.objects.exists()
    assert not AuditEvent.objects.filter(event__startswith="reconciliation.dispute.").exists()


def test_invalid_dispute_payload_is_failed_not_stored(tenant, post) -> None:
    payload = load_fixture("stripe", "charge_dispute_created")
    payload["id"] = "evt_badAmount"
    payload["data"]["object"]["amount"] = "65.00"
    post(payload)
    assert WebhookEvent.objects.get().status == "failed"
    assert not DisputeRow.objects.exists()


def test_the_file_row_and_the_live_row_are_one_dispute(tenant, post) -> None:
    load(tenant, "disputes", [dispute("du_1QdAcmeDup0001", "ch_3QdAcme1003b", 6500, "2026-11-18")])
    assert [d["status"] for d in dispute_list(tenant=tenant, as_of=AS_OF)] == ["needs_response"]
    updated = load_fixture("stripe", "charge_dispute_updated")
    post(updated)

    listed = dispute_list(tenant=tenant, as_of=AS_OF)
    assert [(d["dispute_id"], d["status"], d["source"]) for d in listed] == [
        ("du_1QdAcmeDup0001", "under_review", "stripe_webhook")]
    assert DisputeRow.objects.filter(file__isnull=False).get().status == "needs_response"  # never changed


def test_a_new_chargeback_is_on_the_next_morning_review(tenant, post) -> None:
    load(tenant, "orders", [order("A-1003", 6500, "2026-11-04", ref="ch_3QdAcme1003")])
    load(tenant, "provider", [txn("t1", "charge", 6500, "2026-11-04", charge="ch_3QdAcme1003", order_ref="A-1003"),
                              txn("t2", "charge", 6500, "2026-11-04", charge="ch_3QdAcme1003b",
                                  order_ref="A-1003", clock="12:01:00")])
    before = morning_review(tenant=tenant, as_of=AS_OF, store=True)
    assert before["disputes_due"] == []

    post(load_fixture("stripe", "charge_dispute_created"))
    after = morning_review(tenant=tenant, as_of=AS_OF)

    assert after["run"]["stored"] is False  # new inputs: computed, nothing stored
    [due] = after["disputes_due"]
    assert due["dispute_id"] == "du_1QdAcmeDup0001" and due["days_left"] == 2
    assert [b["kind"] for b in due["linked_breaks"]] == ["duplicate_capture"]
    assert any(t["linked_dispute"] == "du_1QdAcmeDup0001" and t["kind"] == "duplicate_capture"
               and "Do not refund" in t["action"] for t in after["todo"])
