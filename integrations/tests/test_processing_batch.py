"""Batched processing: one task applies the received events queued behind its own, with the
same results, in the same order, as applying them one by one."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals.models import ApprovalRequest
from decisions.models import DecisionRecord
from dunning.models import Draft
from integrations.models import WebhookEvent
from integrations.providers import adapter
from integrations.services import processing, webhook_event_process
from integrations.services.processing import ProcessingFailed
from integrations.tests.conftest import body_of, load_fixture
from ledger.models import Customer, Invoice, InvoiceRefund, InvoiceTransition, LedgerInconsistency, PaidBeforeFailure
from paypilot.models import AuditEvent, Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no event remembered as processed by this process."""
    monkeypatch.setattr(processing, "_processed_here", {})


def failed(n: int, *, invoice: str = "", customer: str = "", created: int | None = None) -> dict[str, Any]:
    """The documented invoice.payment_failed fixture with its own event, invoice and customer ids."""
    payload = copy.deepcopy(load_fixture("stripe", "invoice_payment_failed"))
    payload["id"] = f"evt_batch_{n:04d}"
    if created is not None:
        payload["created"] = created
    invoice = invoice or f"in_batch_{n:04d}"
    payload["data"]["object"]["id"] = invoice
    payload["data"]["object"]["customer"] = customer or f"cus_batch_{n:04d}"
    return payload


def paid(n: int, *, invoice: str, currency: str = "usd") -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("stripe", "invoice_paid"))
    payload["id"] = f"evt_batch_{n:04d}"
    payload["data"]["object"]["id"] = invoice
    payload["data"]["object"]["currency"] = currency
    return payload


def refunded(n: int, *, invoice: str, cumulative: int) -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("stripe", "charge_refunded_legacy"))
    payload["id"] = f"evt_batch_{n:04d}"
    payload["created"] += n
    payload["data"]["object"].update(id=f"ch_{invoice}", invoice=invoice, amount_refunded=cumulative)
    return payload


def voided(n: int, *, invoice: str) -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("stripe", "invoice_voided"))
    payload["id"] = f"evt_batch_{n:04d}"
    payload["data"]["object"]["id"] = invoice
    return payload


def store(tenant: Tenant, payloads: list[dict[str, Any]]) -> list[int]:
    """Store deliveries as the inbox does, without enqueuing them (the test runs the task)."""
    ids = []
    module = adapter("stripe")
    for payload in payloads:
        body = body_of(payload)
        env = module.envelope(body=body, headers={})
        ids.append(WebhookEvent.objects.create(
            tenant=tenant, provider="stripe", event_key=env.event_key, event_type=env.event_type, body=body,
            headers={}, resource_key=env.resource_key, resource_version=env.resource_version,
        ).pk)
    return ids


def outcomes(tenant: Tenant | None = None) -> list[tuple[str, str, int]]:
    rows = WebhookEvent.objects.filter(tenant=tenant) if tenant else WebhookEvent.objects.all()
    return list(rows.order_by("pk").values_list("status", "outcome", "attempts"))


def snapshot(tenant: Tenant) -> dict[str, Any]:
    """What one tenant's events left behind, without ids or processing times (provider times
    are the same in both runs and compared), to compare two runs."""
    mine = {"tenant": tenant}
    return {
        "events": [(status, outcome) for status, outcome, _ in outcomes(tenant)],
        "invoices": sorted(Invoice.objects.filter(**mine).values_list(
            "external_invoice_id", "state", "attempt_count", "arm", "failed_at", "recovered_at", "closed_at",
            "recovered_minor", "refunded_minor")),
        "transitions": sorted(InvoiceTransition.objects.filter(**mine).values_list(
            "invoice__external_invoice_id", "from_state", "to_state", "cause", "occurred_at")),
        "refunds": sorted(InvoiceRefund.objects.filter(**mine).values_list(
            "invoice__external_invoice_id", "refund_ref", "amount_minor", "currency", "occurred_at")),
        "inconsistencies": sorted(LedgerInconsistency.objects.filter(**mine).values_list(
            "external_invoice_id", "kind", "expected_currency", "received_currency", "amount_minor")),
        "customers": sorted(Customer.objects.filter(**mine).values_list("external_id", "name", "email")),
        "decisions": sorted(DecisionRecord.objects.filter(**mine).values_list("invoice_ref", "rule_fired", "action")),
        "drafts": sorted(Draft.objects.filter(**mine).values_list("invoice__external_invoice_id", "subject",
                                                                  "locale")),
        "approvals": sorted(ApprovalRequest.objects.filter(**mine).values_list(
            "invoice__external_invoice_id", "status", "high_value", "annual_value_minor")),
        "paid_markers": sorted(PaidBeforeFailure.objects.filter(**mine).values_list("external_invoice_id",
                                                                                     flat=True)),
        "audit": sorted(AuditEvent.objects.filter(**mine).exclude(event="paypilot.tenant.created")
                        .values_list("event", flat=True)),
    }


