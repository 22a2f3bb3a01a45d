"""Each number goes to the right term, and a quote must support the term it is attached to."""

from __future__ import annotations

import pytest

from reconciliation.extraction import Extraction, Term, terms_extract
from reconciliation.verification import terms_verify

# The reproduction: the most common fee wording, as a paragraph and as lines.
PARAGRAPH = ("Pricing\n2.9% of the transaction amount plus $0.30 for each successful charge. An additional 1.5% "
             "applies to cards issued outside the United States. Disputes cost $15.00 each, returned if you win. "
             "Payouts arrive in 2 business days. A rolling reserve of 0% applies.\n")
LINES = ("2.9% of the transaction amount plus $0.30 for each successful charge\n"
         "An additional 1.5% applies to cards issued outside the United States\n"
         "Dispute fee $15.00\nPayouts: T+2\nA rolling reserve of 0%\n")


def checked(text: str) -> dict:
    result = terms_verify(text=text, extraction=terms_extract(text))
    return {"confirmable": result.confirmable,
            **{name: (t["value"], t["unit"], t["verified"]) for name, t in result.terms.items()}}


@pytest.mark.parametrize("text", [PARAGRAPH, LINES])
def test_base_fee_fixed_fee_surcharge_and_a_zero_reserve(text: str) -> None:
    got = checked(text)
    assert got["percentage_fee"] == ("2.9", "percent", True)
    assert got["fixed_fee"] == ("0.30", "USD", True)
    assert got["international_surcharge"] == ("1.5", "percent", True)
    assert got["chargeback_fee"] == ("15.00", "USD", True)
    assert got["payout_delay"] == ("2", "business_days", True)
    assert got["rolling_reserve"] == ("0", "percent", True)  # 0 % is a stated term, not a unit error
    assert got["confirmable"]


@pytest.mark.parametrize(("text", "expected"), [
    ("Cards: 2.9% + 30¢ per successful charge. Chargeback fee: $10.00. Payouts: T+2.",
     {"percentage_fee": "2.9", "fixed_fee": "0.30", "chargeback_fee": "10.00", "payout_delay": "2"}),
    ("Online payments 1.4% + €0.25 per transaction, disputes €15 each, settlement 3 business days",
     {"percentage_fee": "1.4", "fixed_fee": "0.25", "chargeback_fee": "15", "payout_delay": "3"}),
    ("Kartenzahlungen: 2,9 % zzgl. 0,30 € pro Transaktion. Rückbelastung: 15,00 €. "
     "Auszahlung nach 2 Bankarbeitstagen.",
     {"percentage_fee": "2.9", "fixed_fee": "0.30", "chargeback_fee": "15.00", "payout_delay": "2"}),
    # The common German and French words for a chargeback, in compounds too.
    ("Kartenzahlungen: 1,4 % + 0,25 € pro Transaktion. Rückbuchungsgebühr: 15,00 €. "
     "Auszahlung nach 2 Bankarbeitstagen.",
     {"percentage_fee": "1.4", "fixed_fee": "0.25", "chargeback_fee": "15.00", "payout_delay": "2"}),
    ("Cartes : 1,5 % + 0,25 € par transaction. Frais de rétrofacturation : 15,00 €. Versement sous 3 jours ouvrés.",
     {"percentage_fee": "1.5", "fixed_fee": "0.25", "chargeback_fee": "15.00", "payout_delay": "3"}),
    ("Cards 2.9% + 30¢ per charge, plus 1.5% for international cards; $15 per chargeback, returned if you win; "
     "payouts weekly on Mondays",
     {"percentage_fee": "2.9", "fixed_fee": "0.30", "international_surcharge": "1.5", "chargeback_fee": "15",
      "payout_delay": "7"}),
])
def test_numbers_in_one_sentence_go_to_their_own_terms(text: str, expected: dict) -> None:
    got = checked(text)
    assert {k: got[k][0] for k in expected} == expected
    assert got["confirmable"]


def test_business_days_keep_their_calendar_and_a_reserve_its_holding_period() -> None:
    text = "Cards: 1.5% + 20p\nChargebacks: £15\nPayouts: 3 business days\nRolling reserve: 10% for 90 days"
    terms = terms_extract(text).terms
    assert (terms["payout_delay"].value, terms["payout_delay"].unit, terms["payout_delay"].calendar) == (
        "3", "business_days", "GB")
    assert (terms["rolling_reserve"].value, terms["rolling_reserve"].holding_days) == ("10", "90")
    result = terms_verify(text=text, extraction=terms_extract(text))
    assert result.terms["rolling_reserve"]["holding_days"] == "90"
    assert result.terms["payout_delay"]["calendar"] == "GB"
    assert result.confirmable


