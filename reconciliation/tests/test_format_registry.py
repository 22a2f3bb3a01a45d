"""The readers' registry: every format module is found, in order, and a new format is one new file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import reconciliation.formats as formats
from reconciliation.formats import FileRefused, readers
from reconciliation.models import ImportFile, OrderRow
from reconciliation.services.imports import file_import

PACKAGE = Path(formats.__file__).parent

# A whole new format, as one module: JSON-lines order exports.
NEW_FORMAT = '''"""Reader of JSON-lines order exports (one object per line)."""

import json
from datetime import datetime

from reconciliation.formats.base import Parsed
from reconciliation.formats.registry import Reader


def _rows(text):
    for line, raw in enumerate(text.splitlines(), start=1):
        item = json.loads(raw)
        yield {"line": line, "order_id": item["id"], "ordered_at": datetime.fromisoformat(item["at"]),
               "amount_minor": item["cents"], "currency": item["currency"]}


READER = Reader(
    file_format="jsonl", kind="orders", order=40,
    recognises=lambda sample: sample.head.startswith('{"id"'),
    read=lambda sample: Parsed(kind="orders", file_format="jsonl", rows=_rows(sample.data.decode())),
    wrong_kind="a JSON-lines export imports only as kind orders",
)
'''


def test_every_module_that_defines_a_reader_is_registered_in_its_order() -> None:
    defining = sorted(p.stem for p in PACKAGE.glob("*.py") if "\nREADER = Reader(" in p.read_text())
    assert defining == ["adyen_settlement", "bai2", "braintree_fees", "camt053", "camt054", "paypal_stl",
                        "stripe_report", "swift_mt940"]
    assert [r.file_format for r in readers()] == ["camt054", "camt053", "bai2", "paypal_stl", "mt940",
                                                  "stripe_report", "adyen_settlement", "braintree_fees"]


@pytest.fixture
def new_format_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "jsonl_orders.py").write_text(NEW_FORMAT)
    monkeypatch.setattr(formats, "__path__", [*formats.__path__, str(tmp_path)])
    readers.cache_clear()
    yield
    readers.cache_clear()
    sys.modules.pop("reconciliation.formats.jsonl_orders", None)


@pytest.mark.django_db
def test_a_new_format_is_one_new_module_in_the_package(tenant, new_format_module) -> None:
    data = b'{"id": "A-1", "at": "2026-11-01T10:00:00+00:00", "cents": 1250, "currency": "EUR"}\n' \
           b'{"id": "A-2", "at": "2026-11-02T11:00:00+00:00", "cents": 990, "currency": "EUR"}\n'
    assert [r.file_format for r in readers()][-1] == "jsonl"
    with pytest.raises(FileRefused) as caught:
        file_import(tenant=tenant, kind="bank", filename="o.jsonl", data=data, actor="test")
    assert (caught.value.reason, caught.value.message) == (
        "wrong_kind_for_format", "a JSON-lines export imports only as kind orders")
    batch = file_import(tenant=tenant, kind="orders", filename="o.jsonl", data=data, actor="test")
    assert ImportFile.objects.get().file_format == "jsonl"
    assert sorted(OrderRow.objects.filter(file=batch).values_list("order_id", "amount_minor")) == [
        ("A-1", 1250), ("A-2", 990)]
