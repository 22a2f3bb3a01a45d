"""Admin: upload with preview and Confirm, contract versions (add only), the payments review page,
assign / resolve (audited), and tenant scoping."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from paypilot.models import AuditEvent
from reconciliation.models import Break, ContractVersion, ImportFile, Layout, OrderRow
from reconciliation.services.runs import run_create
from reconciliation.tests.factories import load, order

pytestmark = pytest.mark.django_db
EXPORTS = Path(__file__).resolve().parents[1] / "sample" / "exports"


def staff(tenant, username: str = "ops") -> Client:
    user = get_user_model().objects.create_user(username=username, password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="reconciliation"))
    membership = get_user_model()._meta.get_field("admin_membership").related_model
    membership.objects.create(user=user, tenant=tenant)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def run(tenant):
    load(tenant, "orders", [order("M-1", 3000), order("M-2", 1000)])
    return run_create(tenant=tenant, as_of=date(2026, 11, 16), actor="test")[0]


def test_upload_unknown_layout_previews_then_confirm_imports(tenant) -> None:
    client = staff(tenant)
    data = (EXPORTS / "shop_orders.csv").read_bytes()
    page = client.post("/admin/reconciliation/importfile/upload/",
                       {"kind": "orders", "file": SimpleUploadedFile("shop.csv", data)})
    assert page.status_code == 200 and b"Confirm" in page.content and b"NW-1001" in page.content
    assert not ImportFile.objects.exists()
    mapping = page.context["mapping_json"]
    done = client.post("/admin/reconciliation/importfile/confirm/", {
        "tenant": tenant.pk, "kind": "orders", "digest": page.context["digest"], "name": "shop.csv",
        "mapping": mapping})
    assert done.status_code == 302
    assert Layout.objects.filter(tenant=tenant, kind="orders").count() == 1
    assert OrderRow.objects.filter(tenant=tenant).count() == 12


def test_upload_recognised_files_import_in_one_step_and_refusals_are_shown(tenant) -> None:
    client = staff(tenant)
    data = (EXPORTS / "bank_statement.camt053.xml").read_bytes()
    first = client.post("/admin/reconciliation/importfile/upload/",
                        {"kind": "bank", "file": SimpleUploadedFile("b.xml", data)})
    assert first.status_code == 302 and ImportFile.objects.get().rows == 5
    again = client.post("/admin/reconciliation/importfile/upload/",
                        {"kind": "bank", "file": SimpleUploadedFile("b.xml", data)})
    assert b"duplicate_file" in again.content


@override_settings(PAYPILOT_RECON_MAX_FILE_BYTES=1000)
def test_upload_is_size_limited(tenant) -> None:
    page = staff(tenant).post("/admin/reconciliation/importfile/upload/",
                              {"kind": "orders", "file": SimpleUploadedFile("big.csv", b"a,b\n" * 1000)})
    assert b"file_too_large" in page.content and not ImportFile.objects.exists()


def test_contract_added_in_the_admin_is_a_new_version_never_an_edit(tenant) -> None:
    client = staff(tenant)
    form = {"tenant": tenant.pk, "currency": "usd", "effective_from": "2026-10-01", "percent": "2.9",
            "fixed": "0.30", "chargeback_fee": "15.00", "payout_delay_days": "2"}
    assert client.post("/admin/reconciliation/contractversion/add/", form).status_code == 302
    assert client.post("/admin/reconciliation/contractversion/add/", {**form, "percent": "2.5"}).status_code == 302
    assert list(ContractVersion.objects.values_list("version", "percent_micro", "fixed_minor")) == [
        (1, 29000, 30), (2, 25000, 30)]
    bad = client.post("/admin/reconciliation/contractversion/add/", {**form, "percent": "29"})
    assert bad.status_code == 200 and ContractVersion.objects.count() == 2
    first = ContractVersion.objects.get(version=1)
    client.post(f"/admin/reconciliation/contractversion/{first.pk}/change/", {**form, "percent": "1.0"})
    first.refresh_from_db()
    assert first.percent_micro == 29000


def test_review_page_shows_the_run_and_assign_resolve_are_audited(tenant, run) -> None:
    client = staff(tenant)
    page = client.get(f"/admin/reconciliation/run/{run.pk}/change/")
    assert page.status_code == 200 and b"Payments review" in page.content and b"M-1" in page.content
    assert client.get("/admin/reconciliation/run/review/").status_code == 302
    brk = run.breaks.get(position=0)
    url = f"/admin/reconciliation/run/{run.pk}/break/{brk.pk}/"
    assert client.post(url, {"_assign": "1"}).status_code == 302
    assert client.post(url, {"_resolve": "1", "note": "paid by bank transfer"}).status_code == 302
    brk.refresh_from_db()
    assert brk.status == "resolved" and brk.assignee.username == "ops" and brk.resolution_note
    assert AuditEvent.objects.filter(event__in=["reconciliation.break.assigned",
                                                "reconciliation.break.resolved"]).count() == 2
    csv_page = client.get(f"/admin/reconciliation/run/{run.pk}/csv/")
    assert csv_page.status_code == 200 and b"missing_capture" in csv_page.content


def test_break_actions_resolve_with_a_note_after_asking(tenant, run) -> None:
    client = staff(tenant)
    ids = [str(b.pk) for b in run.breaks.all()]
    ask = client.post("/admin/reconciliation/break/", {"action": "resolve_selected", "_selected_action": ids})
    assert ask.status_code == 200 and b"Resolve" in ask.content
    assert Break.objects.filter(status="open").count() == 2
    client.post("/admin/reconciliation/break/", {"action": "resolve_selected", "_selected_action": ids,
                                                 "note": "written off"})
    assert Break.objects.filter(status="resolved").count() == 2
    client.post("/admin/reconciliation/break/", {"action": "assign_to_me", "_selected_action": ids})
    assert Break.objects.filter(assignee__username="ops").count() == 2


def test_another_tenants_staff_sees_nothing(tenant, other_tenant, run) -> None:
    client = staff(other_tenant, "rival")
    assert client.get(f"/admin/reconciliation/run/{run.pk}/change/").status_code == 404
    assert client.get(f"/admin/reconciliation/run/{run.pk}/csv/").status_code == 404
    brk = run.breaks.first()
    assert client.post(f"/admin/reconciliation/run/{run.pk}/break/{brk.pk}/", {"_assign": "1"}).status_code == 404
    assert list(client.get("/admin/reconciliation/break/").context["cl"].result_list) == []
    brk.refresh_from_db()
    assert brk.assignee is None


@pytest.mark.parametrize(("name", "kind", "file_format", "rows"), [
    ("adyen_settlement_details.csv", "provider", "adyen_settlement", 5),
    ("paypal_settlement_STL.csv", "provider", "paypal_stl", 3),
    ("braintree_transaction_level_fees.csv", "provider", "braintree_fees", 4),
    ("bank_notification.camt054.xml", "bank", "camt054", 2),
    ("bank_statement.bai2", "bank", "bai2", 2),
])
def test_upload_every_other_recognised_format_in_one_step(tenant, name, kind, file_format, rows) -> None:
    data = (EXPORTS / "formats" / name).read_bytes()
    page = staff(tenant).post("/admin/reconciliation/importfile/upload/",
                              {"kind": kind, "file": SimpleUploadedFile(name, data)})
    assert page.status_code == 302
    imported = ImportFile.objects.get(tenant=tenant)
    assert (imported.file_format, imported.rows) == (file_format, rows)


def test_upload_a_bank_csv_through_its_confirmed_layout_and_hostile_files_refused_with_the_line(tenant) -> None:
    import json

    from reconciliation.services.imports import layout_save

    data = (EXPORTS / "formats" / "bank_export.csv").read_bytes()
    mapping = json.loads((EXPORTS / "formats" / "bank.mapping.json").read_text())
    layout_save(tenant=tenant, kind="bank", mapping=mapping, sample=data, actor="test")
    client = staff(tenant)
    page = client.post("/admin/reconciliation/importfile/upload/",
                       {"kind": "bank", "file": SimpleUploadedFile("bank.csv", data)})
    assert page.status_code == 302 and ImportFile.objects.get(tenant=tenant).file_format == "layout"
    bai2 = (EXPORTS / "formats" / "bank_statement.bai2").read_text().replace("49,2022932,5/", "49,2022933,5/")
    page = client.post("/admin/reconciliation/importfile/upload/",
                       {"kind": "bank", "file": SimpleUploadedFile("cut.bai2", bai2.encode())})
    assert b"Refused (count_mismatch)" in page.content and b"line 7, column 49" in page.content
    paypal = (EXPORTS / "formats" / "paypal_settlement_STL.csv").read_bytes()
    page = client.post("/admin/reconciliation/importfile/upload/",
                       {"kind": "bank", "file": SimpleUploadedFile("stl.csv", paypal)})
    assert b"wrong_kind_for_format" in page.content and ImportFile.objects.count() == 1