ONE_LINE = "Cards: 2.9% + 30¢ per successful charge. Chargeback fee: $10.00. Payouts: T+2."


def test_a_value_whose_quote_is_about_another_term_is_refused() -> None:
    # Issue 33: 0.30 occurs in the quote, but as the card's fixed fee, not the chargeback fee.
    wrong = Extraction(currency="USD", terms={
        "percentage_fee": Term("2.9", "percent", ONE_LINE), "fixed_fee": Term("0.30", "USD", ONE_LINE),
        "chargeback_fee": Term("0.30", "USD", ONE_LINE), "payout_delay": Term("2", "business_days", ONE_LINE)})
    result = terms_verify(text=ONE_LINE, extraction=wrong)
    chargeback = result.terms["chargeback_fee"]
    assert (chargeback["verified"], chargeback["reason_code"]) == (False, "quote_wrong_term")
    assert "card fee" in chargeback["reason"]
    assert not result.confirmable
    assert result.terms["fixed_fee"]["verified"]


@pytest.mark.parametrize(("name", "term"), [
    ("percentage_fee", Term("1.5", "percent", "An additional 1.5% applies to cards issued outside the EEA")),
    ("international_surcharge", Term("2.9", "percent", "Cards: 2.9% + 30¢ per successful charge.")),
    ("payout_delay", Term("15", "days", "Disputes: 15 days to respond")),
    ("rolling_reserve", Term("1", "percent", "Currency conversion: 1% on top")),
])
def test_a_value_attached_to_the_wrong_term_is_refused(name: str, term: Term) -> None:
    text = f"{term.quote}\n"
    result = terms_verify(text=text, extraction=Extraction(currency="USD", terms={name: term}))
    assert result.terms[name]["reason_code"] == "quote_wrong_term"


def test_a_table_value_is_supported_by_its_heading() -> None:
    text = "## Disputes\n\n| Fee | $15.00 |\n"
    result = terms_verify(text=text, extraction=Extraction("USD", {"chargeback_fee": Term("15.00", "USD",
                                                                                          "| Fee | $15.00 |")}))
    assert result.terms["chargeback_fee"]["verified"]


def test_a_rate_written_as_a_fraction_is_a_unit_error_not_term_not_found() -> None:
    text = "Processing rate 0.029 per transaction plus $0.30\nChargebacks: $15\nPayouts: T+2"
    result = terms_verify(text=text, extraction=terms_extract(text))
    fee = result.terms["percentage_fee"]
    assert (fee["value"], fee["reason_code"]) == ("0.029", "unit_error")
    assert "fraction" in fee["detail"]
    assert not result.confirmable
    # The same through a model's answer quoting the percentage.
    answer = Extraction("USD", {"percentage_fee": Term("0.029", "percent", "Cards: 2.9% + 30¢")})
    assert terms_verify(text="Cards: 2.9% + 30¢", extraction=answer).terms["percentage_fee"]["reason_code"] == (
        "unit_error")


def test_a_holding_period_not_in_the_quote_is_refused() -> None:
    text = "Rolling reserve: 10% for 90 days"
    made_up = Extraction("USD", {"rolling_reserve": Term("10", "percent", text, holding_days="120")})
    assert terms_verify(text=text, extraction=made_up).terms["rolling_reserve"]["reason_code"] == (
        "holding_not_in_quote")


@pytest.mark.django_db
def test_a_confirmed_business_day_delay_is_stored_as_business_days_with_its_calendar(tenant) -> None:
    from datetime import date

    from reconciliation.services.proposals import contract_proposal_confirm, contract_proposal_create

    doc = b"Cards: 1.4% + EUR 0.25\nDisputes: EUR 15\nPayouts: T+2\nRolling reserve: 5% held for 13 weeks\n"
    proposal = contract_proposal_create(tenant=tenant, document=doc, filename="eu.txt", actor="t")
    assert proposal.confirmable, proposal.terms
    version = contract_proposal_confirm(tenant=tenant, proposal_id=proposal.pk, effective_from=date(2026, 12, 1),
                                        actor="t")
    assert (version.payout_delay_days, version.payout_delay_unit, version.payout_calendar) == (
        2, "business_days", "TARGET")
    assert (str(version.rolling_reserve_percent.normalize()), version.rolling_reserve_days) == ("5", 91)


def test_a_quote_that_names_no_fee_does_not_support_one() -> None:
    text = "Cards: 2.9% + 30¢ per charge\nMisc: $0.30\n"
    result = terms_verify(text=text, extraction=Extraction("USD", {"fixed_fee": Term("0.30", "USD", "Misc: $0.30")}))
    assert result.terms["fixed_fee"]["reason_code"] == "quote_wrong_term"
    assert "names no fee" in result.terms["fixed_fee"]["detail"]
