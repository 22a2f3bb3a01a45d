"""The deterministic reader of pricing documents and the checks every value passes (pure code)."""

from __future__ import annotations

import pytest

from reconciliation.documents import html_to_text
from reconciliation.extraction import Extraction, Term, terms_extract
from reconciliation.verification import normalise, terms_verify

STRIPE_LIKE = """Pricing

Integrated per-transaction pricing. No setup fees, monthly fees, or hidden fees.

Cards: 2.9% + 30¢ per successful card charge
International cards: +1.5%
Currency conversion: +1%
Chargeback fee: $15.00
Payouts arrive on a 2 business day rolling basis.
New accounts may have a rolling reserve of 10% held for 90 days.
"""


def values(text: str) -> dict[str, tuple[str | None, str | None]]:
    extraction = terms_extract(text)
    return {name: (t.value, t.unit) for name, t in extraction.terms.items()}


def test_reads_a_stripe_like_page_with_every_quote_verbatim() -> None:
    extraction = terms_extract(STRIPE_LIKE)
    assert {n: (t.value, t.unit) for n, t in extraction.terms.items()} == {
        "percentage_fee": ("2.9", "percent"), "fixed_fee": ("0.30", "USD"), "chargeback_fee": ("15.00", "USD"),
        "payout_delay": ("2", "business_days"), "international_surcharge": ("1.5", "percent"),
        "rolling_reserve": ("10", "percent")}
    assert extraction.terms["chargeback_fee"].quote == "Chargeback fee: $15.00"
    checked = terms_verify(text=STRIPE_LIKE, extraction=extraction)
    assert checked.confirmable and checked.currency == "USD"
    assert all(t["verified"] for t in checked.terms.values())


@pytest.mark.parametrize(("text", "expected"), [
    ("Kartenzahlungen: 2,9 % + 0,25 €\nRückbelastung (Chargeback): 15,00 €\nAuszahlung: T+2",
     {"percentage_fee": ("2.9", "percent"), "fixed_fee": ("0.25", "EUR"), "chargeback_fee": ("15.00", "EUR"),
      "payout_delay": ("2", "business_days")}),
    ("Standard cards 1.5% + 20p\nDisputes cost 15 GBP each\nFunds are paid out 7 days after the payment.",
     {"percentage_fee": ("1.5", "percent"), "fixed_fee": ("0.20", "GBP"), "chargeback_fee": ("15", "GBP"),
      "payout_delay": ("7", "days")}),
    ("Online card payments: 1.4 percent plus €0.25 per transaction.\nChargebacks: EUR 20 per dispute.\n"
     "Settlement: T+1 business days.",
     {"percentage_fee": ("1.4", "percent"), "fixed_fee": ("0.25", "EUR"), "chargeback_fee": ("20", "EUR"),
      "payout_delay": ("1", "business_days")}),
    ("Card processing 3.4% + 30 cents\nDispute fee 15 USD\nPayouts: two business days after capture",
     {"percentage_fee": ("3.4", "percent"), "fixed_fee": ("0.30", "USD"), "chargeback_fee": ("15", "USD"),
      "payout_delay": ("2", "business_days")}),
    ("Cards: 3.6% + ¥40 per charge\nChargeback fee: ¥1,500\nPayout schedule: 4 business days",
     {"percentage_fee": ("3.6", "percent"), "fixed_fee": ("40", "JPY"), "chargeback_fee": ("1500", "JPY"),
      "payout_delay": ("4", "business_days")}),
])
def test_reads_common_wording(text: str, expected: dict) -> None:
    got = values(text)
    assert {k: got[k] for k in expected} == expected
    assert terms_verify(text=text, extraction=terms_extract(text)).confirmable


def test_a_card_clause_wins_over_another_payment_method() -> None:
    text = "ACH Direct Debit: 0.8%, $5.00 cap\nCards: 2.9% + $0.30\nDisputes: $15\nPayouts T+2"
    assert values(text)["percentage_fee"] == ("2.9", "percent") and values(text)["fixed_fee"] == ("0.30", "USD")


def test_markdown_tables_and_section_headings() -> None:
    text = """# Fees

| Item | Price |
|---|---|
| Card payments | 1.4% + €0.25 |
| International cards | + 1.5 % |

## Disputes

| Fee | €15.00 |

## Payouts

| Schedule | T+3 |
"""
    assert values(text) == {"percentage_fee": ("1.4", "percent"), "fixed_fee": ("0.25", "EUR"),
                            "international_surcharge": ("1.5", "percent"), "chargeback_fee": ("15.00", "EUR"),
                            "payout_delay": ("3", "business_days")}
    assert terms_verify(text=text, extraction=terms_extract(text)).confirmable


