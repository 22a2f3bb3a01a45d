"""A data subject with rows in every app: a Stripe failure webhook carrying their name,
e-mail and address, processed through the real pipeline (customer, invoice, transition,
decision, draft, approval request), then an edit, an approval with a note and a send."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model

from approvals.models import ApprovalRequest
from approvals.services import approval_approve, approval_edit
from dunning.models import IdempotencyRecord
from integrations.models import WebhookEvent
from integrations.services import webhook_event_process
from ledger.models import Customer
from ledger.services import customer_upsert
from operations.tests.factories import Person
from paypilot.models import Tenant

FIXTURES = Path(__file__).resolve().parents[2] / "integrations" / "tests" / "fixtures"
STRIPE_FIXTURE = FIXTURES / "stripe" / "invoice_payment_failed.json"


@dataclass
class Demo:
    tenant: Tenant
    person: Person
    customer: Customer
    approval: ApprovalRequest
    event: WebhookEvent


def deliver_failure(tenant: Tenant, person: Person, *, invoice_id: str, event_id: str) -> WebhookEvent:
    payload = json.loads(STRIPE_FIXTURE.read_text())
    payload["id"] = event_id
    invoice = payload["data"]["object"]
    invoice.update(
        id=invoice_id, customer=person.external_id, customer_email=person.email,
        customer_name=person.name, description=person.note,
        customer_address={"line1": f"{person.note}, 12 Lantern Row", "city": "Bruges", "country": "BE"},
    )
    # Each person has their own subscription, as with real customers.
    payload_text = json.dumps(payload).replace("sub_1RAcmeScale", f"sub_{person.external_id}")
    event = WebhookEvent.objects.create(
        tenant=tenant, provider="stripe", event_key=event_id, event_type=payload["type"],
        body=payload_text.encode(),
    )
    webhook_event_process(event_id=event.pk)
    event.refresh_from_db()
    return event


def demo_subject(tenant: Tenant, person: Person, *, tag: str, capture_on_commit) -> Demo:  # type: ignore[no-untyped-def]
    event = deliver_failure(tenant, person, invoice_id=f"in_{tag}_1", event_id=f"evt_{tag}_1")
    assert event.status == "processed", (event.status, event.error)
    customer = customer_upsert(
        tenant=tenant, external_id=person.external_id, plan=person.plan,
        payment_history=[{"status": "failed", "note": person.note}],
    )
    approval = ApprovalRequest.objects.get(invoice__customer=customer)
    admin, _ = get_user_model().objects.get_or_create(
        username="platform-root", defaults={"is_superuser": True, "is_staff": True}
    )
    first_name = person.name.split()[0]
    approval_edit(
        approval=approval, user=admin, subject=f"{first_name}, your invoice",
        body=f"Hello {first_name},\n\nyour last payment did not go through. {person.note}.",
    )
    with capture_on_commit(execute=True):
        approval_approve(approval=approval, user=admin, note=f"spoke to {person.name} today")
    approval.refresh_from_db()
    # A replayable API answer (POST /payment-failed with an Idempotency-Key) naming them.
    IdempotencyRecord.objects.create(
        tenant=tenant, key=f"idem-{tag}", request_hash="0" * 64, status_code=200,
        response_body=json.dumps({"customer": {"id": person.external_id, "name": person.name, "email": person.email},
                                  "draft": {"body": f"Hi {first_name}, {person.note}."}}).encode(),
    )
    return Demo(tenant=tenant, person=person, customer=customer, approval=approval, event=event)
