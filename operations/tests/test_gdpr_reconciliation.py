"""gdpr_export / gdpr_erase over reconciliation: a shop customer known only by the e-mail in
an orders export (no dunning customer), their orders, captures, a dispute, a bank line whose
remittance names them, and a stored run with its breaks. Erasure replaces identifiers and
removes the person; amounts, the run's figures and every other tenant stay as they were."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import date
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from operations.retention import retention_purge
from paypilot.models import AuditEvent, Tenant
from paypilot.services import pii_hash, tenant_create
from reconciliation.models import BankRow, Break, DisputeRow, ImportFile, OrderRow, ProviderRow, Run
from reconciliation.services.runs import run_create
from reconciliation.tests.factories import bank, contract, dispute, fee, load, order, txn

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)
EMAIL = "Mira.Quellwasser@example.test"
# Numeric order id on purpose: it must never eat an amount that happens to share its digits.
ORDER_1, ORDER_2, CHARGE_1, CHARGE_2 = "100234", "W-77815", "ch_miraQ001", "ch_miraQ002"
REMITTANCE = f"Refund Mira Quellwasser {EMAIL} order {ORDER_1} 100234.50"


def books(tenant: Tenant) -> None:
    """The subject's two orders (one captured twice, disputed), a bystander's order, a
    payout and a bank line that repeats the subject's e-mail and order id."""
    contract(tenant)
    with_email = [
        {**order(ORDER_1, 100234, ref=CHARGE_1), "customer_email": EMAIL},
        {**order(ORDER_2, 5000, ref=CHARGE_2), "customer_email": EMAIL.upper()},
        {**order("B-1", 2000, ref="ch_bystander"), "customer_email": "bystander@example.test"},
    ]
    load(tenant, "orders", with_email)
    load(tenant, "provider", [
        txn("txn_1", "charge", 100234, fee=fee(100234), charge=CHARGE_1, payout="po_0000001",
            payout_date="2026-11-05"),
        txn("txn_2", "charge", 5000, fee=fee(5000), charge=CHARGE_2, payout="po_0000001", payout_date="2026-11-05"),
        txn("txn_3", "charge", 5000, fee=fee(5000), charge=CHARGE_2, payout="po_0000001", payout_date="2026-11-05"),
        txn("txn_4", "charge", 2000, fee=fee(2000), charge="ch_bystander", payout="po_0000001",
            payout_date="2026-11-05"),
    ])
    load(tenant, "disputes", [dispute("dp_1", CHARGE_2, 5000, "2026-11-18")])
    load(tenant, "bank", [bank("2026-11-07", 100000, remittance=f"STRIPE po_0000001 {REMITTANCE}")])


def figures(tenant: Tenant) -> dict:
    """Everything an erasure must not change: every amount, date and code of the imported
    rows, and what the stored run says in numbers."""
    rows = {
        model.__name__: sorted(
            tuple(str(v) for v in r) for r in model.objects.filter(tenant=tenant).values_list(*fields)
        )
        for model, fields in (
            (OrderRow, ("line", "amount_minor", "currency", "ordered_day", "status")),
            (ProviderRow, ("line", "type", "amount_minor", "fee_minor", "net_minor", "currency", "created_day")),
            (BankRow, ("line", "amount_minor", "currency", "booking_day")),
            (DisputeRow, ("line", "amount_minor", "currency", "reason", "status", "evidence_due_by")),
            (ImportFile, ("kind", "sha256", "filename", "rows")),
        )
    }
    run = Run.objects.get(tenant=tenant)
    result = json.loads(run.result_json)
    rows["run"] = [result["money_in_breaks_minor"], result["match_rate"], result["orders"],
                   sorted(Counter((b["kind"], b["amount_minor"], b["currency"]) for b in result["breaks"]).items()),
                   [(d["amount_minor"], d["due_by"]) for d in result["disputes_due"]]]
    return rows


def all_text(tenant: Tenant) -> str:
    parts = []
    for model in (OrderRow, ProviderRow, BankRow, DisputeRow, Run, Break, ImportFile):
        for row in model.objects.filter(tenant=tenant).values():
            parts.append(json.dumps(row, default=str, ensure_ascii=False))
    return "\n".join(parts)


@pytest.fixture
def two_tenants(tenant) -> tuple[Tenant, Tenant]:
    other = tenant_create(slug="other-shop", name="Other shop")
    for t in (tenant, other):
        books(t)
        run_create(tenant=t, as_of=AS_OF, actor="test")
    return tenant, other


