"""gdpr_export and gdpr_erase for long-standing customers (issue 30): a subject with more
invoices than SQLite takes terms in one expression (the old one-term-per-identifier search
failed with "Expression tree is too large"), and every customer of the demo tenant."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from approvals.models import ApprovalRequest, EmailSend
from dunning.models import Draft
from integrations.models import WebhookEvent
from ledger.demo import demo_customers
from ledger.models import Customer, Invoice
from operations.tests.factories import person
from operations.tests.test_gdpr import every_text_value, traces
from operations.tests.test_gdpr_identifiers import found, identifiers_of
from operations.tests.volume import long_history, other_customers
from reconciliation.models import OrderRow

pytestmark = pytest.mark.django_db
LONG = 1500  # past the 1,000 terms SQLite takes in one expression


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def histories(tenant):  # type: ignore[no-untyped-def]
    subject, bystander = person("gdpr"), person("bystander")
    long_history(tenant, subject, invoices=LONG)
    long_history(tenant, bystander, invoices=40)
    other_customers(tenant, invoices=300)
    return subject, bystander


def bystander_state(who) -> list:  # type: ignore[no-untyped-def]
    customer = Customer.objects.get(external_id=who.external_id)
    return [
        (customer.name, customer.email, customer.plan),
        sorted(Invoice.objects.filter(customer=customer).values_list("external_invoice_id", "hosted_invoice_url")),
        sorted(Draft.objects.filter(invoice__customer=customer).values_list("body", flat=True)),
        sorted(bytes(b) for b in WebhookEvent.objects.filter(event_key__contains=who.external_id)
               .values_list("body", flat=True)),
        sorted(OrderRow.objects.filter(order_id__contains=who.external_id)
               .values_list("order_id", "customer_email_hash")),
    ]


def test_a_long_history_is_exported_whole(histories, tmp_path):
    subject, bystander = histories
    output = tmp_path / "export.json"
    run("gdpr_export", "--tenant", "acme", "--email", subject.email, "--output", str(output))
    document = json.loads(output.read_text())
    rows = document["records"]
    assert len(rows["ledger.Invoice"]) == LONG
    for label in ("ledger.InvoiceTransition", "decisions.DecisionRecord", "dunning.Draft",
                  "approvals.ApprovalRequest", "approvals.EmailSend", "reconciliation.OrderRow"):
        assert len(rows[label]) == LONG, label
    assert len(document["mentions"]["integrations.WebhookEvent"]) == LONG
    assert {r["external_invoice_id"] for r in rows["ledger.Invoice"]} == {
        f"in_{subject.external_id}_{n:06d}" for n in range(LONG)}
    text = output.read_text()
    assert bystander.email not in text and bystander.external_id not in text and "other0@" not in text


def test_a_long_history_is_erased_everywhere_and_nobody_else_is_touched(histories):
    subject, bystander = histories
    terms = [*subject.pii_terms, subject.external_id]
    # Every identifier but the invoice ids, and every 25th of those (the scan is a substring
    # search of every value of every table per identifier: all 1,500 would take minutes).
    identifiers = {i for i in identifiers_of(subject) if not i.startswith("in_")}
    identifiers |= {f"in_{subject.external_id}_{n:06d}" for n in range(0, LONG, 25)}
    identifiers |= {f"ord_{subject.external_id}_000001", f"msg_in_{subject.external_id}"}
    assert traces(terms) and len(found(identifiers)) > 10
    kept = bystander_state(bystander)
    figures = list(Invoice.objects.order_by("pk").values_list("amount_minor", "state", "currency"))

    output = run("gdpr_erase", "--tenant", "acme", "--customer-id", subject.external_id)

    assert traces(terms) == []
    assert found(identifiers) == []
    assert bystander_state(bystander) == kept
    assert list(Invoice.objects.order_by("pk").values_list("amount_minor", "state", "currency")) == figures
    for line in (f"ledger.Invoice: {LONG}", f"approvals.EmailSend: {LONG}", f"integrations.WebhookEvent: {LONG}",
                 f"reconciliation.OrderRow: {LONG}"):
        assert line in output
    # Hashed consistently: an erased webhook body still joins its (hashed) invoice.
    event = WebhookEvent.objects.exclude(event_key__contains=bystander.external_id).order_by("pk").first()
    body = json.loads(bytes(event.body))
    assert Invoice.objects.filter(external_invoice_id=body["data"]["object"]["id"]).exists()
    assert EmailSend.objects.filter(status="sent").count() == LONG + 40
    assert ApprovalRequest.objects.filter(note="").count() == LONG


def test_a_long_history_dry_run_changes_nothing(histories):
    subject, _ = histories
    before = sorted(every_text_value())
    output = run("gdpr_erase", "--tenant", "acme", "--email", subject.email, "--dry-run")
    assert "would change" in output and f"ledger.Invoice: {LONG}" in output
    assert sorted(every_text_value()) == before


@override_settings(PAYPILOT_DEMO_TENANT="demo")
def test_every_demo_customer_is_exported_and_erased(tmp_path):
    call_command("demo_setup", stdout=StringIO())
    people = [(c.external_id, c.name, c.email) for c in demo_customers()]
    for n, (external_id, name, email) in enumerate(people):
        output = tmp_path / f"{external_id}.json"
        run("gdpr_export", "--tenant", "demo", "--email", email, "--output", str(output))
        document = json.loads(output.read_text())
        assert document["records"]["ledger.Customer"][0]["name"] == name
        invoices = Invoice.objects.filter(customer__external_id=external_id, customer__tenant__slug="demo")
        assert len(document["records"].get("ledger.Invoice", [])) == invoices.count()

        run("gdpr_erase", "--tenant", "demo", "--email", email)

        assert traces([name, email]) == []
        for _, other_name, other_email in people[n + 1:]:  # the customers not yet erased keep everything
            assert Customer.objects.filter(name=other_name, email=other_email).exists()
            assert {t for t, _ in traces([other_email])} >= {"ledger_customer"}
