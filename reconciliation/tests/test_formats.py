"""File formats: amounts, Stripe's report by its header, camt.053 (and hostile XML)."""

from __future__ import annotations

from datetime import date

import pytest

from reconciliation.formats import (
    FileRefused,
    amount_to_minor,
    is_stripe_report,
    parse_camt053,
    parse_stripe_report,
)

CAMT = """<?xml version="1.0"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.{v}">
<BkToCstmrStmt><Stmt>
<Ntry><Amt Ccy="EUR">1234.56</Amt><CdtDbtInd>CRDT</CdtDbtInd><BookgDt><Dt>2026-11-03</Dt></BookgDt>
<ValDt><Dt>2026-11-04</Dt></ValDt><AcctSvcrRef>BANK-1</AcctSvcrRef>
<NtryDtls><TxDtls><Refs><EndToEndId>po_123456</EndToEndId></Refs><RmtInf><Ustrd>STRIPE PAYOUT</Ustrd>
<Ustrd>part two</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>
<Ntry><Amt Ccy="EUR">10.00</Amt><CdtDbtInd>DBIT</CdtDbtInd><BookgDt><DtTm>2026-11-05T10:00:00</DtTm></BookgDt>
<AcctSvcrRef>BANK-2</AcctSvcrRef></Ntry>
</Stmt></BkToCstmrStmt></Document>"""


@pytest.mark.parametrize(("text", "sep", "currency", "minor"), [
    ("12.50", ".", "USD", 1250), ("-12.50", ".", "USD", -1250), ("1,234.56", ".", "USD", 123456),
    ("1.234,56", ",", "EUR", 123456), ("12,5", ",", "EUR", 1250), ("(3.00)", ".", "USD", -300),
    ("3,00-", ",", "EUR", -300), ("1 234,56", ",", "EUR", 123456), ("500", ".", "JPY", 500),
    ("1.234", ".", "KWD", 1234),
])
def test_amounts_convert_exactly(text: str, sep: str, currency: str, minor: int) -> None:
    assert amount_to_minor(text, currency, decimal_separator=sep) == minor


@pytest.mark.parametrize(("text", "currency"), [("12.345", "USD"), ("abc", "USD"), ("1.5", "JPY"), ("NaN", "USD"),
                                                ("=1+1", "USD")])
def test_amounts_refuse_what_is_not_money(text: str, currency: str) -> None:
    with pytest.raises(ValueError):
        amount_to_minor(text, currency)


def test_stripe_report_is_recognised_by_its_header_and_reads_major_units() -> None:
    text = ("balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,"
            "automatic_payout_id,automatic_payout_effective_at_utc,payment_metadata[order_id]\n"
            "txn_1,2026-11-03 10:00:04,usd,42.00,1.52,40.48,charge,ch_1,ch_1,po_1,2026-11-06 00:00:00,A-1\n"
            "txn_2,2026-11-04 10:00:04,usd,-42.00,0.00,-42.00,refund,re_1,ch_1,po_1,2026-11-06 00:00:00,A-1\n"
            "txn_3,2026-11-04 11:00:00,jpy,-500,0,-500,partial_capture_reversal,pcr_1,ch_9,,,\n")
    assert is_stripe_report(text.split("\n")[0].split(","))
    rows = list(parse_stripe_report(text).rows)
    assert rows[0]["type"] == "charge" and rows[0]["amount_minor"] == 4200 and rows[0]["fee_minor"] == 152
    assert rows[0]["currency"] == "USD" and rows[0]["order_reference"] == "A-1" and rows[0]["payout_id"] == "po_1"
    assert rows[0]["payout_date"] == date(2026, 11, 6)
    assert rows[1]["type"] == "refund" and rows[1]["charge_id"] == "ch_1" and rows[1]["net_minor"] == -4200
    assert rows[2]["type"] == "adjustment" and rows[2]["amount_minor"] == -500 and rows[2]["charge_id"] == "ch_9"


def test_stripe_report_bad_cell_names_line_and_column() -> None:
    text = ("balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category\n"
            "txn_1,2026-11-03 10:00:04,usd,42.00,1.52,40.48,charge\n"
            "txn_2,2026-11-03 10:00:04,usd,4x,1.52,40.48,charge\n")
    with pytest.raises(FileRefused) as caught:
        list(parse_stripe_report(text).rows)
    assert (caught.value.reason, caught.value.line, caught.value.column) == ("bad_amount", 3, "gross")


