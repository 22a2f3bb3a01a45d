"""Customer writes: upsert by external id (one or many), admin edits; audited with ids only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from ledger.models import Customer
from ledger.money import currency_normalise
from paypilot.keyed import rows_locked_by_keys
from paypilot.models import Tenant
from paypilot.services import audit_record, audit_record_many, audit_values, rows_insert


@dataclass(frozen=True)
class CustomerInput:
    """One customer for `customer_upsert_many`; empty values leave stored ones alone."""

    external_id: str
    name: str = ""
    email: str = ""
    plan: str = ""
    mrr_minor: int | None = None
    currency: str = ""
    locale: str = ""
    payment_history: list[dict[str, Any]] | None = None


def customer_upsert(
    *,
    tenant: Tenant,
    external_id: str,
    name: str = "",
    email: str = "",
    plan: str = "",
    mrr_minor: int | None = None,
    currency: str = "",
    locale: str = "",
    payment_history: list[dict[str, Any]] | None = None,
) -> Customer:
    """Create or update a customer by (tenant, external id). Empty arguments leave the stored
    value alone, so a partial webhook never blanks a name. Audited with the id only."""
    item = CustomerInput(external_id=external_id, name=name, email=email, plan=plan, mrr_minor=mrr_minor,
                         currency=currency, locale=locale, payment_history=payment_history)
    return customer_upsert_many(tenant=tenant, customers=[item])[0]


def _customer_values(item: CustomerInput) -> dict[str, Any]:
    if not item.external_id:
        raise ValueError("external_id is required")
    if item.mrr_minor is not None and (isinstance(item.mrr_minor, bool) or item.mrr_minor < 0):
        raise ValueError("mrr_minor must be a non-negative integer")
    values: dict[str, Any] = {
        "name": item.name, "email": item.email, "plan": item.plan, "locale": item.locale,
        "currency": currency_normalise(item.currency) if item.currency else "",
    }
    values = {k: v for k, v in values.items() if v}
    if item.mrr_minor is not None:
        values["mrr_minor"] = int(item.mrr_minor)
    if item.payment_history is not None:
        values["payment_history"] = list(item.payment_history)
    return values


def customer_upsert_many(
    *, tenant: Tenant, customers: list[CustomerInput], _retry: bool = True
) -> list[Customer]:
    """`customer_upsert` for many distinct external ids in one transaction: one read for
    all, one INSERT for the new ones, a save per changed one, one audit event each.
    Returns the customers in order. Raises ValueError on bad input or a repeated id."""
    wanted = [(item.external_id, _customer_values(item)) for item in customers]
    ids = [external_id for external_id, _ in wanted]
    if len(set(ids)) != len(ids):
        raise ValueError("external ids must be distinct within one call")
    with transaction.atomic():
        stored = {
            row.external_id: row
            for row in rows_locked_by_keys(Customer, key_fields=("external_id",), keys=[(eid,) for eid in ids],
                                           filters={"tenant_id": tenant.pk})
        }
        created = [Customer(tenant=tenant, external_id=eid, **values) for eid, values in wanted if eid not in stored]
        if created:
            try:
                with transaction.atomic():
                    rows_insert(created)
            except IntegrityError:
                if not _retry:
                    raise
                # A concurrent writer stored some of them first: read again, update those.
                return customer_upsert_many(tenant=tenant, customers=customers, _retry=False)
        audits = [audit_values(event="ledger.customer.created", tenant=tenant, detail={"customer": row.pk})
                  for row in created]
        for external_id, values in wanted:
            customer = stored.get(external_id)
            changed = [k for k, v in values.items() if getattr(customer, k) != v] if customer else []
            if customer is not None and changed:
                for key in changed:
                    setattr(customer, key, values[key])
                customer.save(update_fields=[*changed, "updated_at"])
                audits.append(audit_values(event="ledger.customer.updated", tenant=tenant,
                                           detail={"customer": customer.pk}))
        audit_record_many(audits)
    by_id = {**stored, **{row.external_id: row for row in created}}
    return [by_id[external_id] for external_id in ids]



def customer_update(*, customer: Customer, actor: str, fields: dict[str, Any]) -> Customer:
    """Save admin edits to an existing customer; audited with the id and the actor."""
    editable = {"name", "email", "plan", "mrr_minor", "currency", "locale", "payment_history"}
    unknown = set(fields) - editable
    if unknown:
        raise ValueError(f"not editable: {', '.join(sorted(unknown))}")
    if fields.get("currency"):
        fields = {**fields, "currency": currency_normalise(fields["currency"])}
    with transaction.atomic():
        for key, value in fields.items():
            setattr(customer, key, value)
        customer.save()
        audit_record(event="ledger.customer.edited", tenant=customer.tenant, actor=actor,
                     detail={"customer": customer.pk, "count": len(fields)})
    return customer