def run_cmd(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_the_subject_is_in_the_reconciliation_tables(two_tenants) -> None:
    tenant, _ = two_tenants
    text = all_text(tenant)
    for trace in (EMAIL, ORDER_1, ORDER_2, CHARGE_1, CHARGE_2):
        assert trace.lower() in text.lower(), trace
    breaks = {b.kind for b in Break.objects.filter(tenant=tenant)}
    assert "duplicate_capture" in breaks  # the run repeats CHARGE_2 in its refs


def test_export_by_email_holds_their_orders_and_the_rows_naming_them(two_tenants) -> None:
    tenant, other = two_tenants
    doc = json.loads(run_cmd("gdpr_export", "--tenant", tenant.slug, "--email", EMAIL.lower()))
    orders = doc["records"]["reconciliation.OrderRow"]
    assert sorted(o["order_id"] for o in orders) == [ORDER_1, ORDER_2]  # the bystander's B-1 is not there
    assert {o["tenant_id"] for o in orders} == {tenant.pk}
    mentions = doc["mentions"]
    assert {p["charge_id"] for p in mentions["reconciliation.ProviderRow"]} == {CHARGE_1, CHARGE_2}
    assert [d["dispute_id"] for d in mentions["reconciliation.DisputeRow"]] == ["dp_1"]
    assert REMITTANCE in mentions["reconciliation.BankRow"][0]["remittance"]
    assert len(mentions["reconciliation.Run"]) == 1 and mentions["reconciliation.Break"]
    assert "reconciliation.ImportFile" not in doc["records"]  # a file holds everybody's orders
    event = AuditEvent.objects.filter(event="operations.gdpr.exported").latest("pk")
    assert EMAIL.lower() not in json.dumps(event.detail).lower()
    assert event.detail["counts"]["reconciliation.OrderRow"] == 2


def test_unknown_email_is_refused(two_tenants) -> None:
    with pytest.raises(CommandError, match="no customer or order"):
        run_cmd("gdpr_export", "--tenant", two_tenants[0].slug, "--email", "nobody@example.test")


def test_erase_replaces_identifiers_keeps_every_figure_and_touches_no_other_tenant(two_tenants) -> None:
    tenant, other = two_tenants
    before, other_before = figures(tenant), all_text(other)
    original = json.loads(Run.objects.get(tenant=tenant).result_json)

    out = run_cmd("gdpr_erase", "--tenant", tenant.slug, "--email", EMAIL)
    assert "reconciliation.OrderRow" in out

    text = all_text(tenant)
    for trace in (EMAIL, "Quellwasser", ORDER_2, CHARGE_1, CHARGE_2, pii_hash(EMAIL.lower())):
        assert trace.lower() not in text.lower(), trace
    assert f" {ORDER_1} " not in text and '"100234"' not in text
    assert "100234.50" in BankRow.objects.get(tenant=tenant).remittance  # an amount, not the order id
    assert figures(tenant) == before  # amounts, dates, codes, file digests, the run's numbers
    assert all_text(other) == other_before  # same e-mail and ids in another tenant: untouched

    # Identifiers are replaced consistently: the hashed charge still joins order, capture,
    # dispute and break.
    mine = OrderRow.objects.get(tenant=tenant, amount_minor=5000)
    assert mine.payment_reference == pii_hash(CHARGE_2) and mine.order_id == pii_hash(ORDER_2)
    assert mine.customer_email_hash == ""
    assert ProviderRow.objects.filter(tenant=tenant, charge_id=pii_hash(CHARGE_2)).count() == 2
    assert DisputeRow.objects.get(tenant=tenant).charge_id == pii_hash(CHARGE_2)
    assert OrderRow.objects.get(tenant=tenant, order_id="B-1").customer_email_hash  # the bystander keeps theirs

    run = Run.objects.get(tenant=tenant)
    assert run.result_sha256 == hashlib.sha256(run.result_json.encode()).hexdigest()
    erased = json.loads(run.result_json)
    assert erased["money_in_breaks_minor"] == original["money_in_breaks_minor"]
    dup = next(b for b in Break.objects.filter(tenant=tenant) if b.kind == "duplicate_capture")
    assert CHARGE_2 not in json.dumps(dup.refs) and pii_hash(CHARGE_2) in json.dumps(dup.refs)

    # The next run of the same date computes afresh from the erased rows, with the same
    # figures, and is itself deterministic.
    again, created = run_create(tenant=tenant, as_of=AS_OF, actor="test")
    assert created
    rerun = json.loads(again.result_json)
    assert rerun["money_in_breaks_minor"] == original["money_in_breaks_minor"]
    assert Counter((b["kind"], b["amount_minor"]) for b in rerun["breaks"]) == Counter(
        (b["kind"], b["amount_minor"]) for b in original["breaks"])
    assert run_create(tenant=tenant, as_of=AS_OF, actor="test") == (again, False)

    event = AuditEvent.objects.filter(event="operations.gdpr.erased").latest("pk")
    detail = json.dumps(event.detail).lower()
    for trace in (EMAIL.lower(), ORDER_2.lower(), CHARGE_2.lower()):
        assert trace not in detail


def test_dry_run_changes_nothing(two_tenants) -> None:
    tenant, _ = two_tenants
    before = all_text(tenant)
    out = run_cmd("gdpr_erase", "--tenant", tenant.slug, "--email", EMAIL, "--dry-run")
    assert "reconciliation.OrderRow" in out
    assert all_text(tenant) == before


def test_retention_unlinks_old_orders_from_their_email_and_keeps_the_books(two_tenants, settings) -> None:
    tenant, other = two_tenants
    settings.PAYPILOT_RETENTION_MONTHS = 12
    before = figures(tenant)
    # 2026-11 orders are older than 12 months on 2028-01-01, newer on 2027-06-01.
    from datetime import UTC, datetime

    kept = retention_purge(now=datetime(2027, 6, 1, tzinfo=UTC))
    assert "reconciliation.OrderRow.customer_email_hash" not in kept.counts
    purged = retention_purge(now=datetime(2028, 1, 1, tzinfo=UTC))
    assert purged.counts["reconciliation.OrderRow.customer_email_hash"] == 6  # 3 orders x 2 tenants
    assert not OrderRow.objects.exclude(customer_email_hash="").exists()
    assert figures(tenant) == before  # rows, files and the run stay
    assert Run.objects.count() == 2


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row-level security exists on PostgreSQL only")
def test_erase_under_row_level_security_stays_in_its_tenant(two_tenants) -> None:
    from paypilot.rls import rls_apply

    rls_apply()
    tenant, other = two_tenants
    other_before = all_text(other)
    run_cmd("gdpr_erase", "--tenant", tenant.slug, "--email", EMAIL)
    assert EMAIL.lower() not in all_text(tenant).lower()
    assert all_text(other) == other_before
