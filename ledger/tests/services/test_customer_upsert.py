"""Customers: upsert by external id, partial updates never blank fields, admin edits audited."""

from __future__ import annotations

import pytest

from ledger.models import Customer
from ledger.services import customer_update, customer_upsert
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_upsert_creates_then_updates_only_given_fields(tenant) -> None:  # type: ignore[no-untyped-def]
    first = customer_upsert(tenant=tenant, external_id="cus_1", name="Acme", email="a@example.com",
                            mrr_minor=149900, currency="usd", payment_history=[{"date": "2026-01-01", "status": "ok"}])
    again = customer_upsert(tenant=tenant, external_id="cus_1", plan="Scale")
    assert first.pk == again.pk
    again.refresh_from_db()
    assert (again.name, again.email, again.plan, again.mrr_minor, again.currency) == (
        "Acme", "a@example.com", "Scale", 149900, "USD")
    assert Customer.objects.count() == 1
    events = list(AuditEvent.objects.filter(event__startswith="ledger.customer").order_by("id")
                  .values_list("event", "detail"))
    assert events == [("ledger.customer.created", {"customer": first.pk}),
                      ("ledger.customer.updated", {"customer": first.pk})]


def test_unchanged_upsert_writes_no_audit(tenant) -> None:  # type: ignore[no-untyped-def]
    customer_upsert(tenant=tenant, external_id="cus_1", name="Acme")
    count = AuditEvent.objects.count()
    customer_upsert(tenant=tenant, external_id="cus_1", name="Acme")
    assert AuditEvent.objects.count() == count


def test_bad_values_are_refused(tenant) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        customer_upsert(tenant=tenant, external_id="")
    with pytest.raises(ValueError):
        customer_upsert(tenant=tenant, external_id="c", mrr_minor=-1)


def test_admin_update_is_audited_without_personal_data(tenant) -> None:  # type: ignore[no-untyped-def]
    customer = customer_upsert(tenant=tenant, external_id="cus_1", name="Acme")
    customer_update(customer=customer, actor="user:1", fields={"name": "Acme Robotics", "currency": "eur"})
    customer.refresh_from_db()
    assert (customer.name, customer.currency) == ("Acme Robotics", "EUR")
    event = AuditEvent.objects.get(event="ledger.customer.edited")
    assert event.actor == "user:1" and "Acme" not in str(event.detail)
    with pytest.raises(ValueError):
        customer_update(customer=customer, actor="user:1", fields={"tenant": None})
