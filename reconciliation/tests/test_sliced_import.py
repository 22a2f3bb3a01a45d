"""A large CSV is read by the columnar reader in byte slices (PAYPILOT_RECON_IMPORT_SLICE_BYTES):
a tiny slice size forces many slices, and what is stored (or refused) must equal the
one-slice import exactly, line numbers included."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from reconciliation import columnar_chunks
from reconciliation.formats import FileRefused
from reconciliation.models import ImportFile, OrderRow, ProviderRow
from reconciliation.services import imports
from reconciliation.services.imports import file_import, layout_save

EXPORTS = Path(__file__).resolve().parents[1] / "sample" / "exports"
STRIPE_HEADER = ("balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,"
                 "description,automatic_payout_id,automatic_payout_effective_at_utc,charge_id,"
                 "payment_metadata[order_id]")
SHOP_HEADER = "Bestellnummer;Bestelldatum;Gesamt;Währung;Zahlungsreferenz;E-Mail;Status"


def _stripe(n: int, *, newline_at: int | None = None, eol: str = "\n") -> bytes:
    lines = [STRIPE_HEADER]
    for i in range(n):
        text = f'"line {i}\nsecond line"' if i == newline_at else ('"a, quoted ""one"""' if i % 7 == 0 else "")
        lines.append(f"txn_{i},2026-11-02 10:{i % 60:02d}:00,usd,{10 + i}.50,0.{i % 90 + 10},{9 + i}.{90 - i % 90:02d},"
                     f"charge,ch_{i},{text},po_{i // 50},2026-11-06 00:00:00,ch_{i},\"O-{i},x\"")
    return (eol.join(lines) + eol).encode()


def _shop(n: int, *, eol: str = "\r\n", bom: bool = True) -> bytes:
    lines = [SHOP_HEADER] + [f"NW-{i};03/11/2026 09:{i % 60:02d};{i},{i % 100:02d};USD;ch_{i};p{i}@example.com;paid"
                             for i in range(n)]
    return (b"\xef\xbb\xbf" if bom else b"") + (eol.join(lines) + eol).encode()


def _rows(model: Any, tenant: Any) -> list[tuple]:
    fields = [f.column for f in model._meta.concrete_fields if f.column not in ("id", "tenant_id", "file_id")]
    return list(model.objects.filter(tenant=tenant).order_by("line").values_list(*fields))


