"""The rollup triggers: every write path keeps the rollup equal to a recomputation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from ledger.models import Invoice, ReportRollup
from ledger.rollup import (
    NOT_RECOVERED,
    ROLLUP_DELAY_CAP_HOURS,
    delay_bucket,
    rollup_cells,
    rollup_cells_recompute,
    rollup_rebuild,
    week_of,
)
from ledger.services import invoice_mark_messaged, invoice_record_failure, invoice_record_payment
from ledger.tests.factories import InvoiceFactory

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 6, 3, 23, 30, tzinfo=UTC)  # a Wednesday
INVOICE_FIELDS = ("arm", "currency", "state", "failed_at", "first_messaged_at", "recovered_at",
                  "amount_minor", "recovered_minor", "refunded_minor")


def stored(tenant) -> list:  # type: ignore[no-untyped-def,type-arg]
    return sorted(rollup_cells(tenant_id=tenant.pk), key=repr)


def recomputed(tenant) -> list:  # type: ignore[no-untyped-def,type-arg]
    rows = list(Invoice.objects.filter(tenant=tenant).values(*INVOICE_FIELDS))
    return sorted(rollup_cells_recompute(rows), key=repr)


def test_week_and_delay_buckets() -> None:
    assert week_of(T0).isoformat() == "2026-06-01"
    assert week_of(datetime(2026, 6, 7, 23, 59, tzinfo=UTC)).isoformat() == "2026-06-01"
    assert week_of(datetime(2026, 6, 8, 0, 0, tzinfo=UTC)).isoformat() == "2026-06-08"
    def bucket(hours: float, state: str = "recovered") -> int:
        return delay_bucket(state=state, failed_at=T0, recovered_at=T0 + timedelta(hours=hours))
    assert bucket(5, "failed") == NOT_RECOVERED
    assert [bucket(h) for h in (0, 0.99, 1, 71.9, 72, 95.9, 96)] == [0, 0, 1, 71, 72, 72, 96]
    assert bucket(-3) == 0  # a payment time before the failure time
    assert bucket(24 * 400) == ROLLUP_DELAY_CAP_HOURS
    assert delay_bucket(state="recovered", failed_at=T0, recovered_at=None) == 0


def test_services_bulk_update_and_delete_keep_the_rollup_exact(tenant, other_tenant) -> None:  # type: ignore[no-untyped-def]
    for i in range(6):
        invoice_record_failure(tenant=tenant, provider="stripe", external_invoice_id=f"in_{i}",
                               amount_minor=1000 + i, currency="usd" if i % 2 else "jpy",
                               failure_code="card_declined", now=T0 + timedelta(days=i))
    invoice_mark_messaged(invoice=Invoice.objects.get(external_invoice_id="in_1"))
    invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id="in_1",
                           amount_paid_minor=1001, currency="usd", now=T0 + timedelta(days=1, hours=80))
    InvoiceFactory.create_batch(5, tenant=tenant, failed_at=T0, currency="EUR")
    InvoiceFactory(tenant=other_tenant, failed_at=T0, amount_minor=999)
    assert stored(tenant) == recomputed(tenant) and stored(tenant)

    # Paths that skip the services: a queryset update, a refund written by hand, a delete.
    Invoice.objects.filter(tenant=tenant, currency="EUR").update(amount_minor=7)
    Invoice.objects.filter(external_invoice_id="in_1").update(refunded_minor=500)
    Invoice.objects.filter(pk=Invoice.objects.filter(tenant=tenant, currency="EUR").first().pk).delete()
    Invoice.objects.filter(tenant=tenant, currency="JPY").update(state="voided")
    assert stored(tenant) == recomputed(tenant)
    assert not ReportRollup.objects.filter(invoices__lte=0).exists()  # emptied rows are dropped

    Invoice.objects.filter(tenant=tenant).update(attempt_count=3)  # no watched column: no change
    assert stored(tenant) == recomputed(tenant)
    assert sum(c.invoices for c in stored(other_tenant)) == 1


def test_raw_sql_insert_is_counted(tenant) -> None:  # type: ignore[no-untyped-def]
    InvoiceFactory(tenant=tenant, failed_at=T0)
    with connection.cursor() as cursor:  # a bulk path outside the ORM
        cursor.execute(
            "INSERT INTO ledger_invoice (tenant_id, provider, external_invoice_id, amount_minor, currency, "
            "state, arm, failure_code, attempt_count, subscription_id, provider_customer_id, "
            "hosted_invoice_url, failed_at, failed_recorded_at, updated_at, recovered_minor, "
            "refunded_minor, recovered_at) SELECT tenant_id, provider, 'raw_' || id, amount_minor, currency, "
            "'recovered', arm, failure_code, 1, '', '', '', failed_at, failed_at, failed_at, 4900, 0, "
            "failed_at FROM ledger_invoice WHERE tenant_id = %s",
            [tenant.pk],
        )
    assert stored(tenant) == recomputed(tenant)
    assert {c.state for c in stored(tenant)} == {"failed", "recovered"}


def test_rebuild_restores_a_damaged_rollup_and_is_idempotent(tenant) -> None:  # type: ignore[no-untyped-def]
    InvoiceFactory.create_batch(3, tenant=tenant, failed_at=T0)
    expected = stored(tenant)
    ReportRollup.objects.filter(tenant=tenant).update(invoices=99)
    assert stored(tenant) != expected
    assert rollup_rebuild(tenant_id=tenant.pk) == len(expected)
    assert stored(tenant) == expected
    rollup_rebuild(tenant_id=tenant.pk)
    assert stored(tenant) == expected == recomputed(tenant)


def test_deleting_a_tenant_with_its_invoices_leaves_no_rollup_row_behind() -> None:
    from paypilot.tests.factories import TenantFactory

    doomed = TenantFactory()
    InvoiceFactory.create_batch(3, tenant=doomed, failed_at=T0)
    assert ReportRollup.objects.filter(tenant=doomed).exists()
    # The cascade deletes the rollup rows and the invoices in some order: taking an invoice
    # out of a rollup row already gone must not bring the row back (negative, orphaned).
    doomed.delete()
    connection.check_constraints()
    assert not ReportRollup.objects.exists()
