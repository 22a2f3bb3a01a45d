"""draft_for_invoice(): the pipeline for a ledger invoice, decision recorded, Draft stored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from decisions.models import DecisionRecord
from dunning.services import draft_for_invoice
from dunning.tests.factories import CustomerFactory, InvoiceFactory
from ledger.models import Invoice


@pytest.mark.django_db
def test_draft_for_a_treated_invoice(tenant) -> None:  # type: ignore[no-untyped-def]
    customer = CustomerFactory(tenant=tenant, external_id="cus_9", name="Verdant Outdoor", plan="Pro",
                               locale="de-AT", currency="EUR", mrr_minor=34900)
    invoice = InvoiceFactory(tenant=tenant, customer=customer, currency="EUR", amount_minor=34900,
                             failure_code="insufficient_funds", attempt_count=2, external_invoice_id="in_42")
    retry_at = datetime(2026, 7, 4, 12, tzinfo=UTC)
    draft = draft_for_invoice(invoice=invoice, provider_retry_at=retry_at, provider_retry_source="stripe")
    assert draft.invoice == invoice and draft.tenant == tenant and draft.locale == "de"
    assert draft.body.startswith("Hallo Verdant Outdoor,") and "Ihren Tarif Pro" in draft.body
    record = DecisionRecord.objects.get()
    assert draft.decision == record and record.invoice_ref == "in_42" and record.source == "pipeline"
    assert (record.attempt, record.retry_at, record.schedule_source) == (2, retry_at, "stripe")
    assert "http" not in draft.body  # the link is added at send time


@pytest.mark.django_db
def test_holdout_and_closed_invoices_are_not_drafted(tenant) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        draft_for_invoice(invoice=InvoiceFactory(tenant=tenant, arm=Invoice.Arm.HOLDOUT))
    with pytest.raises(ValueError):
        draft_for_invoice(invoice=InvoiceFactory(tenant=tenant, state=Invoice.State.RECOVERED))
    assert DecisionRecord.objects.count() == 0


@pytest.mark.django_db
def test_invoice_without_a_customer_uses_the_fallback_slots(tenant) -> None:  # type: ignore[no-untyped-def]
    draft = draft_for_invoice(invoice=InvoiceFactory(tenant=tenant, failure_code="retries_exhausted"))
    assert draft.body.startswith("Hi there,") and draft.locale == "en"