@pytest.mark.parametrize("version", ["02", "04", "08", "13"])
def test_camt053_entries_from_001_02_and_later_namespaces(version: str) -> None:
    rows = parse_camt053(CAMT.format(v=version).encode()).rows
    assert rows == [
        {"line": 1, "booking_date": date(2026, 11, 3), "value_date": date(2026, 11, 4), "amount_minor": 123456,
         "currency": "EUR", "reference": "po_123456", "remittance": "STRIPE PAYOUT part two",
         "bank_reference": "BANK-1"},
        {"line": 2, "booking_date": date(2026, 11, 5), "value_date": None, "amount_minor": -1000, "currency": "EUR",
         "reference": "", "remittance": "", "bank_reference": "BANK-2"},
    ]


def test_camt053_other_message_types_are_refused() -> None:
    with pytest.raises(FileRefused) as caught:
        parse_camt053(CAMT.replace("camt.053.001.{v}", "camt.052.001.08").encode())
    assert caught.value.reason == "xml_invalid"


def _entry(amount: str, ref: str) -> str:
    return (f'<Ntry><Amt Ccy="EUR">{amount}</Amt><CdtDbtInd>CRDT</CdtDbtInd><BookgDt><Dt>2026-11-03</Dt></BookgDt>'
            f"<AcctSvcrRef>{ref}</AcctSvcrRef></Ntry>")


def test_camt053_entries_of_every_statement_in_order_and_only_a_statements_own() -> None:
    # The entries are read as the file streams past: numbering runs across statements, and
    # an <Ntry> that is not a statement's child (inside supplementary data) is not an entry.
    document = ('<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt>'
                f"<Stmt><Id>S1</Id>{_entry('1.00', 'A')}{_entry('2.00', 'B')}</Stmt>"
                f"<Stmt><Id>S2</Id><SplmtryData><Envlp>{_entry('9.99', 'X')}</Envlp></SplmtryData>"
                f"{_entry('3.00', 'C')}</Stmt></BkToCstmrStmt></Document>")
    rows = parse_camt053(document.encode()).rows
    assert [(r["line"], r["bank_reference"], r["amount_minor"]) for r in rows] == [
        (1, "A", 100), (2, "B", 200), (3, "C", 300)]


def test_camt053_a_bad_entry_or_a_cut_off_file_refuses_the_whole_file() -> None:
    head = ('<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt><Stmt>'
            + _entry("1.00", "A") + _entry("2.00", "B"))
    with pytest.raises(FileRefused) as caught:
        parse_camt053((head + _entry("1.2.3", "C") + "</Stmt></BkToCstmrStmt></Document>").encode())
    assert (caught.value.reason, caught.value.line, caught.value.column) == ("bad_amount", 3, "Ntry")
    with pytest.raises(FileRefused) as caught:
        parse_camt053(head.encode())  # the download stopped after two entries
    assert caught.value.reason == "xml_invalid"


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><BkToCstmrStmt><Stmt><Ntry>
<Amt Ccy="EUR">1.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><BookgDt><Dt>2026-11-03</Dt></BookgDt>
<AcctSvcrRef>&lol3;</AcctSvcrRef></Ntry></Stmt></BkToCstmrStmt></Document>"""
EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><BkToCstmrStmt><Stmt><Ntry>
<Amt Ccy="EUR">1.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><BookgDt><Dt>2026-11-03</Dt></BookgDt>
<AcctSvcrRef>&x;</AcctSvcrRef></Ntry></Stmt></BkToCstmrStmt></Document>"""


@pytest.mark.parametrize("payload", [BILLION_LAUGHS, EXTERNAL], ids=["entity_expansion", "external_entity"])
def test_hostile_xml_is_refused_unread(payload: bytes) -> None:
    with pytest.raises(FileRefused) as caught:
        parse_camt053(payload)
    assert caught.value.reason == "xml_forbidden"


def test_an_unknown_currency_code_is_refused() -> None:
    text = ("balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category\n"
            "txn_1,2026-11-03 10:00:04,qqq,42.00,1.52,40.48,charge\n")
    with pytest.raises(FileRefused) as caught:
        list(parse_stripe_report(text).rows)
    assert (caught.value.reason, caught.value.column) == ("bad_currency", "currency")
