"""The columnar reader (polars) against the row parser it stands in for: it either produces
exactly the row parser's values or declines, never a different value or a refusal."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reconciliation import columnar
from reconciliation.formats import FileRefused, LayoutSpec, amount_to_minor, csv_rows, parse_when
from reconciliation.models import BankRow, DisputeRow, OrderRow, ProviderRow
from reconciliation.services import imports
from reconciliation.services.imports import file_import, layout_save

EXPORTS = Path(__file__).resolve().parents[1] / "sample" / "exports"
CASES = Path(__file__).resolve().parents[1] / "evals" / "cases"


def _csv_module(data: bytes, delimiter: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    header, body = csv_rows(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=""), delimiter)
    return header, list(body)


CELL = st.text(alphabet=st.sampled_from(list('ab1 ,;"\r\n\t\xa0')), max_size=4)


@settings(max_examples=300, deadline=None)
# A short line and a long last line without a newline: the delimiter total still adds up.
@example(rows=[["1\n", "1,"]], raw_tail="")
@given(rows=st.lists(st.lists(CELL, min_size=1, max_size=4), min_size=1, max_size=5),
       raw_tail=st.sampled_from(["", "\n", "\r\n", "\n\n", ",\n", '"x\n']))
def test_read_cells_agrees_with_the_csv_module_or_declines(rows: list[list[str]], raw_tail: str) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(["h1", "h2", "h3"][: max(2, len(rows[0]))])
    text = buffer.getvalue() + "\n".join(",".join(r) for r in rows) + raw_tail  # unquoted on purpose: messy
    data = text.encode()
    try:
        expected = _csv_module(data, ",")
    except FileRefused:
        expected = None
    got = columnar.read_cells(data, ",")
    if got is None:
        return
    header, body = got
    assert expected is not None
    assert header == expected[0]
    assert [(i + 2, list(r)) for i, r in enumerate(body.rows())] == [(line, cells) for line, cells in expected[1]]


AMOUNT = st.text(alphabet=st.sampled_from(list("0123456789.,-+() '\u00a0e")), min_size=1, max_size=12)


@settings(max_examples=500, deadline=None)
@example(cells=["1e1000000"], currency="USD", separator=".")  # decimal.Overflow in amount_to_minor, once
@example(cells=["1e-1000030"], currency="USD", separator=".")  # underflowed to 0, once
@given(cells=st.lists(AMOUNT, min_size=1, max_size=6), currency=st.sampled_from(["USD", "JPY", "KWD"]),
       separator=st.sampled_from([".", ","]))
def test_amounts_equal_amount_to_minor_or_decline(cells: list[str], currency: str, separator: str) -> None:
    stripped = [c.strip() for c in cells]
    try:
        expected = [amount_to_minor(c, currency, decimal_separator=separator) for c in stripped]
    except ValueError:
        expected = None
    try:
        got = columnar._amounts(pl.Series(stripped, dtype=pl.String), pl.Series([currency] * len(cells)),
                                separator).to_list()
    except columnar._Decline:
        return  # declining is always allowed (the row parser then decides)
    assert got == expected


DATE = st.one_of(
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)).map(
        lambda d: d.replace(microsecond=0).strftime("%d/%m/%Y %H:%M")),
    st.text(alphabet=st.sampled_from(list("0123456789/: T-Z+")), min_size=8, max_size=19),
)


@settings(max_examples=400, deadline=None)
@given(cells=st.lists(DATE, min_size=1, max_size=5),
       date_format=st.sampled_from(["%d/%m/%Y %H:%M", "%Y-%m-%d", "iso", "%d.%m.%y"]))
def test_dates_equal_parse_when_or_decline(cells: list[str], date_format: str) -> None:
    try:
        expected = [parse_when(c, date_format) for c in cells]
    except ValueError:
        expected = None
    try:
        got = columnar._when(pl.Series(cells, dtype=pl.String), date_format).to_list()
    except columnar._Decline:
        return  # declining is always allowed
    assert expected is not None
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert got == [(e - epoch) // (datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - epoch) for e in expected]


# --- both import paths store the same rows --------------------------------------------------

FIELDS: dict[Any, tuple[str, ...]] = {
    OrderRow: ("line", "order_id", "ordered_at", "ordered_day", "amount_minor", "currency", "payment_reference",
               "customer_email_hash", "status"),
    ProviderRow: ("line", "transaction_id", "created_at", "created_day", "type", "amount_minor", "fee_minor",
                  "net_minor", "currency", "charge_id", "order_reference", "payout_id", "payout_date", "payout_day"),
    BankRow: ("line", "booking_date", "booking_day", "value_date", "amount_minor", "currency", "reference",
              "remittance", "bank_reference"),
    DisputeRow: ("line", "dispute_id", "charge_id", "amount_minor", "currency", "reason", "status",
                 "evidence_due_by", "created_at"),
}
MODEL: dict[str, Any] = {"orders": OrderRow, "provider": ProviderRow, "bank": BankRow, "disputes": DisputeRow}

STRIPE_ODD = (
    b"balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,"
    b"automatic_payout_id,automatic_payout_effective_at_utc,charge_id,payment_metadata[order_id]\r\n"
    b"txn_1,2026-11-02 10:00:00,usd,1234.50,36.10,1198.40,charge,ch_1,po_1,2026-11-04 00:00:00,,A-1\r\n"
    b'txn_2,2026-11-02T11:00:00Z,usd,"1,000.00",29.30,970.70,charge,ch_2,po_1,2026-11-04 00:00:00,ch_2,"A,2"\r\n'
    b"txn_3,2026-11-03 12:00:00+01:00,jpy,500,0,500,charge,ch_3,,,ch_3,\r\n"
    b"txn_4,2026-11-04 00:00:00,usd,-1168.80,0,-1168.80,payout,po_1,,,,\r\n"
    b"txn_5,2026-11-04 09:00:00,USD ,-5.00,,-5.00,refund,re_1,po_1,2026-11-04 00:00:00,ch_1,\r\n"
    b"txn_6,2026-11-05 09:00:00,usd,=HYPERLINK(1),0,0,odd_category,x,,,,\r\n"
)


def _stored(model: Any, tenant) -> list[tuple]:  # type: ignore[no-untyped-def]
    return list(model.objects.filter(tenant=tenant).order_by("line").values_list(*FIELDS[model]))


def _both_ways(tenant, other_tenant, monkeypatch, kind: str, data: bytes, mapping: dict | None):  # type: ignore[no-untyped-def]
    outcomes: list[Any] = []
    for who, threshold in ((tenant, 0), (other_tenant, 10**12)):
        monkeypatch.setattr(imports, "COLUMNAR_MIN_BYTES", threshold)
        if mapping is not None:
            layout_save(tenant=who, kind=kind, mapping=mapping, sample=data, actor="test")
        try:
            batch = file_import(tenant=who, kind=kind, filename="f", data=data, actor="test")
            outcomes.append((batch.rows, batch.file_format, _stored(MODEL[kind], who)))
        except FileRefused as refused:
            outcomes.append(refused.as_dict())
    return outcomes


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "name", "mapping"), [
    ("provider", "stripe_payout_reconciliation.csv", None),
    ("orders", "shop_orders.csv", "orders.mapping.json"),
    ("disputes", "disputes.csv", "disputes.mapping.json"),
    ("provider", "adyen_settlement_details.csv", "adyen.mapping.json"),
])
def test_shipped_exports_store_the_same_rows_both_ways(tenant, other_tenant, monkeypatch, kind, name,  # type: ignore[no-untyped-def]
                                                       mapping) -> None:
    folder = CASES if name.startswith("adyen") else EXPORTS
    data = (folder / name).read_bytes()
    spec = json.loads((folder / mapping).read_text()) if mapping else None
    fast, rows = _both_ways(tenant, other_tenant, monkeypatch, kind, data, spec)
    assert fast == rows and fast[0] > 0


@pytest.mark.django_db
def test_odd_cells_convert_one_by_one_and_formula_text_is_refused_the_same_way(tenant, other_tenant,  # type: ignore[no-untyped-def]
                                                                              monkeypatch) -> None:
    good = STRIPE_ODD.rsplit(b"txn_6", 1)[0]
    fast, rows = _both_ways(tenant, other_tenant, monkeypatch, "provider", good, None)
    assert fast == rows and fast[0] == 5
    assert columnar.stripe_columns(good) is not None  # thousands, offsets, JPY: still columnar
    bad = STRIPE_ODD.replace(b"2026-11-02T11:00:00Z", b"2026-11-02T11:00:00Q")
    fast, rows = _both_ways(tenant, other_tenant, monkeypatch, "provider", bad, None)
    assert fast == rows == {"reason": "bad_date", "message": fast["message"], "line": 3, "column": "created_utc"}


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "reason", "line"), [
    ("A-1;03/11/2026 09:58;42,00;USD\nA-2;31/02/2026 09:58;1,00;USD\n", "bad_date", 3),
    ("A-1;03/11/2026 09:58;42,00;USD\nA-2;12/11/2026 09:58;1,001;USD\n", "bad_amount", 3),
    ("A-1;03/11/2026 09:58;42,00;USD\n\nA-2;12/11/2026 09:58;;USD\n", "missing_value", 4),
    ("A-1;03/11/2026 09:58;42,00;USD\nA-2;12/11/2026 09:58;1,00\n", "wrong_number_of_columns", 3),
    ("A-1;03/11/2026 09:58;42,00;XX\n", "bad_currency", 2),
    ("A-1;03/11/2026 09:58;1.042,00;USD\nA-2;12/11/2026 09:58;1,00;USD\n"
     + "x" * 200 + ";12/11/2026 09:58;1,00;USD\n", "value_too_long", 4),
])
def test_a_bad_row_is_refused_with_the_row_parsers_line_column_and_reason(tenant, other_tenant, monkeypatch,  # type: ignore[no-untyped-def]
                                                                          body, reason, line) -> None:
    data = ("Nr;Datum;Betrag;Währung\n" + body).encode()
    columns = {"order_id": "Nr", "ordered_at": "Datum", "amount": "Betrag", "currency": "Währung"}
    mapping = {"columns": columns, "date_format": "%d/%m/%Y %H:%M", "decimal_separator": ",", "delimiter": ";"}
    spec = LayoutSpec(columns=columns, date_format="%d/%m/%Y %H:%M", decimal_separator=",", delimiter=";")
    assert columnar.layout_columns(data, kind="orders", spec=spec) is None or reason == "value_too_long"
    outcomes = []
    for who, threshold in ((tenant, 0), (other_tenant, 10**12)):
        monkeypatch.setattr(imports, "COLUMNAR_MIN_BYTES", threshold)
        layout_save(tenant=who, kind="orders", mapping=mapping, sample=data.split(b"\n", 1)[0] + b"\n"
                    + b"A-0;03/11/2026 09:58;1,00;USD\n", actor="test")
        with pytest.raises(FileRefused) as caught:
            file_import(tenant=who, kind="orders", filename="o.csv", data=data, actor="test")
        outcomes.append(caught.value.as_dict())
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0]["reason"], outcomes[0]["line"]) == (reason, line)
    assert not OrderRow.objects.exists()
