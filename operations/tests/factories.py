"""Two tenants' worth of rows in as many tenant tables as the apps provide, through their
own services: the row-level security and GDPR tests run over whatever this creates."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from approvals.models import AdminMembership
from decisions.rules import decide
from decisions.services import decision_outcome_report, decision_record, decision_refusal_record
from integrations.models import WebhookEvent
from ledger.models import Customer, Invoice
from ledger.services import customer_upsert, invoice_record_failure
from paypilot.models import Tenant
from paypilot.services import tenant_create, token_issue


@dataclass
class Person:
    """A data subject: every string here must be gone after erasure."""

    external_id: str
    name: str
    email: str
    plan: str  # free text typed by an operator or a CRM
    note: str  # free text that may end up in a draft or a payload

    @property
    def pii_terms(self) -> list[str]:
        return [self.name, self.email, self.plan, self.note, *self.name.split()]


@dataclass
class Populated:
    tenant: Tenant
    customer: Customer
    invoices: list[Invoice] = field(default_factory=list)


def person(tag: str) -> Person:
    """Every word of the name is unique to `tag`, so traces of one person never match another."""
    first = f"{tag.title()}ette"
    return Person(
        external_id=f"cus_{tag}_0001",
        name=f"{first} {tag.title()}vardt",
        email=f"{first.lower()}.{tag}@example.org",
        plan=f"Platinum {tag} plan with weekly call",
        note=f"Please ring {first} on the {tag} landline",
    )


def populate_tenant(tenant: Tenant, subject: Person, *, invoices: int = 2) -> Populated:
    token_issue(tenant=tenant, role="tenant_admin", label="ops test")
    customer = customer_upsert(
        tenant=tenant, external_id=subject.external_id, name=subject.name, email=subject.email,
        plan=subject.plan, mrr_minor=4900, currency="EUR", locale="en",
        payment_history=[{"status": "failed", "note": subject.note}],
    )
    result = Populated(tenant=tenant, customer=customer)
    for n in range(invoices):
        outcome = invoice_record_failure(
            tenant=tenant, provider="stripe", external_invoice_id=f"in_{tenant.slug}_{n}",
            amount_minor=1000 + n, currency="EUR", failure_code="card_expired", customer=customer,
            subscription_id=f"sub_{tenant.slug}", provider_customer_id=f"pcus_{tenant.slug}",
            hosted_invoice_url=f"https://invoice.stripe.com/i/{tenant.slug}{n}",
        )
        result.invoices.append(outcome.invoice)
        decision_record(
            tenant=tenant, invoice_ref=outcome.invoice.external_invoice_id,
            decision=decide(failure_code="card_expired"), source="pipeline",
        )
    decision_refusal_record(tenant=tenant, gate="body", reason="unknown_field", field="client_id")
    decision_outcome_report(
        tenant=tenant, invoice_ref=result.invoices[0].external_invoice_id, outcome="paid",
        report_key=f"report-{tenant.slug}",
    )
    WebhookEvent.objects.create(
        tenant=tenant, provider="stripe", event_key=f"evt_{tenant.slug}", event_type="invoice.payment_failed",
        body=f'{{"customer_email": "{subject.email}", "customer_name": "{subject.name}"}}'.encode(),
    )
    user = get_user_model().objects.create_user(username=f"staff-{tenant.slug}", is_staff=True)
    AdminMembership.objects.create(user=user, tenant=tenant)
    return result


def two_tenants() -> tuple[Populated, Populated]:
    a = populate_tenant(tenant_create(slug="tenant-a", name="Tenant A"), person("alpha"))
    b = populate_tenant(tenant_create(slug="tenant-b", name="Tenant B"), person("beta"))
    return a, b
