"""After gdpr_erase no identifier of the subject is left in any text, JSON or binary column
of any table in the app registry: not in the stored webhook bodies either (issue 18).

The subject's events are real Stripe payload shapes in which the invoice, customer and
subscription ids recur (the invoice object, its line-items URL, the invoice payment, the
subscription details), delivered through the real pipeline and followed by `invoice.paid`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import models

from integrations.models import WebhookEvent
from integrations.services import webhook_event_process
from ledger.models import Customer, Invoice
from operations.tests.factories import Person, person
from operations.tests.gdpr_setup import FIXTURES, demo_subject
from paypilot.services import tenant_create

pytestmark = pytest.mark.django_db

TEXT_KINDS = (models.CharField, models.TextField, models.JSONField, models.BinaryField)


def every_text_column() -> Iterator[tuple[str, str, str]]:
    """(model label, column, text) for every text, JSON and binary value of every model the
    app registry knows (Django's own and django-q2's included)."""
    for model in apps.get_models(include_auto_created=True):
        fields = [f for f in model._meta.concrete_fields if isinstance(f, TEXT_KINDS)]
        if not fields:
            continue
        for row in model._base_manager.values_list(*[f.attname for f in fields]).iterator():
            for f, value in zip(fields, row, strict=True):
                if isinstance(value, (bytes, memoryview)):
                    value = bytes(value).decode("utf-8", "replace")
                elif value is not None and not isinstance(value, str):
                    value = json.dumps(value, ensure_ascii=False)
                if value:
                    yield model._meta.label, f.name, value


def found(identifiers: set[str]) -> list[tuple[str, str, str]]:
    lowered = {i.lower() for i in identifiers}
    return sorted({(label, column, ident) for label, column, text in every_text_column()
                   for ident in lowered if ident in text.lower()})


def _stripe(name: str, who: Person, *, invoice_id: str, subscription_id: str, event_id: str) -> bytes:
    text = (FIXTURES / "stripe" / name).read_text()
    text = (text.replace("in_1RzQ4xAcmeRobotics", invoice_id).replace("cus_QAcme001", who.external_id)
            .replace("sub_1RAcmeScale", subscription_id).replace("billing@acmerobotics.io", who.email)
            .replace("Acme Robotics", who.name))
    payload = json.loads(text)
    payload["id"] = event_id
    return json.dumps(payload, indent=2).encode()  # pretty-printed, as a provider may send it


def deliver(tenant, who: Person, *, tag: str) -> list[WebhookEvent]:  # type: ignore[no-untyped-def]
    ids = {"invoice_id": f"in_{tag}_77", "subscription_id": f"sub_{tag}_plan"}
    events = []
    for name, event_type in (("invoice_payment_failed.json", "invoice.payment_failed"),
                             ("invoice_paid.json", "invoice.paid")):
        event = WebhookEvent.objects.create(
            tenant=tenant, provider="stripe", event_key=f"evt_{tag}_{event_type}", event_type=event_type,
            body=_stripe(name, who, event_id=f"evt_{tag}_{event_type}", **ids),
        )
        webhook_event_process(event_id=event.pk)
        event.refresh_from_db()
        assert event.status == "processed", (event_type, event.error)
        events.append(event)
    return events


def identifiers_of(who: Person) -> set[str]:
    """Every identifier of the subject the database holds: customer ids, invoice ids,
    e-mails, names (whole and each part), subscription and provider customer ids."""
    customers = Customer.objects.filter(external_id=who.external_id)
    found_ids = {who.external_id, who.email, who.name, *who.name.split()}
    for customer in customers:
        found_ids |= {customer.external_id, customer.email, customer.name}
    for invoice in Invoice.objects.filter(customer__in=customers):
        found_ids |= {invoice.external_invoice_id, invoice.subscription_id, invoice.provider_customer_id}
    return {i for i in found_ids if i}


@pytest.fixture
def subjects(tenant, settings, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["*"]
    other = tenant_create(slug="other", name="Other")
    people = {}
    for t, who, tag in ((tenant, person("gdpr"), "gdpr"), (tenant, person("bystander"), "by"),
                        (other, person("elsewhere"), "el")):
        demo_subject(t, who, tag=tag, capture_on_commit=django_capture_on_commit_callbacks)
        deliver(t, who, tag=tag)
        people[tag] = who
    return people


def test_erase_leaves_no_identifier_in_any_column(subjects):
    subject = subjects["gdpr"]
    identifiers = identifiers_of(subject)
    # The subject's invoices, subscription and provider customer id are all there to find.
    assert {"in_gdpr_1", "in_gdpr_77", "sub_gdpr_plan", subject.external_id} <= identifiers
    before = found(identifiers)
    assert ("integrations.WebhookEvent", "body", "in_gdpr_77") in before
    assert ("integrations.WebhookEvent", "body", "sub_gdpr_plan") in before
    bystander_ids = {i for tag in ("by", "el") for i in identifiers_of(subjects[tag])}
    bystanders_before = found(bystander_ids)

    call_command("gdpr_erase", "--tenant", "acme", "--customer-id", subject.external_id,
                 stdout=StringIO(), stderr=StringIO())

    assert found(identifiers) == []
    assert found(bystander_ids) == bystanders_before  # nobody else lost anything


def test_erased_webhook_bodies_keep_their_shape_and_amounts(subjects):
    subject = subjects["gdpr"]
    events = list(WebhookEvent.objects.filter(event_key__startswith="evt_gdpr_invoice").order_by("pk"))
    before = [json.loads(bytes(e.body)) for e in events]
    call_command("gdpr_erase", "--tenant", "acme", "--customer-id", subject.external_id,
                 stdout=StringIO(), stderr=StringIO())
    after = [json.loads(bytes(e.body)) for e in WebhookEvent.objects.filter(pk__in=[e.pk for e in events])
             .order_by("pk")]
    for old, new in zip(before, after, strict=True):
        assert new["type"] == old["type"] and new["data"]["object"]["amount_due"] == old["data"]["object"]["amount_due"]
        assert new["data"]["object"]["currency"] == old["data"]["object"]["currency"]
        assert new["data"]["object"]["id"] != old["data"]["object"]["id"]  # replaced by its hash
    # The same id is hashed the same way everywhere, so an erased body still joins its invoice.
    invoice = Invoice.objects.get(tenant__slug="acme", external_invoice_id=after[0]["data"]["object"]["id"])
    assert invoice.external_invoice_id == after[1]["data"]["object"]["id"]
