"""More file formats: Adyen, PayPal and Braintree reports, camt.054, BAI2. The corpus (each
file with its expected canonical rows) and the hostile variants each format must refuse
with the line and the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciliation.formats import FileRefused, Parsed, Sample, recognise
from reconciliation.formats.adyen_settlement import parse_adyen_settlement
from reconciliation.formats.bai2 import parse_bai2
from reconciliation.formats.braintree_fees import parse_braintree_fees
from reconciliation.formats.camt053 import parse_camt
from reconciliation.formats.paypal_stl import parse_paypal_settlement

CORPUS = Path(__file__).resolve().parent / "format_corpus"
SAMPLES = Path(__file__).resolve().parents[1] / "sample" / "exports" / "formats"
EXPECTED = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
KIND = {"adyen_settlement": "provider", "paypal_stl": "provider", "braintree_fees": "provider",
        "bai2": "bank", "camt054": "bank", "camt053": "bank"}


def detect_file(*, kind: str, data: bytes) -> Parsed:
    """What the import does first: the registry recognises the file, of this kind only."""
    sample = Sample(data)
    reader = recognise(sample)
    assert reader is not None and reader.kind == kind
    return reader.read(sample)


def _json_rows(rows: object) -> list[dict[str, object]]:
    return [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in r.items()} for r in rows]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_corpus_file_is_recognised_and_read_to_its_expected_rows(name: str) -> None:
    expected = EXPECTED[name]
    parsed = detect_file(kind=KIND[expected["format"]], data=(CORPUS / name).read_bytes())
    assert parsed.file_format == expected["format"]
    assert _json_rows(parsed.rows) == expected["rows"]


@pytest.mark.parametrize(("name", "file_format", "count"), [
    ("adyen_settlement_details.csv", "adyen_settlement", 5), ("paypal_settlement_STL.csv", "paypal_stl", 3),
    ("braintree_transaction_level_fees.csv", "braintree_fees", 4), ("bank_statement.bai2", "bai2", 2),
    ("bank_notification.camt054.xml", "camt054", 2),
])
def test_every_sample_file_is_recognised(name: str, file_format: str, count: int) -> None:
    parsed = detect_file(kind=KIND[file_format], data=(SAMPLES / name).read_bytes())
    assert parsed.file_format == file_format and len(list(parsed.rows)) == count


def test_the_sample_payouts_net_to_what_the_bank_received() -> None:
    # Each provider's payout equals the credits of its sample bank file (the FX one in GBP).
    adyen = list(parse_adyen_settlement((SAMPLES / "adyen_settlement_details.csv").read_text()).rows)
    assert sum(r["net_minor"] for r in adyen if r["type"] != "payout") == -adyen[-1]["net_minor"] == 7720
    paypal = list(parse_paypal_settlement((SAMPLES / "paypal_settlement_STL.csv").read_text()).rows)
    assert sum(r["net_minor"] for r in paypal if r["type"] != "payout") == -paypal[-1]["net_minor"] == 8171
    camt = list(parse_camt((SAMPLES / "bank_notification.camt054.xml").read_bytes(), "camt054").rows)
    assert camt[0]["amount_minor"] == 7720 and camt[1]["original_amount_minor"] == 8171
    assert (camt[1]["currency"], camt[1]["original_currency"], camt[1]["fx_rate"]) == ("EUR", "GBP", "1.1500")
    braintree = list(parse_braintree_fees((SAMPLES / "braintree_transaction_level_fees.csv").read_text()).rows)
    bai2 = list(parse_bai2((SAMPLES / "bank_statement.bai2").read_text()).rows)
    assert sum(r["net_minor"] for r in braintree if r["payout_id"].endswith("11-09")) == bai2[0]["amount_minor"]


# --- hostile variants: each refused with its line and reason ----------------------------

ADYEN = (SAMPLES / "adyen_settlement_details.csv").read_text()
PAYPAL = (SAMPLES / "paypal_settlement_STL.csv").read_text()
BRAINTREE = (SAMPLES / "braintree_transaction_level_fees.csv").read_text()
BAI2 = (SAMPLES / "bank_statement.bai2").read_text()
CAMT054 = (SAMPLES / "bank_notification.camt054.xml").read_text()
HUGE = "99999999999999999999"  # 1e20 minor units: beyond a signed 64-bit integer


def _refusal(parse: object, payload: object) -> tuple[str, int | None, str | None]:
    with pytest.raises(FileRefused) as caught:
        parsed = parse(payload)  # type: ignore[operator]
        list(parsed.rows)
    return caught.value.reason, caught.value.line, caught.value.column


@pytest.mark.parametrize(("payload", "expected"), [
    (ADYEN.replace("mccredit,,42,", "mccredit,,42,,extra"), ("wrong_number_of_columns", 2, None)),
    (ADYEN.replace(",80.00,1,EUR", f",{HUGE}.00,1,EUR"), ("bad_amount", 2, "Gross Credit (GC)")),
    (ADYEN.replace("Settled,8816000000000102,EUR", "Settled,8816000000000102,USD"),
     ("mixed_currencies", 3, "Net Currency")),
    (ADYEN.replace("2026-11-05 12:00:40,CET", "2026-11-05 12:00:40,Mars/Olympus"), ("bad_date", 3, "Creation Date")),
], ids=["ragged", "beyond_64_bits", "mixed_currencies", "unknown_zone"])
def test_adyen_hostile_variants(payload: str, expected: tuple) -> None:
    assert _refusal(parse_adyen_settlement, payload) == expected


@pytest.mark.parametrize(("payload", "expected"), [
    (PAYPAL.replace('"CR",6000,"GBP"', '"CR",6000,"GBP","X"'), ("wrong_number_of_columns", 5, None)),
    (PAYPAL.replace('"CR",2500,"GBP"', f'"CR",{HUGE},"GBP"'), ("bad_amount", 6, "Gross Transaction Amount")),
    (PAYPAL.replace('"DR",105,"GBP"', '"DR",105,"EUR"'), ("mixed_currencies", 6, "Fee Currency")),
    (PAYPAL.replace('"RC",3', '"RC",4'), ("count_mismatch", 11, "RC")),
    (PAYPAL.split('"SF"')[0], ("count_mismatch", None, None)),
    (PAYPAL.replace('"SB","5TY00000000000002"', '"ZZ","5TY00000000000002"'), ("bad_type", 6, "record type")),
], ids=["ragged", "beyond_64_bits", "mixed_currencies", "wrong_count", "cut_file", "unknown_record"])
def test_paypal_hostile_variants(payload: str, expected: tuple) -> None:
    assert _refusal(parse_paypal_settlement, payload) == expected


@pytest.mark.parametrize(("payload", "expected"), [
    (BRAINTREE.replace("NW-2005,Visa", "NW-2005,Visa,extra"), ("wrong_number_of_columns", 2, None)),
    (BRAINTREE.replace("USD,99.00", f"USD,{HUGE}.00"), ("bad_amount", 3, "Settlement Amount")),
    (BRAINTREE.replace("2026-11-10,USD", "2026-11-10,EUR"), ("mixed_currencies", 5, "Settlement Currency ISO Code")),
    (BRAINTREE.replace(",Credit,", ",Bonus,"), ("bad_type", 4, "Transaction Type")),
], ids=["ragged", "beyond_64_bits", "mixed_currencies", "unknown_type"])
def test_braintree_hostile_variants(payload: str, expected: tuple) -> None:
    assert _refusal(parse_braintree_fees, payload) == expected


@pytest.mark.parametrize(("payload", "expected"), [
    (BAI2.replace("16,475,25000,Z,NWB-88002,NONREF,CHECK 1042 PAID/", "16,475/"), ("bai2_invalid", 6, "16")),
    (BAI2.replace("16,165,11466,", f"16,165,{HUGE},"), ("bad_amount", 4, "amount")),
    (BAI2.replace("49,2022932,5/", "49,2022933,5/"), ("count_mismatch", 7, "49")),
    (BAI2.replace("98,2022932,1,7/", "98,2022932,1,6/"), ("count_mismatch", 8, "98")),
    (BAI2.rsplit("99,", 1)[0], ("bai2_invalid", None, None)),
    (BAI2.replace("16,475,", "16,050,"), ("bad_type", 6, "type code")),
    (BAI2.replace("03,000123456789,USD", "03,000123456789,QQQ"), ("bad_currency", 3, "currency")),
    (BAI2.replace("88,INDN", "77,INDN"), ("bai2_invalid", 5, "record code")),
], ids=["ragged", "beyond_64_bits", "control_total", "record_count", "cut_file", "not_a_detail_code",
        "unknown_currency", "unknown_record"])
def test_bai2_hostile_variants(payload: str, expected: tuple) -> None:
    assert _refusal(parse_bai2, payload) == expected


XXE = b"""<?xml version="1.0"?>
<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.054.001.08"><BkToCstmrDbtCdtNtfctn><Ntfctn><Ntry>
<Amt Ccy="EUR">1.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><BookgDt><Dt>2026-11-03</Dt></BookgDt>
<AcctSvcrRef>&x;</AcctSvcrRef></Ntry></Ntfctn></BkToCstmrDbtCdtNtfctn></Document>"""
LAUGHS = XXE.replace(b'<!ENTITY x SYSTEM "file:///etc/passwd">', b'<!ENTITY l "lol"><!ENTITY x "&l;&l;&l;&l;&l;">')


@pytest.mark.parametrize(("payload", "expected"), [
    (XXE, ("xml_forbidden", None, None)),
    (LAUGHS, ("xml_forbidden", None, None)),
    (CAMT054.replace('<Amt Ccy="EUR">77.20</Amt>', f'<Amt Ccy="EUR">{HUGE}.00</Amt>').encode(),
     ("bad_amount", 1, "Ntry")),
    (CAMT054.replace('<Amt Ccy="EUR">77.20</Amt>', '<Amt Ccy="USD">77.20</Amt>').encode(),
     ("mixed_currencies", 1, "Amt")),
    (CAMT054.replace('<Amt Ccy="GBP">81.71</Amt>', f'<Amt Ccy="GBP">{HUGE}</Amt>').encode(),
     ("bad_amount", 2, "AmtDtls")),
    (CAMT054.split("</Ntfctn>")[0].encode(), ("xml_invalid", None, None)),
    (CAMT054.replace("camt.054.001.08", "camt.052.001.08").encode(), ("xml_invalid", None, None)),
], ids=["external_entity", "entity_expansion", "beyond_64_bits", "mixed_currencies", "fx_beyond_64_bits",
        "cut_file", "other_message"])
def test_camt054_hostile_variants(payload: bytes, expected: tuple) -> None:
    assert _refusal(lambda data: parse_camt(data, "camt054"), payload) == expected