def mixed_deliveries() -> list[dict[str, Any]]:
    """Failures of distinct invoices, then the orders that must not be reordered: a failure
    and its payment, a payment before its failure, two failures of one invoice, and two
    invoices of one customer; then the ledger inputs of issue 12: an older failure delivered
    after a newer one, refunds (two partials, a repeated total, one above the recovered
    amount), a void, a payment in another currency, each between failures of other invoices."""
    return [
        failed(1), failed(2), failed(3),
        failed(4, invoice="in_paid_after"), paid(5, invoice="in_paid_after"),
        paid(6, invoice="in_paid_first"), failed(7, invoice="in_paid_first"),
        failed(8, invoice="in_twice"), failed(9, invoice="in_twice"),
        failed(10, customer="cus_shared"), failed(11, customer="cus_shared"),
        failed(12), failed(13),
        failed(14, invoice="in_backlog", created=1_781_000_000),
        failed(15, invoice="in_backlog", created=1_780_000_000),
        failed(16, invoice="in_refunded"), paid(17, invoice="in_refunded"), failed(18),
        refunded(19, invoice="in_refunded", cumulative=50000), refunded(20, invoice="in_refunded", cumulative=120000),
        refunded(21, invoice="in_refunded", cumulative=120000), refunded(22, invoice="in_refunded", cumulative=900000),
        refunded(23, invoice="in_paid_first", cumulative=100),
        failed(24, invoice="in_voided"), failed(25), voided(26, invoice="in_voided"),
        failed(27, invoice="in_jpy"), paid(28, invoice="in_jpy", currency="jpy"), failed(29), failed(30),
    ]


def test_one_task_applies_the_received_events_behind_it_in_one_batch(stripe_tenant,
                                                                    django_capture_on_commit_callbacks):
    ids = store(stripe_tenant, [failed(n) for n in range(1, 8)])

    with django_capture_on_commit_callbacks(execute=True):  # the batch's commit
        assert webhook_event_process(event_id=ids[0]) == "processed"

    assert outcomes() == [("processed", "draft_opened", 1)] * 7
    for model in (Invoice, InvoiceTransition, Customer, DecisionRecord, Draft, ApprovalRequest):
        assert model.objects.count() == 7, model.__name__
    # the other events' own tasks find them done, in this process without a query
    with CaptureQueriesContext(connection) as queries:
        assert [webhook_event_process(event_id=pk) for pk in ids[1:]] == ["processed"] * 6
    assert len(queries) == 0
    assert outcomes() == [("processed", "draft_opened", 1)] * 7


def test_a_batch_leaves_exactly_what_one_by_one_processing_leaves(stripe_tenant, settings):
    from integrations.services import credential_set
    from integrations.tests.conftest import STRIPE_SECRET
    from paypilot.services import tenant_create

    settings.PAYPILOT_WEBHOOK_BATCH = 1
    for pk in store(stripe_tenant, mixed_deliveries()):
        webhook_event_process(event_id=pk)
    one_by_one = snapshot(stripe_tenant)
    assert ("processed", "noop_already_paid") in one_by_one["events"]  # the orders above really matter
    assert ("processed", "recovered") in one_by_one["events"]
    for outcome in ("refunded", "noop_refund_duplicate", "refunded_capped", "noop_refund_unknown_invoice",
                    "voided", "refused_currency_mismatch"):
        assert ("processed", outcome) in one_by_one["events"], outcome
    assert len(one_by_one["refunds"]) == 3 and len(one_by_one["inconsistencies"]) == 2
    backlog = next(row for row in one_by_one["invoices"] if row[0] == "in_backlog")
    assert backlog[4].timestamp() == 1_780_000_000  # the older failure, delivered second, is the first

    settings.PAYPILOT_WEBHOOK_BATCH = 50
    batched = tenant_create(slug="batched", name="Acme Ltd")
    credential_set(tenant=batched, provider="stripe", secret=STRIPE_SECRET)
    ids = store(batched, mixed_deliveries())
    webhook_event_process(event_id=ids[0])  # the first task takes every event behind it

    assert snapshot(batched) == one_by_one
    assert all(attempts == 1 for _, _, attempts in outcomes(batched))


