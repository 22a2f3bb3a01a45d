"""Drafts follow their invoice: a webhook that closes an invoice (paid, cancelled, exhausted,
voided) or drafts it again withdraws its pending approval request in the same transaction,
whichever order the deliveries arrive in, one by one or in a batch (issue 16)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from approvals.models import ApprovalRequest
from integrations.services import processing, webhook_event_process
from integrations.tests.conftest import load_fixture
from integrations.tests.test_processing_batch import failed, paid, store, voided
from ledger.models import Invoice
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db

Status = ApprovalRequest.Status
Reason = ApprovalRequest.WithdrawnReason


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processing, "_processed_here", {})


def cancelled(n: int) -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("stripe", "customer_subscription_deleted"))
    payload["id"] = f"evt_batch_{n:04d}"
    return payload


def uncollectible(n: int, *, invoice: str) -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("stripe", "invoice_marked_uncollectible"))
    payload["id"] = f"evt_batch_{n:04d}"
    payload["data"]["object"]["id"] = invoice
    return payload


def statuses(invoice: str) -> list[tuple[str, str]]:
    return list(ApprovalRequest.objects.filter(invoice__external_invoice_id=invoice).order_by("pk")
                .values_list("status", "withdrawn_reason"))


def run_one_by_one(tenant, payloads: list[dict[str, Any]], settings) -> list[str]:  # type: ignore[no-untyped-def]
    settings.PAYPILOT_WEBHOOK_BATCH = 1
    return [webhook_event_process(event_id=pk) for pk in store(tenant, payloads)]


def run_as_one_batch(tenant, payloads: list[dict[str, Any]], settings) -> None:  # type: ignore[no-untyped-def]
    settings.PAYPILOT_WEBHOOK_BATCH = 50
    ids = store(tenant, payloads)
    webhook_event_process(event_id=ids[0])
    assert not WebhookEventLeft(ids), "the batch took every event"


def WebhookEventLeft(ids: list[int]) -> list[int]:  # noqa: N802 - reads as a phrase at the call site
    from integrations.models import WebhookEvent
    return list(WebhookEvent.objects.filter(pk__in=ids, status="received").values_list("pk", flat=True))


@pytest.mark.parametrize("runner", [run_one_by_one, run_as_one_batch], ids=["one_by_one", "batched"])
def test_failure_then_payment_withdraws_the_pending_request(stripe_tenant, settings, runner):
    runner(stripe_tenant, [failed(1, invoice="in_paid"), paid(2, invoice="in_paid")], settings)

    assert Invoice.objects.get(external_invoice_id="in_paid").state == Invoice.State.RECOVERED
    assert statuses("in_paid") == [(Status.WITHDRAWN, Reason.INVOICE_PAID)]
    assert not ApprovalRequest.objects.filter(status=Status.PENDING).exists()
    approval = ApprovalRequest.objects.get()
    assert approval.decided_at is not None and approval.decided_by_id is None
    event = AuditEvent.objects.get(event="approvals.draft.withdrawn")
    assert event.detail == {"approval": approval.pk, "draft": approval.draft_id, "invoice_id": approval.invoice_id,
                            "reason": "invoice_paid", "status_from": "pending"}


@pytest.mark.parametrize("runner", [run_one_by_one, run_as_one_batch], ids=["one_by_one", "batched"])
def test_payment_before_failure_never_leaves_a_pending_request(stripe_tenant, settings, runner):
    runner(stripe_tenant, [paid(1, invoice="in_paid_first"), failed(2, invoice="in_paid_first")], settings)

    assert not ApprovalRequest.objects.exists()  # nothing drafted for an invoice already paid
    assert not AuditEvent.objects.filter(event="approvals.draft.withdrawn").exists()


def test_webhook_order_both_ways_over_http(stripe_tenant, post_stripe, settings):
    """The real inbox (signed deliveries, the processing task run by the ORM broker)."""
    settings.PAYPILOT_WEBHOOK_BATCH = 1
    assert post_stripe(failed(1, invoice="in_a")).status_code == 200
    assert statuses("in_a") == [(Status.PENDING, "")]
    assert post_stripe(paid(2, invoice="in_a")).status_code == 200
    assert statuses("in_a") == [(Status.WITHDRAWN, Reason.INVOICE_PAID)]

    assert post_stripe(paid(3, invoice="in_b")).status_code == 200
    assert post_stripe(failed(4, invoice="in_b")).status_code == 200
    assert statuses("in_b") == []
    assert not ApprovalRequest.objects.filter(status=Status.PENDING).exists()


@pytest.mark.parametrize("runner", [run_one_by_one, run_as_one_batch], ids=["one_by_one", "batched"])
def test_each_way_an_invoice_closes_names_its_reason(stripe_tenant, settings, runner):
    sub = load_fixture("stripe", "invoice_payment_failed")["data"]["object"]["parent"]["subscription_details"]
    assert sub["subscription"] == cancelled(0)["data"]["object"]["id"]  # the fixtures belong together
    runner(stripe_tenant, [
        failed(1, invoice="in_cancelled"), failed(2, invoice="in_exhausted"), failed(3, invoice="in_voided"),
        cancelled(4), uncollectible(5, invoice="in_exhausted"), voided(6, invoice="in_voided"),
    ], settings)

    assert statuses("in_cancelled") == [(Status.WITHDRAWN, Reason.INVOICE_CANCELLED)]
    # every fixture failure is of the cancelled subscription: the cancellation closed them all first
    assert {Invoice.objects.get(external_invoice_id=ext).state for ext in ("in_exhausted", "in_voided")} == {
        Invoice.State.CHURNED}
    assert statuses("in_exhausted")[0][0] == Status.WITHDRAWN
    assert AuditEvent.objects.filter(event="approvals.draft.withdrawn").count() == 3


@pytest.mark.parametrize("runner", [run_one_by_one, run_as_one_batch], ids=["one_by_one", "batched"])
def test_exhausted_and_voided_invoices_withdraw_with_their_reason(stripe_tenant, settings, runner):
    def no_subscription(payload: dict[str, Any]) -> dict[str, Any]:
        payload["data"]["object"]["parent"] = None
        payload["data"]["object"].pop("subscription", None)
        return payload

    runner(stripe_tenant, [
        no_subscription(failed(1, invoice="in_exhausted")), no_subscription(failed(2, invoice="in_voided")),
        uncollectible(3, invoice="in_exhausted"), voided(4, invoice="in_voided"),
    ], settings)

    assert Invoice.objects.get(external_invoice_id="in_exhausted").state == Invoice.State.EXHAUSTED
    assert statuses("in_exhausted") == [(Status.WITHDRAWN, Reason.INVOICE_EXHAUSTED)]
    assert statuses("in_voided") == [(Status.WITHDRAWN, Reason.INVOICE_VOIDED)]


@pytest.mark.parametrize("runner", [run_one_by_one, run_as_one_batch], ids=["one_by_one", "batched"])
def test_a_newer_draft_supersedes_the_pending_one(stripe_tenant, settings, runner):
    runner(stripe_tenant, [failed(1, invoice="in_twice"), failed(2, invoice="in_twice")], settings)

    assert statuses("in_twice") == [(Status.WITHDRAWN, Reason.SUPERSEDED), (Status.PENDING, "")]
    assert ApprovalRequest.objects.filter(status=Status.PENDING).count() == 1
