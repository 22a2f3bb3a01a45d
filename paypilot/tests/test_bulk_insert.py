"""paypilot.bulk: many rows in one INSERT through a JSON document (PostgreSQL), stored exactly
as Django's bulk_create stores them, and falling back to it for anything it does not convert."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from decisions.models import DecisionRecord
from decisions.tests.factories import DecisionRecordFactory
from ledger.models import Invoice
from ledger.tests.factories import CustomerFactory, InvoiceFactory
from operations.tests.conftest import APP_ROLE, django_as, postgres_only
from paypilot.bulk import _plan, rows_insert_json
from paypilot.models import AuditEvent, Tenant
from paypilot.pg_roles import app_role_apply
from paypilot.rls import rls_apply
from paypilot.services import rows_insert
from paypilot.tenancy import tenant_context
from reconciliation.models import ContractVersion

pytestmark = pytest.mark.django_db

DETAILS = [
    {"invoice_ref": "in_1", "nested": {"list": [1, 2.5, None, True], "text": "Zürich \"quoted\" \\ 東京"}},
    {},
    {"count": 0, "empty": [], "big": 2**53 + 1},
]


def _audit_rows(tenant: Tenant) -> list[AuditEvent]:
    return [AuditEvent(tenant=tenant, event=f"test.bulk.{i}", actor="tester", detail=detail)
            for i, detail in enumerate(DETAILS)]


def _stored(model: type[Any], ids: list[int], skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    rows = {row["id"]: row for row in model.objects.filter(pk__in=ids).values()}
    return [{k: v for k, v in rows[pk].items() if k not in ("id", *skip)} for pk in ids]


@postgres_only
def test_audit_rows_are_stored_as_bulk_create_stores_them_with_ids_in_list_order(tenant: Tenant) -> None:
    fast, slow = _audit_rows(tenant), _audit_rows(tenant)
    assert rows_insert_json(fast) is True
    AuditEvent.objects.bulk_create(slow)

    ids = [row.pk for row in fast]
    assert ids == sorted(ids) and len(set(ids)) == len(fast)
    assert all(not row._state.adding and row._state.db == "default" for row in fast)
    # auto_now_add was filled on the instance, as Django's own insert does
    assert all(row.created_at is not None for row in fast)
    assert _stored(AuditEvent, ids, skip=("created_at",)) == _stored(AuditEvent, [r.pk for r in slow],
                                                                    skip=("created_at",))
    assert [row["detail"] for row in _stored(AuditEvent, ids)] == DETAILS
    assert [row.created_at for row in AuditEvent.objects.filter(pk__in=ids).order_by("pk")] == \
        [row.created_at for row in fast]


@postgres_only
def test_floats_datetimes_nulls_foreign_keys_and_json_lists_round_trip(tenant: Tenant) -> None:
    decided = dt.datetime(2026, 11, 30, 23, 59, 58, 123456, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    def build() -> list[DecisionRecord]:
        return [
            DecisionRecordFactory.build(tenant=tenant, invoice_ref="in_a", decided_at=decided,
                                        likelihood=0.1 + 0.2, retry_at=None,
                                        network_rules=[{"rule_id": "visa-10.4", "confidence": 0.95}],
                                        expected_recovered_minor=None, currency="JPY"),
            DecisionRecordFactory.build(tenant=tenant, invoice_ref="in_b", decided_at=timezone.now(),
                                        likelihood=1e-9,
                                        retry_at=decided, network_rules=[], expected_recovered_minor=-(2**62),
                                        currency=None),
        ]
    fast, slow = build(), build()
    slow[1].decided_at = fast[1].decided_at
    assert rows_insert_json(fast) is True
    DecisionRecord.objects.bulk_create(slow)
    assert _stored(DecisionRecord, [r.pk for r in fast]) == _stored(DecisionRecord, [r.pk for r in slow])
    first = DecisionRecord.objects.get(pk=fast[0].pk)
    assert first.decided_at == decided and first.likelihood == 0.1 + 0.2 and first.retry_at is None


@postgres_only
def test_invoices_with_customers_through_rows_insert(tenant: Tenant) -> None:
    customer = CustomerFactory(tenant=tenant)
    invoices = [InvoiceFactory.build(tenant=tenant, customer=customer, external_invoice_id=f"in_bulk_{i}")
                for i in range(3)]
    rows_insert(invoices)
    assert [Invoice.objects.get(pk=row.pk).external_invoice_id for row in invoices] == \
        ["in_bulk_0", "in_bulk_1", "in_bulk_2"]
    assert {row.customer_id for row in Invoice.objects.filter(pk__in=[r.pk for r in invoices])} == {customer.pk}


@postgres_only
def test_values_it_does_not_convert_exactly_fall_back_having_written_nothing(tenant: Tenant) -> None:
    before = AuditEvent.objects.count()
    naive = [DecisionRecordFactory.build(tenant=tenant), DecisionRecordFactory.build(tenant=tenant)]
    naive[1].decided_at = dt.datetime(2026, 1, 1)  # noqa: DTZ001 - the point of the test
    assert rows_insert_json(naive) is False
    nan = [DecisionRecordFactory.build(tenant=tenant, likelihood=float("nan")) for _ in range(2)]
    assert rows_insert_json(nan) is False
    odd_json = _audit_rows(tenant)
    odd_json[0].detail = {"when": dt.date(2026, 1, 1)}  # plain JSON cannot carry it
    assert rows_insert_json(odd_json) is False
    saved = _audit_rows(tenant)
    saved[0].pk = 10**9  # not a new row
    assert rows_insert_json(saved) is False
    assert AuditEvent.objects.count() == before and not DecisionRecord.objects.exists()
    assert all(row.pk is None for row in [*naive[1:], *nan, *odd_json])


def test_models_with_fields_django_must_prepare_take_bulk_create() -> None:
    assert _plan(ContractVersion) is None  # decimal percentages: Django's rounding, not the server's
    assert _plan(AuditEvent) is not None and _plan(DecisionRecord) is not None


def test_other_databases_take_bulk_create(tenant: Tenant) -> None:
    if connection.vendor == "postgresql":
        pytest.skip("this is the non-PostgreSQL path")
    rows = _audit_rows(tenant)
    assert rows_insert_json(rows) is False and all(row.pk is None for row in rows)
    rows_insert(rows)
    assert [row["detail"] for row in _stored(AuditEvent, [r.pk for r in rows])] == DETAILS


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_row_level_security_checks_every_row_of_the_document(tenant: Tenant, other_tenant: Tenant) -> None:
    rls_apply()
    app_role_apply(role=APP_ROLE)
    with django_as(APP_ROLE):
        with tenant_context(tenant):
            rows = _audit_rows(tenant)
            assert rows_insert_json(rows) is True
        with pytest.raises(DatabaseError), tenant_context(tenant), transaction.atomic():
            rows_insert_json([*_audit_rows(tenant), *_audit_rows(other_tenant)])
    assert AuditEvent.objects.filter(pk__in=[r.pk for r in rows]).count() == len(DETAILS)
    assert not AuditEvent.objects.filter(tenant=other_tenant, event__startswith="test.bulk.").exists()
