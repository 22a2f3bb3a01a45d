"""retention_purge: old closed invoices go with every dependent row, open ones stay, raw
bodies are emptied after their window, a dry run changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from approvals.models import ApprovalRequest, DraftEdit, EmailSend
from decisions.models import DecisionRecord
from dunning.models import Draft
from integrations.models import WebhookEvent
from ledger.models import Customer, Invoice, InvoiceTransition
from ledger.services import invoice_record_payment
from operations.retention import months_before, retention_purge
from operations.tests.factories import person
from operations.tests.gdpr_setup import Demo, demo_subject
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def make_demo(tenant, settings, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["*"]
    settings.PAYPILOT_RETENTION_MONTHS = 12
    settings.PAYPILOT_WEBHOOK_BODY_DAYS = 30

    def _make(tag: str, *, close: bool, age: timedelta) -> Demo:
        demo = demo_subject(tenant, person(tag), tag=tag, capture_on_commit=django_capture_on_commit_callbacks)
        invoice = Invoice.objects.get(customer=demo.customer)
        if close:
            invoice_record_payment(
                tenant=tenant, provider="stripe", external_invoice_id=invoice.external_invoice_id,
                amount_paid_minor=invoice.amount_minor, currency=invoice.currency,
            )
        Invoice.objects.filter(pk=invoice.pk).update(updated_at=timezone.now() - age)
        WebhookEvent.objects.filter(pk=demo.event.pk).update(received_at=timezone.now() - age)
        return demo

    return _make


def chain(demo: Demo) -> dict[str, int]:
    invoice_ids = list(Invoice.objects.filter(customer=demo.customer).values_list("pk", flat=True))
    refs = list(Invoice.objects.filter(pk__in=invoice_ids).values_list("external_invoice_id", flat=True))
    return {
        "invoice": len(invoice_ids),
        "transitions": InvoiceTransition.objects.filter(invoice_id__in=invoice_ids).count(),
        "drafts": Draft.objects.filter(invoice_id__in=invoice_ids).count(),
        "approvals": ApprovalRequest.objects.filter(invoice_id__in=invoice_ids).count(),
        "sends": EmailSend.objects.filter(invoice_id__in=invoice_ids).count(),
        "edits": DraftEdit.objects.filter(approval__invoice_id__in=invoice_ids).count(),
        "decisions": DecisionRecord.objects.filter(invoice_ref__in=refs).count(),
    }


def audited_counts() -> dict[str, int]:
    """The counts of every batch's audit event, summed."""
    total: dict[str, int] = {}
    for audit in AuditEvent.objects.filter(event="operations.retention.purged"):
        for key, n in audit.detail["counts"].items():
            total[key] = total.get(key, 0) + n
    return total


