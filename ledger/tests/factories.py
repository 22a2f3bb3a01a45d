"""factory-boy factories for ledger models."""

from __future__ import annotations

import factory
from django.utils import timezone

from ledger.models import Customer, Invoice
from paypilot.tests.factories import TenantFactory


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Customer

    tenant = factory.SubFactory(TenantFactory)
    external_id = factory.Sequence(lambda n: f"cus_{n:05d}")
    name = factory.Sequence(lambda n: f"Customer {n}")
    email = factory.Sequence(lambda n: f"billing{n}@example.com")
    plan = "Pro"
    mrr_minor = 29900
    currency = "USD"
    locale = "en"


class InvoiceFactory(factory.django.DjangoModelFactory):
    """A bare invoice row. Prefer `invoice_record_failure` in tests of behaviour: this factory
    skips the creation transition row and fixes the arm to treatment unless told otherwise."""

    class Meta:
        model = Invoice

    tenant = factory.SubFactory(TenantFactory)
    provider = "stripe"
    external_invoice_id = factory.Sequence(lambda n: f"in_{n:06d}")
    amount_minor = 4900
    currency = "USD"
    state = Invoice.State.FAILED
    arm = Invoice.Arm.TREATMENT
    failure_code = "card_expired"
    failed_at = factory.LazyFunction(timezone.now)