def test_html_tables_read_as_rows_with_entities_decoded() -> None:
    html = """<html><head><style>td{}</style><script>var fee = "99%";</script></head><body>
    <h1>Pricing</h1><table><tr><th>Type</th><th>Fee</th></tr>
    <tr><td>Card&nbsp;payments</td><td>2.9% + 30&cent;</td></tr>
    <tr><td>Chargeback</td><td>&dollar;15.00</td></tr>
    <tr><td>Payout speed</td><td>2 business days</td></tr></table></body></html>"""
    text = html_to_text(html)
    assert "Card payments | 2.9% + 30¢" in text and "99%" not in text
    assert values(text) == {"percentage_fee": ("2.9", "percent"), "fixed_fee": ("0.30", "USD"),
                            "chargeback_fee": ("15.00", "USD"), "payout_delay": ("2", "business_days")}


def test_a_missing_required_term_is_reported_and_blocks_confirmation() -> None:
    text = "Cards: 2.9% + 30¢\nPayouts: T+2"
    checked = terms_verify(text=text, extraction=terms_extract(text))
    assert checked.terms["chargeback_fee"]["reason"] == "term not found"
    assert checked.terms["chargeback_fee"]["reason_code"] == "term_not_found"
    assert not checked.confirmable and "rolling_reserve" not in checked.terms


def test_the_currency_is_read_not_assumed() -> None:
    # An amount with no currency marker in a document that names no currency.
    text = "Cards: 2.9% + 0.30 per transaction\nChargeback fee 15.00\nPayouts T+2"
    checked = terms_verify(text=text, extraction=terms_extract(text))
    assert checked.currency == "" and not checked.confirmable
    # The same document stating its currency once.
    stated = text + "\nAll fees are in EUR."
    checked = terms_verify(text=stated, extraction=terms_extract(stated))
    assert checked.currency == "EUR" and checked.confirmable
    # A bare dollar sign in a document that names Canadian dollars reads as CAD.
    canadian = "All prices in CAD.\nCards: 2.9% + $0.30\nChargeback fee: $15.00\nPayouts T+2"
    assert terms_verify(text=canadian, extraction=terms_extract(canadian)).currency == "CAD"


# --- verification of any reader's values (the model's included) --------------------------------

DOC = "Cards: 2.9% + 30¢ per successful card charge\nChargeback fee: $15.00\nPayouts: T+2"


def check(**terms: Term) -> dict:
    return terms_verify(text=DOC, extraction=Extraction(currency="USD", terms=terms)).terms


def test_a_made_up_quote_is_quote_not_found() -> None:
    got = check(chargeback_fee=Term("10", "USD", "Chargeback fee: $10.00"))["chargeback_fee"]
    assert (got["verified"], got["reason"], got["reason_code"]) == (False, "quote not found", "quote_not_found")


def test_a_real_quote_without_the_value_names_the_value() -> None:
    got = check(chargeback_fee=Term("10", "USD", "Chargeback fee: $15.00"))["chargeback_fee"]
    assert (got["reason"], got["reason_code"]) == ("quote does not contain 10.00", "quote_missing_value")


@pytest.mark.parametrize("value", ["29", "0.029", "290", "0.0029"])
def test_two_point_nine_misread_is_a_unit_error(value: str) -> None:
    got = check(percentage_fee=Term(value, "percent", "Cards: 2.9% + 30¢ per successful card charge"))
    assert (got["percentage_fee"]["reason"], got["percentage_fee"]["reason_code"]) == ("unit error", "unit_error")


def test_units_are_sane() -> None:
    quote = "Cards: 2.9% + 30¢ per successful card charge"
    assert check(percentage_fee=Term("2.9", "USD", quote))["percentage_fee"]["reason_code"] == "unit_error"
    assert check(fixed_fee=Term("30", "USD", quote))["fixed_fee"]["reason_code"] == "unit_error"  # cents as dollars
    assert check(fixed_fee=Term("0.30", "percent", quote))["fixed_fee"]["reason_code"] == "unit_error"
    assert check(chargeback_fee=Term("1500", "USD", "Chargeback fee: $15.00"))["chargeback_fee"][
        "reason_code"] == "unit_error"
    assert check(payout_delay=Term("45", "days", "Payouts: T+2"))["payout_delay"]["reason_code"] == "unit_error"
    assert check(payout_delay=Term("2", "weeks", "Payouts: T+2"))["payout_delay"]["reason_code"] == "unit_error"
    assert check(fixed_fee=Term("0.305", "USD", quote))["fixed_fee"]["reason_code"] == "unit_error"


