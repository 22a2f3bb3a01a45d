"""Layout suggestion: synonyms in four languages, sniffed dates, decimals and delimiters."""

from __future__ import annotations

import pytest

from reconciliation.layouts import date_format_sniff, layout_suggest


def test_german_shop_export_day_first_decimal_comma_semicolon() -> None:
    text = ("Bestellnummer;Bestelldatum;Gesamt;Währung;Zahlungsreferenz;E-Mail;Status\n"
            "1001;13/10/2026 10:00;1.234,50;EUR;ch_1;a@example.com;paid\n")
    s = layout_suggest(kind="orders", text=text)
    assert s["columns"] == {"order_id": "Bestellnummer", "ordered_at": "Bestelldatum", "amount": "Gesamt",
                            "currency": "Währung", "payment_reference": "Zahlungsreferenz",
                            "customer_email": "E-Mail", "status": "Status"}
    assert (s["date_format"], s["decimal_separator"], s["delimiter"]) == ("%d/%m/%Y %H:%M", ",", ";")
    assert s["confidence"] == 1.0
    assert s["preview"][0]["amount_minor"] == 123450 and s["preview"][0]["ordered_at"].startswith("2026-10-13")


def test_french_and_spanish_bank_headers() -> None:
    fr = layout_suggest(kind="bank", text="Date d'opération\tMontant\tDevise\tLibellé\n31.10.2026\t-12,00\tEUR\tx\n")
    assert fr["columns"] == {"booking_date": "Date d'opération", "amount": "Montant", "currency": "Devise",
                             "remittance": "Libellé"}
    assert (fr["delimiter"], fr["date_format"], fr["decimal_separator"]) == ("\t", "%d.%m.%Y", ",")
    es = layout_suggest(kind="bank", text="Fecha,Importe,Moneda,Concepto\n2026-10-31,12.00,EUR,x\n")
    assert es["columns"]["booking_date"] == "Fecha" and es["columns"]["amount"] == "Importe"
    assert es["date_format"] == "%Y-%m-%d"


def test_an_ambiguous_date_is_never_guessed() -> None:
    fmt, note = date_format_sniff(["12/11/2026", "01/02/2026"])
    assert fmt is None and "ambiguous" in note
    s = layout_suggest(kind="orders", text="order id,date,total,currency\nA-1,12/11/2026,10.00,USD\n")
    assert s["date_format"] is None and s["preview"] == [] and s["confidence"] < 1


@pytest.mark.parametrize(("values", "expected"), [
    (["13/11/2026"], "%d/%m/%Y"), (["11/13/2026"], "%m/%d/%Y"), (["2026-11-13 10:00:00"], "%Y-%m-%d %H:%M:%S"),
])
def test_dates_that_only_fit_one_way(values: list[str], expected: str) -> None:
    assert date_format_sniff(values)[0] == expected


def test_suggest_is_deterministic() -> None:
    text = "Order,Date,Total,Currency\nA-1,2026-11-01,10.00,USD\n"
    assert layout_suggest(kind="orders", text=text) == layout_suggest(kind="orders", text=text)