def test_a_failing_event_rolls_its_batch_back_and_costs_only_itself(stripe_tenant, monkeypatch):
    ids = store(stripe_tenant, [failed(1), failed(2, invoice="in_poison"), failed(3)])
    translate = processing._translate

    def poisoned(event, credentials):  # type: ignore[no-untyped-def]
        if b"in_poison" in bytes(event.body):
            raise RuntimeError("cannot translate")
        return translate(event, credentials)

    monkeypatch.setattr(processing, "_translate", poisoned)

    assert webhook_event_process(event_id=ids[0]) == "processed"

    assert [(s, a) for s, _, a in outcomes()] == [("processed", 1), ("failed", 1), ("processed", 1)]
    assert "RuntimeError: cannot translate" in WebhookEvent.objects.get(pk=ids[1]).error
    assert sorted(Invoice.objects.values_list("external_invoice_id", flat=True)) == ["in_batch_0001",
                                                                                    "in_batch_0003"]
    assert Draft.objects.count() == 2 and ApprovalRequest.objects.count() == 2


def test_the_task_of_the_failing_event_still_raises(stripe_tenant, monkeypatch):
    ids = store(stripe_tenant, [failed(1), failed(2)])
    monkeypatch.setattr(processing, "_translate", lambda event, credentials: (_ for _ in ()).throw(
        RuntimeError("down")))

    with pytest.raises(ProcessingFailed):
        webhook_event_process(event_id=ids[0])

    assert [(s, a) for s, _, a in outcomes()] == [("failed", 1), ("failed", 1)]
    assert not Invoice.objects.exists()


def test_a_batch_takes_only_received_events_of_the_same_tenant(stripe_tenant, settings):
    from paypilot.services import tenant_create

    other = tenant_create(slug="other", name="Other Ltd")
    mine = store(stripe_tenant, [failed(1), failed(2)])
    theirs = store(other, [failed(3)])
    WebhookEvent.objects.filter(pk=mine[1]).update(status="failed", attempts=1)

    webhook_event_process(event_id=mine[0])

    statuses = dict(WebhookEvent.objects.values_list("pk", "status"))
    assert statuses == {mine[0]: "processed", mine[1]: "failed", theirs[0]: "received"}


def test_a_batch_takes_only_events_that_arrived_after_its_own(stripe_tenant):
    ids = store(stripe_tenant, [failed(n) for n in range(1, 5)])

    webhook_event_process(event_id=ids[2])

    assert [s for s, _, _ in outcomes()] == ["received", "received", "processed", "processed"]


def test_batch_size_is_bounded_by_the_setting(stripe_tenant, settings):
    settings.PAYPILOT_WEBHOOK_BATCH = 3
    ids = store(stripe_tenant, [failed(n) for n in range(1, 6)])

    webhook_event_process(event_id=ids[0])

    assert [s for s, _, _ in outcomes()] == ["processed"] * 3 + ["received"] * 2


def test_remembered_ids_are_bounded(monkeypatch):
    monkeypatch.setattr(processing, "_PROCESSED_HERE_MAX", 3)
    processing._remember_processed([1, 2, 3, 4, 5])
    assert list(processing._processed_here) == [3, 4, 5]


def test_a_rolled_back_batch_is_not_remembered(stripe_tenant, monkeypatch):
    """The memo is filled on commit only: an event whose batch rolled back is read again."""
    from django.db import transaction

    ids = store(stripe_tenant, [failed(1), failed(2)])
    with pytest.raises(RuntimeError), transaction.atomic():
        webhook_event_process(event_id=ids[0])
        assert len(transaction.get_connection().run_on_commit) == 1  # queued for the commit...
        raise RuntimeError("the enclosing transaction fails")
    assert processing._processed_here == {}  # ...and dropped with the rollback
    assert webhook_event_process(event_id=ids[1]) == "processed"
    assert list(Invoice.objects.values_list("external_invoice_id", flat=True)) == ["in_batch_0002"]  # really applied


def test_one_event_per_transaction_while_model_drafting_is_on(settings):
    settings.PAYPILOT_WEBHOOK_BATCH = 50
    settings.PAYPILOT_LLM_DRAFT, settings.OPENAI_API_KEY = True, "sk-test-not-used"
    assert processing.batch_size() == 1
    settings.PAYPILOT_LLM_DRAFT = False
    assert processing.batch_size() == 50
