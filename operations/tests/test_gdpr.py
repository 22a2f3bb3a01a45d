"""gdpr_export and gdpr_erase over a subject with rows in every app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from approvals.models import DraftEdit, EmailSend
from ledger.models import Customer, Invoice
from ledger.selectors import report_build
from operations.gdpr import subject_hash
from operations.tests.factories import person
from operations.tests.gdpr_setup import Demo, demo_subject
from paypilot.models import AuditEvent
from paypilot.services import tenant_create

pytestmark = pytest.mark.django_db
NOW = datetime(2031, 1, 1, tzinfo=UTC)


@pytest.fixture
def demo(tenant, settings, django_capture_on_commit_callbacks) -> Demo:
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["*"]
    return demo_subject(tenant, person("gdpr"), tag="gdpr", capture_on_commit=django_capture_on_commit_callbacks)


@pytest.fixture
def bystanders(tenant, settings, django_capture_on_commit_callbacks) -> list[Demo]:
    """Another customer of the same tenant and one of another tenant: never touched."""
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["*"]
    other = tenant_create(slug="other", name="Other")
    return [
        demo_subject(tenant, person("bystander"), tag="by", capture_on_commit=django_capture_on_commit_callbacks),
        demo_subject(other, person("elsewhere"), tag="el", capture_on_commit=django_capture_on_commit_callbacks),
    ]


def every_text_value() -> Iterator[tuple[str, str]]:
    """(table, text) for every text, JSON and binary value of every table in the database."""
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                for value in row:
                    if isinstance(value, (bytes, memoryview)):
                        value = bytes(value).decode("utf-8", "replace")
                    elif isinstance(value, (dict, list)):
                        value = json.dumps(value, ensure_ascii=False)
                    if isinstance(value, str) and value:
                        yield table, value


def traces(terms: list[str]) -> list[tuple[str, str]]:
    lowered = [t.lower() for t in terms]
    return [
        (table, term) for table, value in every_text_value() for term in lowered if term in value.lower()
    ]


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_the_demo_subject_really_is_everywhere(demo):
    found = {table for table, _ in traces([demo.person.name])}
    assert {"ledger_customer", "integrations_webhookevent", "approvals_approvalrequest", "dunning_draft",
            "dunning_idempotencyrecord", "approvals_draftedit"} <= found
    assert EmailSend.objects.filter(customer=demo.customer, status="sent").exists()
    assert DraftEdit.objects.filter(approval=demo.approval).exists()


def test_export_holds_their_records_and_not_others(demo, bystanders, tmp_path):
    output = tmp_path / "export.json"
    run("gdpr_export", "--tenant", "acme", "--customer-id", demo.person.external_id, "--output", str(output))
    document = json.loads(output.read_text())
    rows = document["records"]
    assert rows["ledger.Customer"][0]["email"] == demo.person.email
    assert {r["external_invoice_id"] for r in rows["ledger.Invoice"]} == {"in_gdpr_1"}
    for label in ("ledger.InvoiceTransition", "dunning.Draft", "approvals.ApprovalRequest",
                  "approvals.EmailSend", "approvals.DraftEdit", "decisions.DecisionRecord"):
        assert rows.get(label), label
    events = document["mentions"]["integrations.WebhookEvent"]
    assert [e["event_key"] for e in events] == ["evt_gdpr_1"]
    assert demo.person.name in events[0]["body"]
    text = output.read_text()
    assert all(p.name not in text for p in (b.person for b in bystanders))
    assert oct(output.stat().st_mode & 0o777) == "0o600"
    audit = AuditEvent.objects.get(event="operations.gdpr.exported")
    assert audit.detail["subject_hash"] == subject_hash(demo.tenant, demo.person.external_id)


def test_erase_leaves_no_trace_keeps_figures_and_audits(demo, bystanders):
    terms = [*demo.person.pii_terms, demo.person.external_id]
    assert traces(terms)
    report_before = report_build(tenant=demo.tenant, now=NOW)
    invoices_before = list(Invoice.objects.order_by("pk").values("amount_minor", "state", "arm", "currency"))

    output = run("gdpr_erase", "--tenant", "acme", "--customer-id", demo.person.external_id)

    assert traces(terms) == []
    assert report_build(tenant=demo.tenant, now=NOW) == report_before
    assert list(Invoice.objects.order_by("pk").values("amount_minor", "state", "arm", "currency")) == invoices_before
    for bystander in bystanders:  # other people keep their data
        assert Customer.objects.filter(email=bystander.person.email, name=bystander.person.name).exists()
        assert {t for t, _ in traces([bystander.person.note])} >= {"integrations_webhookevent", "ledger_customer"}
    audit = AuditEvent.objects.get(event="operations.gdpr.erased")
    assert audit.tenant == demo.tenant
    assert audit.detail["subject_hash"] == subject_hash(demo.tenant, demo.person.external_id)
    assert audit.detail["counts"]["ledger.Customer"] == 1
    assert demo.person.external_id not in json.dumps(audit.detail)
    assert "ledger.Customer: 1" in output and "integrations.WebhookEvent: 1" in output
    # The webhook body keeps its shape and amounts.
    body = json.loads(bytes(type(demo.event).objects.get(pk=demo.event.pk).body))
    assert body["data"]["object"]["amount_due"] == json.loads(bytes(demo.event.body))["data"]["object"]["amount_due"]


def test_erase_by_email_and_the_audit_event_is_written_first(demo):
    run("gdpr_erase", "--tenant", "acme", "--email", demo.person.email.upper())
    erased = AuditEvent.objects.get(event="operations.gdpr.erased")
    # Nothing the erasure touched is older than its audit event: it came first.
    assert not AuditEvent.objects.filter(event="operations.gdpr.erased", pk__gt=erased.pk).exists()
    assert erased.detail["subject_hash"] == subject_hash(demo.tenant, demo.person.email)
    assert traces([demo.person.email]) == []


def test_dry_run_changes_nothing(demo):
    before = sorted(every_text_value())
    audits = AuditEvent.objects.count()
    output = run("gdpr_erase", "--tenant", "acme", "--customer-id", demo.person.external_id, "--dry-run")
    assert "would change" in output and "ledger.Customer: 1" in output
    assert sorted(every_text_value()) == before
    assert AuditEvent.objects.count() == audits


def test_unknown_subject_and_tenant_are_refused(demo):
    with pytest.raises(CommandError, match="no customer"):
        run("gdpr_erase", "--tenant", "acme", "--customer-id", "cus_nobody")
    with pytest.raises(CommandError, match="no tenant"):
        run("gdpr_export", "--tenant", "nope", "--email", demo.person.email)


def test_erase_hashes_the_invoice_id_on_refunds_and_inconsistencies(demo):
    from ledger.models import InvoiceRefund, LedgerInconsistency
    from ledger.services import invoice_record_payment, invoice_record_refund

    invoice = Invoice.objects.get(customer=demo.customer)
    original = invoice.external_invoice_id
    key = {"tenant": demo.tenant, "provider": invoice.provider, "external_invoice_id": original}
    invoice_record_payment(**key, amount_paid_minor=4500, currency="jpy")  # refused: an inconsistency
    if invoice.state in Invoice.OPEN_STATES:
        invoice_record_payment(**key, amount_paid_minor=invoice.amount_minor, currency=invoice.currency)
    invoice_record_refund(**key, refund_ref="re_subject_1", currency=invoice.currency, amount_minor=100)

    run("gdpr_erase", "--tenant", "acme", "--customer-id", demo.person.external_id)

    invoice.refresh_from_db()
    row = LedgerInconsistency.objects.get()
    assert row.external_invoice_id == invoice.external_invoice_id != original  # hashed consistently
    assert (row.kind, row.amount_minor, row.received_currency) == ("currency_mismatch", 4500, "JPY")
    refund = InvoiceRefund.objects.get()
    assert refund.refund_ref != "re_subject_1" and refund.amount_minor == 100
    assert invoice.refunded_minor == 100  # figures kept
