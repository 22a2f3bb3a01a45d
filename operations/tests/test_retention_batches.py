"""retention_purge over many expired rows: a transaction per batch, an interrupt loses only
the batch in hand, and running it again finishes the job with the right counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from ledger.models import Customer, Invoice, InvoiceTransition
from operations.retention import retention_purge
from operations.tests.volume import invoices_bulk
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db

OLD = 40  # expired closed invoices
KEPT = 5  # open invoices of the same age: never purged


class Interrupted(Exception):
    pass


class StopAfter:
    """A progress stream that dies (as a closed pipe or a Ctrl-C would) on batch line `lines`:
    the line is written once its batch has committed, so `lines` batches are done."""

    def __init__(self, lines: int) -> None:
        self.lines: list[str] = []
        self.stop = lines

    def write(self, text: str) -> None:
        if not text.startswith("retention batch"):  # the header line with the cut-offs
            return
        self.lines.append(text)
        if len(self.lines) == self.stop:
            raise Interrupted(text)

    def flush(self) -> None:
        pass


@pytest.fixture
def expired(tenant, settings):  # type: ignore[no-untyped-def]
    settings.PAYPILOT_RETENTION_MONTHS = 12
    customer = Customer.objects.create(tenant=tenant, external_id="cus_old", name="Old", email="old@example.org")
    invoices = [*invoices_bulk(tenant, customer, "closed", OLD, state="recovered"),
                *invoices_bulk(tenant, customer, "open", KEPT, state="failed")]
    InvoiceTransition.objects.bulk_create([
        InvoiceTransition(tenant=tenant, invoice=i, from_state="failed", to_state=i.state, cause="test")
        for i in invoices
    ])
    Invoice.objects.update(updated_at=timezone.now() - timedelta(days=500))
    return invoices


def test_an_interrupt_keeps_the_committed_batches_and_a_rerun_finishes(expired):
    stream = StopAfter(3)
    with pytest.raises(Interrupted):
        retention_purge(progress=stream, batch_size=10)

    # Three batches of ten committed; the rest untouched (no transaction spanned the purge).
    assert Invoice.objects.filter(state="recovered").count() == OLD - 30
    assert AuditEvent.objects.filter(event="operations.retention.purged").count() == 3
    assert stream.lines[-1].startswith("retention batch 3: invoices 30/40 (")

    resumed = retention_purge(progress=StopAfter(0), batch_size=10)

    assert resumed.counts["ledger.Invoice"] == OLD - 30 and resumed.batches == 1
    assert Invoice.objects.filter(state="recovered").count() == 0
    assert Invoice.objects.filter(state="failed").count() == KEPT
    assert InvoiceTransition.objects.count() == KEPT
    audited = [a.detail["counts"].get("ledger.Invoice", 0)
               for a in AuditEvent.objects.filter(event="operations.retention.purged")]
    assert sum(audited) == OLD and len(audited) == 4  # every purged row audited exactly once


def test_dry_run_walks_every_batch_and_changes_nothing(expired):
    stream = StopAfter(0)
    result = retention_purge(dry_run=True, progress=stream, batch_size=15)
    assert [line.split(" (")[0] for line in stream.lines] == [
        "retention batch 1: invoices 15/40", "retention batch 2: invoices 30/40", "retention batch 3: invoices 40/40",
    ]
    assert result.counts["ledger.Invoice"] == OLD and result.counts["ledger.InvoiceTransition"] == OLD
    assert Invoice.objects.count() == OLD + KEPT
    assert not AuditEvent.objects.filter(event="operations.retention.purged").exists()