def run(*args: str) -> str:
    out = StringIO()
    call_command("retention_purge", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_old_closed_invoice_goes_with_its_dependents_open_one_of_same_age_stays(make_demo):
    old_closed = make_demo("oldclosed", close=True, age=timedelta(days=400))
    old_open = make_demo("oldopen", close=False, age=timedelta(days=400))
    new_closed = make_demo("newclosed", close=True, age=timedelta(days=20))
    closed_before = chain(old_closed)
    assert all(closed_before.values())
    open_before, new_before = chain(old_open), chain(new_closed)

    output = run()

    assert chain(old_closed) == dict.fromkeys(open_before, 0)
    assert chain(old_open) == open_before
    assert chain(new_closed) == new_before
    assert Customer.objects.filter(pk=old_closed.customer.pk).exists()  # the customer is not an invoice
    # Raw bodies: both 400-day-old events are emptied, the 20-day-old one is kept; rows stay.
    bodies = {e.event_key: bytes(e.body) for e in WebhookEvent.objects.all()}
    assert bodies["evt_oldclosed_1"] == b"" and bodies["evt_oldopen_1"] == b""
    assert bodies["evt_newclosed_1"] != b""
    counts = audited_counts()
    assert counts["ledger.Invoice"] == 1
    assert counts["integrations.WebhookEvent.body"] == 2
    assert counts["ledger.InvoiceTransition"] == closed_before["transitions"]
    assert counts["approvals.EmailSend"] == closed_before["sends"]
    assert "purged ledger.Invoice: 1" in output


def test_dry_run_changes_nothing(make_demo):
    demo = make_demo("dry", close=True, age=timedelta(days=400))
    before = chain(demo)
    audits = AuditEvent.objects.count()
    output = run("--dry-run")
    assert "would purge ledger.Invoice: 1" in output
    assert chain(demo) == before
    assert bytes(WebhookEvent.objects.get(pk=demo.event.pk).body) != b""
    assert AuditEvent.objects.count() == audits


def test_nothing_to_do_still_audits_once(db):
    assert "purged: nothing" in run()
    assert AuditEvent.objects.filter(event="operations.retention.purged").count() == 1


def test_a_progress_line_per_batch(make_demo):
    make_demo("bar", close=True, age=timedelta(days=400))
    make_demo("bar2", close=True, age=timedelta(days=400))
    lines = run("--batch-size", "1").splitlines()
    assert lines[0].startswith("retention: invoices closed before ")
    batches = [line for line in lines if line.startswith("retention batch")]
    # two old invoices one per batch, then two old bodies one per batch
    assert batches[0].startswith("retention batch 1: invoices 1/2 (")
    assert batches[1].startswith("retention batch 2: invoices 2/2 (")
    assert batches[2].startswith("retention batch 3: integrations.WebhookEvent.body 1/2 (1 rows purged)")
    assert batches[3].startswith("retention batch 4: integrations.WebhookEvent.body 2/2 (1 rows purged)")
    assert len(batches) == 4
    assert AuditEvent.objects.filter(event="operations.retention.purged").count() == 4


def test_months_before_clamps_the_day():
    assert months_before(datetime(2026, 3, 31, 12, tzinfo=UTC), 1) == datetime(2026, 2, 28, 12, tzinfo=UTC)
    assert months_before(datetime(2026, 1, 15, tzinfo=UTC), 12) == datetime(2025, 1, 15, tzinfo=UTC)


def test_refunds_inconsistencies_and_voided_invoices_go_with_their_invoice(make_demo, tenant):
    from ledger.models import InvoiceRefund, LedgerInconsistency
    from ledger.services import invoice_record_refund, invoice_record_void

    refunded = make_demo("refunded", close=False, age=timedelta(days=0))
    invoice = Invoice.objects.get(customer=refunded.customer)
    key = {"tenant": tenant, "provider": "stripe", "external_invoice_id": invoice.external_invoice_id}
    invoice_record_payment(**key, amount_paid_minor=4500, currency="jpy")  # refused: an inconsistency
    invoice_record_payment(**key, amount_paid_minor=invoice.amount_minor, currency=invoice.currency)
    invoice_record_refund(**key, refund_ref="re_old", currency=invoice.currency, amount_minor=100)
    voided = make_demo("voided", close=False, age=timedelta(days=0))
    voided_invoice = Invoice.objects.get(customer=voided.customer)
    invoice_record_void(tenant=tenant, provider="stripe", external_invoice_id=voided_invoice.external_invoice_id)
    kept = make_demo("keptrefund", close=True, age=timedelta(days=20))
    kept_invoice = Invoice.objects.get(customer=kept.customer)
    invoice_record_refund(tenant=tenant, provider="stripe", external_invoice_id=kept_invoice.external_invoice_id,
                          refund_ref="re_kept", currency=kept_invoice.currency, amount_minor=100)
    old = timezone.now() - timedelta(days=400)
    Invoice.objects.filter(pk__in=[invoice.pk, voided_invoice.pk]).update(updated_at=old)

    retention_purge()

    assert not Invoice.objects.filter(pk__in=[invoice.pk, voided_invoice.pk]).exists()
    assert list(InvoiceRefund.objects.values_list("refund_ref", flat=True)) == ["re_kept"]
    assert not LedgerInconsistency.objects.filter(external_invoice_id=invoice.external_invoice_id).exists()
    counts = AuditEvent.objects.get(event="operations.retention.purged").detail["counts"]
    assert (counts["ledger.Invoice"], counts["ledger.InvoiceRefund"], counts["ledger.LedgerInconsistency"]) == (
        2, 1, 1)
