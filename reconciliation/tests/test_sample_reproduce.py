"""The sample workspace: demo_setup loads it into its own tenant, and the export files of the
same data, imported into an empty tenant through the documented commands, reproduce it exactly."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from paypilot.models import Tenant
from paypilot.services import tenant_create
from reconciliation.models import ImportFile, OrderRow, Run
from reconciliation.services.sample import FORMAT_FILES, sample_load, sample_workspace

pytestmark = pytest.mark.django_db
EXPORTS = Path(__file__).resolve().parents[1] / "sample" / "exports"


def _cmd(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_the_sample_holds_the_seven_planted_problems_and_the_linked_dispute() -> None:
    _, run = sample_load(actor="test")
    result = json.loads(run.result_json)
    assert sorted(b["kind"] for b in result["breaks"]) == sorted([
        "duplicate_capture", "fee_mismatch", "payout_short", "payout_missing", "missing_capture",
        "capture_without_order", "amount_mismatch"])
    short = next(b for b in result["breaks"] if b["kind"] == "payout_short")
    assert short["amount_minor"] == -1250
    (due,) = result["disputes_due"]
    assert due["days_left"] == 2 and due["linked_break"]["kind"] == "duplicate_capture"
    assert due["requires_human_decision"] is True


def test_exports_into_an_empty_tenant_reproduce_the_sample_exactly() -> None:
    _, sample_run = sample_load(actor="test")
    target = tenant_create(slug="fresh", name="Fresh")
    contract = sample_workspace()["contract"]
    _cmd("recon_contract", "add", "--tenant", "fresh", "--currency", contract["currency"],
         "--effective-from", contract["effective_from"], "--percent", contract["percent"],
         "--fixed", contract["fixed"], "--chargeback-fee", contract["chargeback_fee"],
         "--payout-delay-days", str(contract["payout_delay_days"]))
    _cmd("recon_import", "--tenant", "fresh", "--kind", "provider", str(EXPORTS / "stripe_payout_reconciliation.csv"))
    _cmd("recon_import", "--tenant", "fresh", "--kind", "bank", str(EXPORTS / "bank_statement.camt053.xml"))
    for kind, name in (("orders", "shop_orders.csv"), ("disputes", "disputes.csv")):
        _cmd("recon_layout", "save", "--tenant", "fresh", "--kind", kind,
             "--mapping", str(EXPORTS / f"{kind}.mapping.json"), "--sample", str(EXPORTS / name))
        _cmd("recon_import", "--tenant", "fresh", "--kind", kind, str(EXPORTS / name))
    # One file of each other format, through the same command (the readers recognise them).
    for kind, name, mapping in FORMAT_FILES:
        if mapping is not None:
            _cmd("recon_layout", "save", "--tenant", "fresh", "--kind", kind, "--mapping", str(EXPORTS / mapping),
                 "--sample", str(EXPORTS / name))
        _cmd("recon_import", "--tenant", "fresh", "--kind", kind, str(EXPORTS / name))
    printed = _cmd("recon_run", "--tenant", "fresh", "--as-of", sample_workspace()["as_of"], "--json")
    assert printed == sample_run.result_json + "\n"  # the stored JSON, then a newline
    assert set(ImportFile.objects.filter(tenant=target).values_list("file_format", flat=True)) == {
        "stripe_report", "camt053", "layout", "camt054", "bai2", "adyen_settlement", "paypal_stl", "braintree_fees"}
    fresh_run = Run.objects.get(tenant=target)
    assert fresh_run.input_digest != sample_run.input_digest  # different files, same books


@override_settings(PAYPILOT_DEMO_TENANT="demo-r")
def test_demo_setup_loads_the_sample_and_gives_the_demo_tenant_a_run_from_the_exports_once(client) -> None:
    first = _cmd("demo_setup")
    assert "reconciliation sample loaded into tenant sample" in first
    sample = Tenant.objects.get(slug="sample")
    demo = Tenant.objects.get(slug="demo-r")
    extra = sum(1 for _ in (EXPORTS / "formats" / "shop_orders_more.csv").open(encoding="utf-8")) - 1
    assert OrderRow.objects.filter(tenant=sample).count() == len(sample_workspace()["orders"]) + extra
    # The demo tenant's books come from the export files alone, every format, and its run is
    # the sample's review exactly.
    assert set(ImportFile.objects.filter(tenant=demo).values_list("file_format", flat=True)) == {
        "stripe_report", "camt053", "layout", "camt054", "bai2", "adyen_settlement", "paypal_stl", "braintree_fees"}
    demo_run = Run.objects.get(tenant=demo)
    assert demo_run.result_json == Run.objects.get(tenant=sample).result_json and demo_run.breaks_count == 7
    counts = (ImportFile.objects.count(), Run.objects.count())
    _cmd("demo_setup")
    assert (ImportFile.objects.count(), Run.objects.count()) == counts
    # First visit: the home page's card and the payments review show that run.
    client.force_login(User.objects.get(username="admin"))
    home = client.get(reverse("admin:index"), {"tenant": "demo-r"}).content.decode()
    assert "No reconciliation run yet" not in home
    assert "Payments reconciliation (as of 2026-11-16)" in home
    review = client.get(reverse("admin:reconciliation_run_change", args=[demo_run.pk]))
    assert review.status_code == 200
    page = review.content.decode()
    assert "payout_short" in page and "po_1NwB0002" in page


def test_recon_sample_loads_one_file_of_each_format_once() -> None:
    first = json.loads(_cmd("recon_sample"))
    assert first["tenant"] == "sample" and first["breaks"] == 7 and first["as_of"] == "2026-11-16"
    assert first["formats"] == ["adyen_settlement", "bai2", "braintree_fees", "camt054", "layout", "paypal_stl",
                                "sample"]
    counts = (ImportFile.objects.count(), Run.objects.count())
    assert json.loads(_cmd("recon_sample")) == first and (ImportFile.objects.count(), Run.objects.count()) == counts
    tenant_create(slug="trial", name="Trial")
    into = json.loads(_cmd("recon_sample", "--into", "trial"))
    assert into["breaks"] == 7 and "stripe_report" in into["formats"] and "camt053" in into["formats"]
