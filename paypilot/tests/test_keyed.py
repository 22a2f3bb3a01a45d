"""paypilot.keyed: the rows of many keys, locked, the same answer as the ORM's question on both
databases; on PostgreSQL each key one probe of an index bound on every column, whatever the
table's statistics say."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from approvals.models import ApprovalRequest
from approvals.services import approval_open, approvals_withdraw
from approvals.tests.factories import DraftFactory
from dunning.models import Draft
from ledger.models import Customer, Invoice
from ledger.services.customers import CustomerInput, customer_upsert_many
from ledger.services.payments import FailureInput, invoice_record_failures
from ledger.tests.factories import InvoiceFactory
from operations.tests.conftest import postgres_only
from paypilot.keyed import rows_locked_by_keys
from paypilot.models import Tenant
from paypilot.tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def test_rows_of_the_keys_and_filters_in_primary_key_order(tenant: Tenant) -> None:
    other = TenantFactory()
    mine = [InvoiceFactory(tenant=tenant, provider=p, external_invoice_id=f"in_{i}")
            for i, p in enumerate(["stripe", "chargebee", "stripe", "recharge"])]
    InvoiceFactory(tenant=other, provider="stripe", external_invoice_id="in_0")  # same key, other tenant
    keys = [("stripe", "in_2"), ("stripe", "in_0"), ("stripe", "in_0"),  # repeated: one row
            ("chargebee", "in_1"), ("stripe", "in_1"),  # provider and id must match together
            ("stripe", "in_404")]

    rows = rows_locked_by_keys(Invoice, key_fields=("provider", "external_invoice_id"), keys=keys,
                               filters={"tenant_id": tenant.pk})

    assert [row.pk for row in rows] == [mine[0].pk, mine[1].pk, mine[2].pk]
    assert all(isinstance(row, Invoice) and row.tenant_id == tenant.pk for row in rows)
    assert [row.amount_minor for row in rows] == [mine[0].amount_minor, mine[1].amount_minor,
                                                  mine[2].amount_minor]
    orm = Invoice.objects.filter(Q(provider="stripe", external_invoice_id__in=["in_2", "in_0", "in_1"])
                                 | Q(provider="chargebee", external_invoice_id="in_1"), tenant=tenant)
    assert {row.pk for row in rows} == {row.pk for row in orm if (row.provider, row.external_invoice_id) in keys}


def test_no_keys_reads_nothing_and_a_key_of_the_wrong_width_is_refused(tenant: Tenant) -> None:
    with CaptureQueriesContext(connection) as queries:
        assert rows_locked_by_keys(Invoice, key_fields=("provider", "external_invoice_id"), keys=[]) == []
    assert len(queries) == 0
    with pytest.raises(ValueError, match="each key has 2 value"):
        rows_locked_by_keys(Invoice, key_fields=("provider", "external_invoice_id"), keys=[("stripe",)])


def test_thousands_of_keys_in_one_call(tenant: Tenant) -> None:
    """More keys than SQLite's expression depth (1,000) would allow as one OR per key."""
    Invoice.objects.bulk_create([InvoiceFactory.build(tenant=tenant, provider="stripe", external_invoice_id=f"in_{i}")
                                 for i in range(0, 3000, 2)], batch_size=500)
    keys = [("stripe", f"in_{i}") for i in range(3000)] + [("chargebee", "in_0")]

    rows = rows_locked_by_keys(Invoice, key_fields=("provider", "external_invoice_id"), keys=keys,
                               filters={"tenant_id": tenant.pk})

    assert len(rows) == 1500
    assert {row.external_invoice_id for row in rows} == {f"in_{i}" for i in range(0, 3000, 2)}
    assert [row.pk for row in rows] == sorted(row.pk for row in rows)


def _plan(query: dict[str, Any]) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + query["sql"])
        return "\n".join(row[0] for row in cursor.fetchall())


def _young_table(*tables: str) -> None:
    """Statistics of a table that had almost nothing in it when last analysed (the test's
    transaction rolls them back): what a new install's first backlog meets."""
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


@postgres_only
def test_each_caller_probes_an_index_bound_on_every_column_on_a_young_table(tenant: Tenant) -> None:
    _young_table(Customer._meta.db_table, Invoice._meta.db_table, ApprovalRequest._meta.db_table)
    approvals = [approval_open(draft=DraftFactory(tenant=tenant)) for _ in range(3)]
    # Enough rows that reading them all costs more than a probe (a table of a few pages is
    # rightly read whole), written after the statistics were taken.
    padding = Invoice.objects.bulk_create(InvoiceFactory.build_batch(5000, tenant=tenant), batch_size=1000)
    # ...and as many pending requests, each with a draft of its own.
    model = approvals[0]
    drafts = Draft.objects.bulk_create([
        Draft(tenant=tenant, invoice=invoice, subject=model.subject, body=model.body, locale="en",
              source=model.source) for invoice in padding], batch_size=1000)
    ApprovalRequest.objects.bulk_create([
        ApprovalRequest(tenant=tenant, draft=draft, invoice_id=draft.invoice_id, source=model.source,
                        subject=model.subject, body=model.body, requested_at=model.requested_at,
                        expires_at=model.expires_at)
        for draft in drafts], batch_size=1000)

    Customer.objects.bulk_create([Customer(tenant=tenant, external_id=f"cus_pad_{i}") for i in range(5000)],
                                 batch_size=1000)

    failures = [FailureInput(provider="stripe", external_invoice_id=f"in_young_{i}", amount_minor=1000,
                             currency="USD", failure_code="card_declined") for i in range(3)]
    with CaptureQueriesContext(connection) as queries:
        customer_upsert_many(tenant=tenant, customers=[CustomerInput(external_id=f"cus_young_{i}") for i in range(3)])
        invoice_record_failures(tenant=tenant, failures=failures)
        approvals_withdraw(invoice_ids=[a.invoice_id for a in approvals], reason="invoice_paid")
    lateral = [q for q in queries if "CROSS JOIN LATERAL" in q["sql"]]
    assert len(lateral) == 3, [q["sql"][:80] for q in queries]
    customer_plan, invoice_plan, approval_plan = (_plan(q) for q in lateral)
    assert "(external_id)::text = (k.k0)::text" in customer_plan, customer_plan
    for plan in (customer_plan, invoice_plan, approval_plan):  # a probe per key, never the whole table
        assert "Nested Loop" in plan and "Index Scan using" in plan, plan
        assert "Seq Scan on" not in plan.replace("Seq Scan on k", "") and "Bitmap" not in plan, plan
    assert "Index Cond: (" in invoice_plan and "(external_invoice_id)::text = (k.k1)::text" in invoice_plan, \
        invoice_plan
    assert "Index Scan using approval_invoice_status" in approval_plan, approval_plan
    assert "(invoice_id = k.k0) AND ((status)::text = 'pending'::text)" in approval_plan, approval_plan
    assert ApprovalRequest.objects.filter(pk__in=[a.pk for a in approvals], status="withdrawn").count() == 3
