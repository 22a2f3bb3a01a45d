"""A payout in another currency than the bank account: matched through the FX amount the
statement carries (camt.053/.054 AmtDtls, a bank CSV's FX columns), and the booked amount
checked at the statement's rate against the contract's FX margin."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from reconciliation.models import BankRow, ContractVersion
from reconciliation.services.imports import file_import, layout_save
from reconciliation.services.run_fx import DEFAULT_FX_MARGIN_PERCENT
from reconciliation.services.runs import run_create
from reconciliation.tests.factories import contract, load, txn

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)


def camt053(booked: str, *, instructed: str | None = "1000.00", rate: str | None = "0.9200",
            unit: str = "USD") -> bytes:
    details = ""
    if instructed is not None:
        exchange = (f"<CcyXchg><SrcCcy>USD</SrcCcy><TrgtCcy>EUR</TrgtCcy><UnitCcy>{unit}</UnitCcy>"
                    f"<XchgRate>{rate}</XchgRate></CcyXchg>") if rate else ""
        details = f'<AmtDtls><InstdAmt><Amt Ccy="USD">{instructed}</Amt>{exchange}</InstdAmt></AmtDtls>'
    return f"""<?xml version="1.0"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt><Stmt>
<Acct><Id><IBAN>DE00000000000000000000</IBAN></Id><Ccy>EUR</Ccy></Acct>
<Ntry><Amt Ccy="EUR">{booked}</Amt><CdtDbtInd>CRDT</CdtDbtInd><BookgDt><Dt>2026-11-09</Dt></BookgDt>
<AcctSvcrRef>EUB-1</AcctSvcrRef><NtryDtls><TxDtls><Refs><EndToEndId>po_1FxUsd001</EndToEndId></Refs>{details}
<RmtInf><Ustrd>STRIPE PAYOUT po_1FxUsd001</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>
</Stmt></BkToCstmrStmt></Document>""".encode()


@pytest.fixture
def usd_payout(tenant):  # type: ignore[no-untyped-def]
    """A USD payout of 1,000.00 (po_1FxUsd001, paid out 2026-11-06) for an EUR bank account."""
    load(tenant, "provider", [
        txn("t1", "charge", 103200, fee=3200, charge="ch_1", payout="po_1FxUsd001", payout_date="2026-11-06"),
        txn("p1", "payout", -100000, day="2026-11-06", payout="po_1FxUsd001", payout_date="2026-11-06"),
    ])
    return tenant


def payout_breaks(tenant) -> list[dict]:  # type: ignore[no-untyped-def]
    run, _ = run_create(tenant=tenant, as_of=AS_OF, actor="test")
    return [b for b in json.loads(run.result_json)["breaks"] if b["kind"].startswith("payout_")]


def test_a_foreign_payout_within_the_margin_matches_through_the_instructed_amount(usd_payout) -> None:
    # 1,000.00 USD at 0.92 is 920.00 EUR; 915.50 booked is 0.49% less: within the default 1%.
    file_import(tenant=usd_payout, kind="bank", filename="s.xml", data=camt053("915.50"), actor="test")
    row = BankRow.objects.get(tenant=usd_payout)
    assert (row.amount_minor, row.currency) == (91550, "EUR")
    assert (row.original_amount_minor, row.original_currency, row.fx_rate) == (100000, "USD", "0.9200")
    assert payout_breaks(usd_payout) == []


def test_without_the_fx_amount_the_same_credit_matches_nothing(usd_payout) -> None:
    file_import(tenant=usd_payout, kind="bank", filename="s.xml", data=camt053("915.50", instructed=None),
                actor="test")
    assert [b["kind"] for b in payout_breaks(usd_payout)] == ["payout_missing"]


def test_beyond_the_contracts_fx_margin_is_a_break_naming_the_contract(usd_payout) -> None:
    version = contract(usd_payout)
    ContractVersion.objects.filter(pk=version.pk).update(fx_margin_percent=Decimal("0.25"))
    file_import(tenant=usd_payout, kind="bank", filename="s.xml", data=camt053("915.50"), actor="test")
    (brk,) = payout_breaks(usd_payout)
    assert (brk["kind"], brk["amount_minor"], brk["currency"]) == ("payout_short", -450, "EUR")
    assert brk["refs"]["payout"] == ["po_1FxUsd001"] and brk["refs"]["bank"] == ["EUB-1"]
    assert brk["contract_version"] == "USD v1 from 2026-01-01"
    assert "920.00" in brk["explanation"] and "0.49%" in brk["explanation"] and "0.25%" in brk["explanation"]


def test_the_default_margin_applies_without_a_contract_and_a_rate_quoted_per_booked_unit(usd_payout) -> None:
    # UnitCcy EUR: 1 EUR = 1.0870 USD, so 1,000.00 USD is 919.96 EUR; 900.00 booked is 2.17% short.
    assert DEFAULT_FX_MARGIN_PERCENT == Decimal("1")
    file_import(tenant=usd_payout, kind="bank", filename="s.xml", data=camt053("900.00", rate="1.0870", unit="EUR"),
                actor="test")
    (brk,) = payout_breaks(usd_payout)
    assert (brk["kind"], brk["amount_minor"], brk["currency"]) == ("payout_short", -1996, "EUR")
    assert "contract_version" not in brk and "(the default)" in brk["explanation"]


def test_the_instructed_amount_must_match_the_payout_in_its_currency(usd_payout) -> None:
    file_import(tenant=usd_payout, kind="bank", filename="s.xml",
                data=camt053("910.80", instructed="990.00", rate="0.9200"), actor="test")
    (brk,) = payout_breaks(usd_payout)  # by reference: 10.00 USD short; the conversion itself is exact
    assert (brk["kind"], brk["amount_minor"], brk["currency"]) == ("payout_short", -1000, "USD")


BANK_CSV = ("Buchungstag;Betrag;Währung;Verwendungszweck;Originalbetrag;Originalwährung;Kurs\n"
            "09.11.2026;915,50;EUR;STRIPE PAYOUT po_1FxUsd001;1.000,00;USD;0,92\n"
            "10.11.2026;-12,00;EUR;KONTOFUEHRUNG;;;\n").encode()
BANK_MAPPING = {"columns": {"booking_date": "Buchungstag", "amount": "Betrag", "currency": "Währung",
                            "remittance": "Verwendungszweck", "original_amount": "Originalbetrag",
                            "original_currency": "Originalwährung", "exchange_rate": "Kurs"},
                "date_format": "%d.%m.%Y", "decimal_separator": ","}


def test_a_bank_csv_carries_the_fx_amount_through_its_confirmed_layout(usd_payout) -> None:
    version = contract(usd_payout)
    ContractVersion.objects.filter(pk=version.pk).update(fx_margin_percent=Decimal("0.25"))
    layout_save(tenant=usd_payout, kind="bank", mapping=BANK_MAPPING, sample=BANK_CSV, actor="test")
    file_import(tenant=usd_payout, kind="bank", filename="bank.csv", data=BANK_CSV, actor="test")
    rows = sorted(BankRow.objects.filter(tenant=usd_payout).values_list(
        "amount_minor", "original_amount_minor", "original_currency", "fx_rate"))
    assert rows == [(-1200, None, "", ""), (91550, 100000, "USD", "0.92")]
    (brk,) = payout_breaks(usd_payout)
    assert (brk["kind"], brk["amount_minor"], brk["currency"]) == ("payout_short", -450, "EUR")


def test_the_fx_margin_is_a_contract_term_of_the_command() -> None:
    from paypilot.services import tenant_create

    tenant_create(slug="fxco", name="FX Co")
    out = StringIO()
    call_command("recon_contract", "add", "--tenant", "fxco", "--currency", "USD", "--effective-from", "2026-01-01",
                 "--percent", "2.9", "--fixed", "0.30", "--chargeback-fee", "15.00", "--payout-delay-days", "2",
                 "--fx-margin", "0.5", stdout=out)
    assert json.loads(out.getvalue())["fx_margin_percent"] == "0.5"
    assert ContractVersion.objects.get(tenant__slug="fxco").fx_margin_percent == Decimal("0.5")
    with pytest.raises(Exception, match="percent_out_of_range"):
        call_command("recon_contract", "add", "--tenant", "fxco", "--currency", "USD", "--effective-from",
                     "2026-02-01", "--percent", "2.9", "--fixed", "0.30", "--chargeback-fee", "15.00",
                     "--payout-delay-days", "2", "--fx-margin", "35", stdout=StringIO())