@pytest.fixture
def slices(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many slices each import's columnar pass read (one entry per import)."""
    counts: list[int] = []
    original = imports.sliced_columns

    def counting(stream, convert):  # type: ignore[no-untyped-def]
        counts.append(0)
        for columns in original(stream, convert):
            counts[-1] += 1
            yield columns

    monkeypatch.setattr(imports, "sliced_columns", counting)
    return counts


def _import_both(tenant, other_tenant, settings, kind: str, data: bytes, mapping: dict | None,  # type: ignore[no-untyped-def]
                 size: int = 256) -> list[Any]:
    """The file imported whole (one slice) for `tenant`, in `size`-byte slices for `other_tenant`."""
    outcomes: list[Any] = []
    for who, slice_bytes in ((tenant, 10**9), (other_tenant, size)):
        settings.PAYPILOT_RECON_IMPORT_SLICE_BYTES = slice_bytes
        if mapping is not None:
            layout_save(tenant=who, kind=kind, mapping=mapping, sample=data[:2000].rsplit(b"\n", 1)[0], actor="t")
        try:
            batch = file_import(tenant=who, kind=kind, filename="f.csv", data=data, actor="test")
            outcomes.append((batch.rows, batch.file_format, _rows(ProviderRow if kind == "provider" else OrderRow,
                                                                   who)))
        except FileRefused as refused:
            outcomes.append(refused.as_dict())
    return outcomes


@pytest.mark.django_db
def test_a_stripe_report_in_many_slices_stores_what_one_slice_stores(tenant, other_tenant, settings,  # type: ignore[no-untyped-def]
                                                                      slices) -> None:
    data = _stripe(400)
    whole, sliced = _import_both(tenant, other_tenant, settings, "provider", data, None)
    assert slices[0] == 1 and slices[1] > 50  # the columnar path took both, in 1 and in many slices
    assert whole == sliced and whole[0] == 400
    assert sliced[2][-1][0] == 401  # line numbers run on across slices


@pytest.mark.django_db
def test_a_layout_csv_with_bom_and_crlf_in_many_slices(tenant, other_tenant, settings, slices) -> None:  # type: ignore[no-untyped-def]
    data = _shop(300)
    mapping = json.loads((EXPORTS / "orders.mapping.json").read_text())
    whole, sliced = _import_both(tenant, other_tenant, settings, "orders", data, mapping, size=100)
    assert slices[0] == 1 and slices[1] > 50
    assert whole == sliced and whole[0] == 300
    assert sliced[2][0][:2] == (2, "NW-0")  # the BOM is not part of the first header, nor of the first id


@pytest.mark.django_db
def test_a_quoted_newline_across_a_slice_boundary_is_one_cell(tenant, other_tenant, settings, slices) -> None:  # type: ignore[no-untyped-def]
    # The columnar grammar declines a cell with a newline (the row parser then reads the
    # file); the slices before it are rolled back, so nothing is stored twice.
    data = _stripe(200, newline_at=150)
    whole, sliced = _import_both(tenant, other_tenant, settings, "provider", data, None)
    assert slices[1] > 10  # slices were inserted before the one that declined
    assert whole == sliced and whole[0] == 200
    assert [r for r in sliced[2] if r[1] == "txn_150"][0][0] == 153  # the row parser numbers a record by its last line
    assert ProviderRow.objects.filter(tenant=other_tenant).count() == 200


def test_slices_never_cut_inside_quotes() -> None:
    data = _stripe(60, newline_at=20, eol="\r\n")
    pieces = list(columnar_chunks.record_slices(io.BytesIO(data), 97))
    header = data.split(b"\r\n", 1)[0] + b"\r\n"
    assert len(pieces) > 10 and all(p.startswith(header) for p in pieces)
    assert header + b"".join(p[len(header):] for p in pieces) == data
    width = len(STRIPE_HEADER.split(","))
    for piece in pieces:
        rows = list(csv.reader(io.StringIO(piece.decode(), newline="")))
        assert all(len(r) == width for r in rows)


def test_a_header_only_file_and_a_file_without_a_final_newline() -> None:
    assert list(columnar_chunks.record_slices(io.BytesIO(b"a,b\n"), 4)) == [b"a,b\n"]
    assert list(columnar_chunks.record_slices(io.BytesIO(b"a,b"), 4)) == [b"a,b"]
    assert list(columnar_chunks.record_slices(io.BytesIO(b"a,b\n1,2\n3,4"), 4)) == [b"a,b\n1,2\n", b"a,b\n3,4"]


@pytest.mark.django_db
def test_a_header_only_stripe_report_imports_no_rows_both_ways(tenant, other_tenant, settings, slices) -> None:  # type: ignore[no-untyped-def]
    whole, sliced = _import_both(tenant, other_tenant, settings, "provider", (STRIPE_HEADER + "\n").encode(), None,
                                 size=8)
    assert whole == sliced == (0, "stripe_report", [])


@pytest.mark.django_db
def test_a_bad_row_in_a_late_slice_refuses_the_file_like_one_slice(tenant, other_tenant, settings, slices) -> None:  # type: ignore[no-untyped-def]
    data = _stripe(300).replace(b",usd,260.50,", b",usd,26O.50,")
    whole, sliced = _import_both(tenant, other_tenant, settings, "provider", data, None)
    assert whole == sliced and sliced["reason"] == "bad_amount" and sliced["line"] == 252
    assert not ProviderRow.objects.filter(tenant=other_tenant).exists()
    assert not ImportFile.objects.filter(tenant=other_tenant).exists()


@pytest.mark.django_db
def test_an_import_from_a_path_equals_one_from_bytes(tenant, other_tenant, settings, tmp_path, slices) -> None:  # type: ignore[no-untyped-def]
    data = _stripe(300)
    path = tmp_path / "stripe.csv"
    path.write_bytes(data)
    settings.PAYPILOT_RECON_IMPORT_SLICE_BYTES = 512
    a = file_import(tenant=tenant, kind="provider", filename="s.csv", data=data, actor="t")
    b = file_import(tenant=other_tenant, kind="provider", filename="s.csv", path=path, actor="t")
    assert (a.sha256, a.rows, a.size_bytes) == (b.sha256, b.rows, b.size_bytes)
    assert _rows(ProviderRow, tenant) == _rows(ProviderRow, other_tenant)
    assert slices[1] > 20
    with pytest.raises(FileRefused) as again:
        file_import(tenant=tenant, kind="provider", filename="s.csv", path=path, actor="t")
    assert again.value.reason == "duplicate_file"
    blank = tmp_path / "blank.csv"
    blank.write_bytes(b" \n\n")
    with pytest.raises(FileRefused) as empty:
        file_import(tenant=tenant, kind="provider", filename="b.csv", path=blank, actor="t")
    assert empty.value.reason == "empty_file"


@pytest.mark.django_db
def test_the_preview_reads_no_columnar_pass_and_only_the_rows_it_shows(tenant, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from reconciliation import columnar

    def no_columnar(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("the preview converted the whole file to columns")

    monkeypatch.setattr(columnar, "stripe_columns", no_columnar)
    data = _stripe(300).replace(b",usd,260.50,", b",usd,26O.50,")  # a bad row far below the preview
    parsed, layout = imports.file_detect(tenant=tenant, kind="provider", data=data)
    first = next(iter(parsed.rows))
    assert layout is None and parsed.file_format == "stripe_report"
    assert first["transaction_id"] == "txn_0" and first["line"] == 2


@pytest.mark.django_db
def test_recon_import_streams_a_large_csv_from_its_path(tenant, settings, tmp_path, monkeypatch, slices) -> None:  # type: ignore[no-untyped-def]
    from django.core.management import call_command

    path = tmp_path / "stripe.csv"
    path.write_bytes(_stripe(300))
    settings.PAYPILOT_RECON_IMPORT_SLICE_BYTES = 1024

    def whole(_self: Path) -> bytes:
        raise AssertionError("the whole file was read")

    monkeypatch.setattr(Path, "read_bytes", whole)
    out = io.StringIO()
    call_command("recon_import", "--tenant", tenant.slug, "--kind", "provider", str(path), stdout=out)
    assert json.loads(out.getvalue())["rows"] == 300 and slices == [slices[0]] and slices[0] > 10
    assert ProviderRow.objects.filter(tenant=tenant).count() == 300
