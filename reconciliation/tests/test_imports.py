"""Imports: stored once per tenant, all or nothing, size-limited, layouts confirmed once."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from paypilot.models import AuditEvent
from reconciliation.formats import FileRefused
from reconciliation.models import ImportFile, Layout, OrderRow, ProviderRow
from reconciliation.services.imports import file_import, layout_save

pytestmark = pytest.mark.django_db

EXPORTS = Path(__file__).resolve().parents[1] / "sample" / "exports"
ORDERS_CSV = "Order,Date,Total,Currency\nA-1,2026-11-01 10:00,10.00,USD\nA-2,2026-11-02 11:00,20.50,USD\n"
MAPPING = {"columns": {"order_id": "Order", "ordered_at": "Date", "amount": "Total", "currency": "Currency"},
           "date_format": "%Y-%m-%d %H:%M", "decimal_separator": "."}


def test_stripe_report_imports_with_no_mapping_and_only_once(tenant) -> None:
    data = (EXPORTS / "stripe_payout_reconciliation.csv").read_bytes()
    batch = file_import(tenant=tenant, kind="provider", filename="r.csv", data=data, actor="test")
    assert (batch.file_format, batch.rows) == ("stripe_report", 14)
    assert ProviderRow.objects.filter(file=batch).count() == 14
    assert AuditEvent.objects.filter(event="reconciliation.file.imported", tenant=tenant).count() == 1
    with pytest.raises(FileRefused) as caught:
        file_import(tenant=tenant, kind="provider", filename="again.csv", data=data, actor="test")
    assert caught.value.reason == "duplicate_file" and f"batch {batch.pk}" in caught.value.message
    assert ImportFile.objects.filter(tenant=tenant).count() == 1


def test_the_same_file_is_a_new_file_for_another_tenant(tenant, other_tenant) -> None:
    data = (EXPORTS / "stripe_payout_reconciliation.csv").read_bytes()
    file_import(tenant=tenant, kind="provider", filename="r.csv", data=data, actor="test")
    file_import(tenant=other_tenant, kind="provider", filename="r.csv", data=data, actor="test")
    assert ProviderRow.objects.filter(tenant=other_tenant).count() == 14


def test_unknown_layout_is_refused_naming_the_suggest_command(tenant) -> None:
    with pytest.raises(FileRefused) as caught:
        file_import(tenant=tenant, kind="orders", filename="o.csv", data=ORDERS_CSV.encode(), actor="test")
    assert caught.value.reason == "unknown_layout"
    assert "recon_layout suggest --kind orders" in caught.value.message
    assert not ImportFile.objects.exists()


def test_confirmed_layout_then_later_files_with_that_header_import_in_one_step(tenant) -> None:
    layout, preview = layout_save(tenant=tenant, kind="orders", mapping=MAPPING, sample=ORDERS_CSV.encode(),
                                  actor="test")
    assert preview[1]["amount_minor"] == 2050
    later = ORDERS_CSV + "A-3,2026-11-03 09:00,5.00,USD\n"
    batch = file_import(tenant=tenant, kind="orders", filename="o.csv", data=later.encode(), actor="test")
    assert (batch.layout, batch.rows) == (layout, 3)
    assert sorted(OrderRow.objects.values_list("order_id", "amount_minor")) == [
        ("A-1", 1000), ("A-2", 2050), ("A-3", 500)]


def test_a_bad_row_fails_the_whole_file_with_line_column_and_reason(tenant) -> None:
    layout_save(tenant=tenant, kind="orders", mapping=MAPPING, sample=ORDERS_CSV.encode(), actor="test")
    bad = ORDERS_CSV + "A-3,2026-11-03 09:00,5.00,USD\nA-4,03/11/2026,7.00,USD\n"
    with pytest.raises(FileRefused) as caught:
        file_import(tenant=tenant, kind="orders", filename="o.csv", data=bad.encode(), actor="test")
    assert (caught.value.reason, caught.value.line, caught.value.column) == ("bad_date", 5, "Date")
    assert not OrderRow.objects.exists() and not ImportFile.objects.exists()


def test_layout_save_refuses_a_mapping_without_date_format(tenant) -> None:
    with pytest.raises(FileRefused) as caught:
        layout_save(tenant=tenant, kind="orders", mapping={**MAPPING, "date_format": ""},
                    sample=ORDERS_CSV.encode(), actor="test")
    assert caught.value.reason == "bad_mapping" and "never guessed" in caught.value.message
    assert not Layout.objects.exists()


def test_a_50_mb_csv_is_refused_before_it_is_read(tenant, tmp_path) -> None:
    big = tmp_path / "big.csv"
    with big.open("wb") as f:
        f.write(b"Order,Date,Total,Currency\n")
        f.write(b"A-1,2026-11-01 10:00,10.00,USD\n" * (50 * 1024 * 1024 // 31 + 1))
    assert big.stat().st_size > 50 * 1024 * 1024
    err = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("recon_import", "--tenant", tenant.slug, "--kind", "orders", str(big), stderr=err)
    assert json.loads(str(caught.value))["reason"] == "file_too_large"
    with pytest.raises(FileRefused) as direct:
        file_import(tenant=tenant, kind="orders", filename="big.csv", data=big.read_bytes(), actor="test")
    assert direct.value.reason == "file_too_large"
    assert not ImportFile.objects.exists()


@override_settings(PAYPILOT_RECON_MAX_FILE_BYTES=100)
def test_the_limit_is_a_setting(tenant) -> None:
    with pytest.raises(FileRefused) as caught:
        file_import(tenant=tenant, kind="orders", filename="o.csv", data=ORDERS_CSV.encode() * 2, actor="test")
    assert caught.value.reason == "file_too_large"


def test_xml_only_as_bank_and_stripe_report_only_as_provider(tenant) -> None:
    xml = (EXPORTS / "bank_statement.camt053.xml").read_bytes()
    with pytest.raises(FileRefused) as caught:
        file_import(tenant=tenant, kind="orders", filename="b.xml", data=xml, actor="test")
    assert caught.value.reason == "wrong_kind_for_format"
    assert file_import(tenant=tenant, kind="bank", filename="b.xml", data=xml, actor="test").rows == 5


def test_formula_cells_are_stored_as_text_never_evaluated(tenant) -> None:
    layout_save(tenant=tenant, kind="orders", mapping=MAPPING, sample=ORDERS_CSV.encode(), actor="test")
    hostile = ORDERS_CSV + '"=HYPERLINK(""http://evil.example/"",""x"")",2026-11-03 09:00,5.00,USD\n'
    file_import(tenant=tenant, kind="orders", filename="o.csv", data=hostile.encode(), actor="test")
    assert OrderRow.objects.filter(order_id__startswith="=HYPERLINK(").count() == 1


def test_commands_print_json_and_exit_non_zero_on_refusal(tenant, tmp_path) -> None:
    out = StringIO()
    call_command("recon_import", "--tenant", tenant.slug, "--kind", "bank",
                 str(EXPORTS / "bank_statement.camt053.xml"), stdout=out)
    body = json.loads(out.getvalue())
    assert body["rows"] == 5 and body["format"] == "camt053" and isinstance(body["batch"], int)
    with pytest.raises(CommandError) as caught:
        call_command("recon_import", "--tenant", tenant.slug, "--kind", "bank",
                     str(EXPORTS / "bank_statement.camt053.xml"))
    assert json.loads(str(caught.value))["reason"] == "duplicate_file"
    suggest = StringIO()
    call_command("recon_layout", "suggest", "--kind", "orders", str(EXPORTS / "shop_orders.csv"), stdout=suggest)
    # The keys are the contract; `sources` and `model` say where each column came from.
    assert set(json.loads(suggest.getvalue())) == {"kind", "columns", "date_format", "decimal_separator",
                                                   "delimiter", "confidence", "preview", "sources", "model"}
    saved = StringIO()
    call_command("recon_layout", "save", "--tenant", tenant.slug, "--kind", "orders",
                 "--mapping", str(EXPORTS / "orders.mapping.json"), "--sample", str(EXPORTS / "shop_orders.csv"),
                 stdout=saved)
    assert json.loads(saved.getvalue())["kind"] == "orders"


MT940 = """:20:STARTUMS
:25:DE12345678901234567890
:28C:00001/001
:60F:C261110EUR1000,00
:61:2611121112C146,75NTRFNONREF//EB1
:86:ADYEN N.V. ADY-BATCH-000123
:61:2611131114D1800,00NTRFRENT-11//EB2
:86:RENT NOVEMBER
:62F:D261113EUR653,25
-
"""


def test_mt940_statement_imports_as_bank_with_no_mapping(tenant) -> None:
    from reconciliation.models import BankRow

    batch = file_import(tenant=tenant, kind="bank", filename="s.sta", data=MT940.encode(), actor="test")
    assert (batch.file_format, batch.rows) == ("mt940", 2)
    rows = list(BankRow.objects.order_by("line").values_list(
        "booking_date", "value_date", "amount_minor", "currency", "reference", "remittance", "bank_reference"))
    from datetime import date

    assert rows == [
        (date(2026, 11, 12), date(2026, 11, 12), 14675, "EUR", "", "ADYEN N.V. ADY-BATCH-000123", "EB1"),
        (date(2026, 11, 14), date(2026, 11, 13), -180000, "EUR", "RENT-11", "RENT NOVEMBER", "EB2"),
    ]
    with pytest.raises(FileRefused) as caught:
        file_import(tenant=tenant, kind="orders", filename="s2.sta", data=MT940.encode() + b"\n", actor="test")
    assert caught.value.reason == "wrong_kind_for_format"


def test_a_broken_mt940_statement_is_refused_whole(tenant) -> None:
    broken = MT940.replace("C146,75", "C14x6,75")
    with pytest.raises(FileRefused):
        file_import(tenant=tenant, kind="bank", filename="s.sta", data=broken.encode(), actor="test")
    assert not ImportFile.objects.exists()


def test_a_file_that_is_not_utf8_is_refused_with_its_line(tenant) -> None:
    layout_save(tenant=tenant, kind="orders", mapping=MAPPING, sample=ORDERS_CSV.encode(), actor="test")
    latin1 = (ORDERS_CSV + "A-3,2026-11-03 09:00,5.00,USD\nMüller,2026-11-03 09:00,5.00,USD\n").encode("latin-1")
    with pytest.raises(FileRefused) as caught:
        file_import(tenant=tenant, kind="orders", filename="o.csv", data=latin1, actor="test")
    assert caught.value.reason == "bad_encoding" and not ImportFile.objects.exists()


def test_deleting_a_file_takes_its_rows_and_only_its_rows(tenant, other_tenant) -> None:
    # The bulk row tables keep no database foreign key (models.BULK_ROW_KEY): the cascade is
    # Django's, and it must still reach every row of the file and nothing else.
    data = (EXPORTS / "stripe_payout_reconciliation.csv").read_bytes()
    gone = file_import(tenant=tenant, kind="provider", filename="r.csv", data=data, actor="test")
    layout_save(tenant=tenant, kind="orders", mapping=MAPPING, sample=ORDERS_CSV.encode(), actor="test")
    orders = file_import(tenant=tenant, kind="orders", filename="o.csv", data=ORDERS_CSV.encode(), actor="test")
    kept = file_import(tenant=other_tenant, kind="provider", filename="r.csv", data=data, actor="test")
    ImportFile.objects.filter(pk=gone.pk).delete()
    assert not ProviderRow.objects.filter(file_id=gone.pk).exists()
    assert ProviderRow.objects.filter(file=kept).count() == 14
    assert OrderRow.objects.filter(file=orders).count() == 2