@pytest.mark.parametrize(("value", "unit", "quote"), [
    ("2.90", "percent", "Cards: 2.9% + 30¢ per successful card charge"),
    ("0.3", "USD", "Cards: 2.9% + 30¢ per successful card charge"),
    ("15", "USD", "Chargeback fee: $15.00"),
    ("2", "days", "Payouts: T+2"),
])
def test_any_rendering_of_the_number_is_accepted(value: str, unit: str, quote: str) -> None:
    name = {"percent": "percentage_fee", "days": "payout_delay"}.get(unit, "fixed_fee" if "30" in quote
                                                                     else "chargeback_fee")
    assert check(**{name: Term(value, unit, quote)})[name]["verified"]


def test_a_number_must_be_of_the_right_kind() -> None:
    doc = "Disputes: a rolling reserve of 15% applies\nChargeback fee: $15.00"
    got = terms_verify(text=doc, extraction=Extraction(currency="USD", terms={
        "chargeback_fee": Term("15", "USD", "Disputes: a rolling reserve of 15% applies")})).terms
    assert got["chargeback_fee"]["reason_code"] == "quote_missing_value"  # 15% is not 15 USD


def test_quotes_normalise_whitespace_and_typographic_quotes_only() -> None:
    doc = "The \u201cChargeback fee\u201d is\n   $15.00\u00a0per dispute."
    quote = 'The "Chargeback fee" is $15.00 per dispute.'
    assert normalise(doc) == quote
    ok = terms_verify(text=doc, extraction=Extraction(currency="USD", terms={
        "chargeback_fee": Term("15.00", "USD", quote)})).terms["chargeback_fee"]
    assert ok["verified"]
    other_case = terms_verify(text=doc, extraction=Extraction(currency="USD", terms={
        "chargeback_fee": Term("15.00", "USD", quote.lower())})).terms["chargeback_fee"]
    assert other_case["reason_code"] == "quote_not_found"


def test_a_fee_in_another_currency_than_its_quote_is_refused() -> None:
    doc = "Cards: 1.4% + 0,25 €\nChargeback: 15 €\nPayout T+2"
    got = terms_verify(text=doc, extraction=Extraction(currency="USD", terms={
        "fixed_fee": Term("0.25", "USD", "Cards: 1.4% + 0,25 €")})).terms["fixed_fee"]
    assert got["reason_code"] == "currency_mismatch"


def test_a_value_that_is_not_a_number() -> None:
    got = check(chargeback_fee=Term("fifteen dollars", "USD", "Chargeback fee: $15.00"))["chargeback_fee"]
    assert got["reason_code"] == "value_not_number"


def test_next_business_day_and_same_day_are_read_and_verified() -> None:
    for wording, value in (("Payouts: next business day", "1"), ("Payouts are made the same day", "0")):
        text = f"Cards: 2.9% + $0.30\nChargeback fee: $15\n{wording}"
        assert values(text)["payout_delay"][0] == value
        assert terms_verify(text=text, extraction=terms_extract(text)).confirmable


def test_an_international_rate_is_not_read_as_a_surcharge() -> None:
    text = ("1.5% + €0.25 for standard EEA cards\n3.25% + €0.25 for international cards\n"
            "Disputes: €15.00\nPayouts: T+3")
    assert "international_surcharge" not in values(text)
    assert values(text)["percentage_fee"] == ("1.5", "percent")
    added = "Cards 1.5% + €0.25\nAn additional 2% applies to cards issued outside the EEA\nDisputes: €15\nT+3 payouts"
    assert values(added)["international_surcharge"] == ("2", "percent")


def test_words_inside_other_words_do_not_exclude_the_card_fee() -> None:
    # "each" holds "ach", "minimum" qualifies the card fee rather than naming another one.
    text = "Cards: 2.9% + 30¢ each (minimum charge $0.50)\nChargeback fee: $15.00\nPayouts: T+2"
    assert values(text)["percentage_fee"] == ("2.9", "percent") and values(text)["fixed_fee"] == ("0.30", "USD")


def test_a_document_longer_than_a_pricing_schedule_is_refused() -> None:
    from reconciliation.documents import MAX_TEXT_CHARS, document_text
    from reconciliation.services.contracts import ContractRefused

    with pytest.raises(ContractRefused) as refused:
        document_text(b"Cards: 2.9% + 30c\n" * (MAX_TEXT_CHARS // 10), "long.txt")
    assert refused.value.reason == "document_too_long"


def test_dollar_prefixes_are_read_whole() -> None:
    from reconciliation.money_words import currencies_marked, document_currency

    assert currencies_marked("Cards: 2.9% + US$0.30") == {"USD"}
    assert currencies_marked("Cards: 2.9% + CA$0.30") == {"CAD"}
    assert currencies_marked("30¢ and $15", dollar="CAD") == {"CAD"}
    assert document_currency("Fees in US$: 2.9% + US$0.30, disputes US$15") == "USD"
