"""Order exports of the common shop platforms: every required column and the payment reference suggested right."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from reconciliation.evals.layout_eval import LAYOUTS_DIR, layout_case_check, layout_cases
from reconciliation.formats import REQUIRED, amount_to_minor
from reconciliation.layouts import decimal_separator_sniff, layout_suggest

CASES = layout_cases()


def test_the_corpus_covers_the_platforms_and_languages() -> None:
    assert len(CASES) >= 12
    names = " ".join(p.name for p, _ in CASES)
    for platform in ("shopify", "woocommerce", "magento", "bigcommerce", "shopware", "prestashop"):
        assert platform in names
    for path, expected in CASES:
        assert REQUIRED[expected["kind"]] <= set(expected["columns"]), path.name
        assert "payment_reference" in expected["columns"], path.name


@pytest.mark.parametrize(("path", "expected"), CASES, ids=[p.stem for p, _ in CASES])
def test_every_required_column_the_payment_reference_and_the_formats_are_suggested_right(path, expected) -> None:
    assert layout_case_check(path, expected) == {}


def test_recon_layout_suggest_on_a_shopify_export(tmp_path) -> None:
    out = StringIO()
    call_command("recon_layout", "suggest", "--kind", "orders", str(LAYOUTS_DIR / "shopify_orders.csv"), stdout=out)
    body = json.loads(out.getvalue())
    assert body["columns"]["ordered_at"] == "Created at"
    assert body["columns"]["payment_reference"] == "Payment References"
    assert body["date_format"] == "%Y-%m-%d %H:%M:%S %z"
    first = body["preview"][0]
    assert (first["order_id"], first["amount_minor"], first["payment_reference"]) == ("#1001", 4810,
                                                                                       "pi_3PqA1b2C3d4E5f6G")
    assert first["ordered_at"] == "2026-11-13T19:21:55+00:00"  # -0500 read, stored as UTC


def test_an_ambiguous_decimal_separator_is_said() -> None:
    separator, note = decimal_separator_sniff(["1,234", "2,500"])
    assert "ambiguous" in note
    assert decimal_separator_sniff(["1,234", "12,50"]) == (",", "decimal separator: read from the values")
    s = layout_suggest(kind="orders", text="Order ID,Order Date,Order Total,Currency\nA-1,2026-11-13,1.250,USD\n")
    assert any("decimal separator: ambiguous" in n for n in s["notes"])


@pytest.mark.parametrize(("text", "currency", "minor"), [
    ("€ 24,95", "EUR", 2495), ("1.204,00 €", "EUR", 120400), ("$1,204.00", "USD", 120400), ("EUR 5.00", "EUR", 500),
    ("(£3.00)", "GBP", -300),
])
def test_an_amount_written_with_its_currency_is_read(text: str, currency: str, minor: int) -> None:
    separator = "," if text.rstrip(" €").endswith((",95", ",00")) else "."
    assert amount_to_minor(text, currency, decimal_separator=separator) == minor


def test_an_amount_marked_with_another_currency_is_refused() -> None:
    with pytest.raises(ValueError, match="marked"):
        amount_to_minor("€ 24,95", "USD", decimal_separator=",")
