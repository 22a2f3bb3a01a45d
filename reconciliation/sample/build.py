"""Writes the fictional sample workspace and the export files of the same data.

Run once by hand (`python reconciliation/sample/build.py`) when the sample changes; the
outputs are committed. `workspace.json` is what `demo_setup` loads into the `sample`
tenant; `exports/` holds the same data as the files people download (a Stripe itemized
payout reconciliation report, a shop export with day-first dates and decimal commas, a
camt.053.001.08 statement, a disputes list) plus the two mapping files a person confirms.
The test `tests/test_sample_reproduce.py` imports the exports into an empty tenant and
must reproduce the sample's review exactly. Everything here is invented (Northwind
Coffee Roasters, example.com addresses).

Planted problems (as of 2026-11-16): order NW-1003 captured twice (and disputed as a
duplicate, evidence due in two days), a fee 0.05 above contract on NW-1004, payout
po_1NwB0002 arrived 12.50 short, payout po_1NwC0003 never arrived, order NW-1005 never
captured, capture ch_3Nw9001 without an order, order NW-1006 captured 5.00 short.
"""

from __future__ import annotations

import csv
import io
import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
AS_OF = "2026-11-16"
CONTRACT = {"currency": "USD", "effective_from": "2026-10-01", "percent": "2.9", "fixed": "0.30",
            "chargeback_fee": "15.00", "payout_delay_days": 2}


def fee(amount: int) -> int:
    return int((Decimal(amount) * Decimal("0.029")).quantize(Decimal(1), rounding=ROUND_HALF_UP)) + 30


# (order id, ordered at, amount, payment reference in the shop, email, status)
ORDERS = [
    ("NW-1001", "2026-11-03T09:58:00", 4200, "ch_3Nw1001", "ana@example.com", "paid"),
    ("NW-1002", "2026-11-03T13:55:00", 1850, "ch_3Nw1002", "ben@example.com", "paid"),
    ("NW-1003", "2026-11-04T08:59:00", 6500, "ch_3Nw1003", "cai@example.com", "paid"),
    ("NW-1004", "2026-11-05T11:20:00", 12000, "ch_3Nw1004", "dev@example.com", "paid"),
    ("NW-1005", "2026-11-07T16:40:00", 3000, "", "eli@example.com", "paid"),
    ("NW-1006", "2026-11-06T10:05:00", 5500, "", "fay@example.com", "paid"),
    ("NW-1007", "2026-11-06T12:30:00", 2500, "ch_3Nw1007", "gus@example.com", "refunded"),
    ("NW-1008", "2026-11-08T09:15:00", 7500, "ch_3Nw1008", "hal@example.com", "paid"),
    ("NW-1009", "2026-11-10T10:10:00", 1999, "ch_3Nw1009", "ivy@example.com", "paid"),
    ("NW-1010", "2026-11-10T15:45:00", 8800, "ch_3Nw1010", "jon@example.com", "paid"),
    ("NW-1011", "2026-11-13T17:25:00", 15000, "ch_3Nw1011", "kim@example.com", "paid"),
    ("NW-1012", "2026-11-12T08:00:00", 990, "", "lea@example.com", "cancelled"),
]
PO = {"A": ("po_1NwA0001", "2026-11-06"), "B": ("po_1NwB0002", "2026-11-09"), "C": ("po_1NwC0003", "2026-11-11"),
      "D": ("po_1NwD0004", "2026-11-12"), "E": ("po_1NwE0005", "2026-11-16")}
# (balance txn, created, category, gross, fee, charge, order metadata, payout)
PROVIDER = [
    ("txn_1001", "2026-11-03 10:00:04", "charge", 4200, fee(4200), "ch_3Nw1001", "NW-1001", "A"),
    ("txn_1002", "2026-11-03 14:00:12", "charge", 1850, fee(1850), "ch_3Nw1002", "NW-1002", "A"),
    ("txn_1003", "2026-11-04 09:00:30", "charge", 6500, fee(6500), "ch_3Nw1003", "NW-1003", "A"),
    ("txn_1003b", "2026-11-04 09:01:02", "charge", 6500, fee(6500), "ch_3Nw1003b", "NW-1003", "B"),
    ("txn_1004", "2026-11-05 11:21:40", "charge", 12000, fee(12000) + 5, "ch_3Nw1004", "NW-1004", "B"),
    ("txn_1006", "2026-11-06 10:06:00", "charge", 5000, fee(5000), "ch_3Nw1006", "NW-1006", "B"),
    ("txn_1007", "2026-11-06 12:31:10", "charge", 2500, fee(2500), "ch_3Nw1007", "NW-1007", "B"),
    ("txn_r1007", "2026-11-07 09:00:00", "refund", -2500, 0, "ch_3Nw1007", "NW-1007", "B"),
    ("txn_1008", "2026-11-08 09:16:00", "charge", 7500, fee(7500), "ch_3Nw1008", "NW-1008", "C"),
    ("txn_9001", "2026-11-09 18:02:00", "charge", 4000, fee(4000), "ch_3Nw9001", "NW-9999", "C"),
    ("txn_1009", "2026-11-10 10:11:00", "charge", 1999, fee(1999), "ch_3Nw1009", "NW-1009", "D"),
    ("txn_1010", "2026-11-10 15:46:00", "charge", 8800, fee(8800), "ch_3Nw1010", "NW-1010", "D"),
    ("txn_1011", "2026-11-13 17:26:00", "charge", 15000, fee(15000), "ch_3Nw1011", "NW-1011", "E"),
    ("txn_dp1", "2026-11-14 08:00:00", "dispute", -6500, 1500, "ch_3Nw1003b", "NW-1003", "E"),
]


def payout_net(letter: str) -> int:
    return sum(gross - f for _, _, _, gross, f, _, _, p in PROVIDER if p == letter)


# (booking date, value date, signed amount, end-to-end id, remittance, servicer ref)
BANK = [
    ("2026-11-08", "2026-11-08", payout_net("A"), "po_1NwA0001", "STRIPE PAYOUT po_1NwA0001", "NWB-77001"),
    ("2026-11-09", "2026-11-09", -180000, "", "RENT NOVEMBER ROASTERY", "NWB-77002"),
    ("2026-11-11", "2026-11-11", payout_net("B") - 1250, "po_1NwB0002", "STRIPE PAYOUT po_1NwB0002", "NWB-77003"),
    ("2026-11-14", "2026-11-14", payout_net("D"), "", "STRIPE TRANSFER", "NWB-77004"),
    ("2026-11-15", "2026-11-15", 42, "", "INTEREST CREDIT", "NWB-77005"),
]
DISPUTES = [
    ("dp_1Nw0001", "ch_3Nw1003b", 6500, "duplicate", "needs_response", "2026-11-18", "2026-11-14T08:00:00"),
]


def major(minor: int, comma: bool = False) -> str:
    text = f"{Decimal(minor).scaleb(-2):.2f}"
    return text.replace(".", ",") if comma else text


def workspace() -> dict:
    return {
        "tenant": "sample",
        "as_of": AS_OF,
        "contract": CONTRACT,
        "orders": [{"order_id": o, "ordered_at": t + "+00:00", "amount_minor": a, "currency": "USD",
                    "payment_reference": r, "customer_email": e, "status": s} for o, t, a, r, e, s in ORDERS],
        "provider": [{"transaction_id": t, "created_at": c.replace(" ", "T") + "+00:00", "type": k,
                      "amount_minor": g, "fee_minor": f, "net_minor": g - f, "currency": "USD", "charge_id": ch,
                      "order_reference": o, "payout_id": PO[p][0], "payout_date": PO[p][1]}
                     for t, c, k, g, f, ch, o, p in PROVIDER],
        "bank": [{"booking_date": b, "value_date": v, "amount_minor": a, "currency": "USD", "reference": r,
                  "remittance": m, "bank_reference": s} for b, v, a, r, m, s in BANK],
        "disputes": [{"dispute_id": d, "charge_id": c, "amount_minor": a, "currency": "USD", "reason": r,
                      "status": s, "evidence_due_by": due, "created_at": t + "+00:00"}
                     for d, c, a, r, s, due, t in DISPUTES],
    }


def stripe_report() -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["balance_transaction_id", "created_utc", "available_on_utc", "currency", "gross", "fee", "net",
                     "reporting_category", "source_id", "description", "customer_facing_amount",
                     "customer_facing_currency", "automatic_payout_id", "automatic_payout_effective_at_utc",
                     "customer_id", "charge_id", "payment_intent_id", "payment_metadata[order_id]", "card_country"])
    for t, c, k, g, f, ch, o, p in PROVIDER:
        source = ch if k == "charge" else ("re_" + t[5:] if k == "refund" else "du_" + t[6:])
        writer.writerow([t, c, PO[p][1] + " 00:00:00", "usd", major(g), major(f), major(g - f), k, source,
                         "", major(abs(g)), "usd", PO[p][0], PO[p][1] + " 00:00:00", "cus_demo", ch,
                         "pi_" + ch[3:], o, "US"])
    return out.getvalue()


def shop_export() -> str:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=";", lineterminator="\n")
    writer.writerow(["Bestellnummer", "Bestelldatum", "Gesamt", "Währung", "Zahlungsreferenz", "E-Mail", "Status"])
    for o, t, a, r, e, s in ORDERS:
        day, clock = t.split("T")
        y, m, d = day.split("-")
        writer.writerow([o, f"{d}/{m}/{y} {clock[:5]}", major(a, comma=True), "USD", r, e, s])
    return out.getvalue()


def disputes_export() -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Dispute ID", "Charge ID", "Amount", "Currency", "Reason", "Status", "Evidence Due By",
                     "Created (UTC)"])
    for d, c, a, r, s, due, t in DISPUTES:
        writer.writerow([d, c, major(a), "usd", r, s, due + " 23:59:59", t.replace("T", " ")])
    return out.getvalue()


def camt053() -> str:
    entries = []
    for b, v, a, r, m, s in BANK:
        e2e = f"<Refs><EndToEndId>{r or 'NOTPROVIDED'}</EndToEndId></Refs>"
        entries.append(f"""    <Ntry>
      <Amt Ccy="USD">{major(abs(a))}</Amt>
      <CdtDbtInd>{'CRDT' if a > 0 else 'DBIT'}</CdtDbtInd>
      <Sts><Cd>BOOK</Cd></Sts>
      <BookgDt><Dt>{b}</Dt></BookgDt>
      <ValDt><Dt>{v}</Dt></ValDt>
      <AcctSvcrRef>{s}</AcctSvcrRef>
      <BkTxCd><Domn><Cd>PMNT</Cd><Fmly><Cd>RCDT</Cd><SubFmlyCd>ESCT</SubFmlyCd></Fmly></Domn></BkTxCd>
      <NtryDtls><TxDtls>{e2e}<RmtInf><Ustrd>{m}</Ustrd></RmtInf></TxDtls></NtryDtls>
    </Ntry>""")
    body = "\n".join(entries)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08">
  <BkToCstmrStmt>
    <GrpHdr><MsgId>NWB-STMT-20261116</MsgId><CreDtTm>2026-11-16T06:00:00</CreDtTm></GrpHdr>
    <Stmt>
      <Id>NWB-STMT-20261116-1</Id>
      <CreDtTm>2026-11-16T06:00:00</CreDtTm>
      <Acct><Id><IBAN>GB00NWBK00000000000000</IBAN></Id><Ccy>USD</Ccy></Acct>
{body}
    </Stmt>
  </BkToCstmrStmt>
</Document>
"""


MAPPINGS = {
    "orders.mapping.json": {
        "columns": {"order_id": "Bestellnummer", "ordered_at": "Bestelldatum", "amount": "Gesamt",
                    "currency": "Währung", "payment_reference": "Zahlungsreferenz", "customer_email": "E-Mail",
                    "status": "Status"},
        "date_format": "%d/%m/%Y %H:%M", "decimal_separator": ",", "delimiter": ";",
    },
    "disputes.mapping.json": {
        "columns": {"dispute_id": "Dispute ID", "charge_id": "Charge ID", "amount": "Amount",
                    "currency": "Currency", "reason": "Reason", "status": "Status",
                    "evidence_due_by": "Evidence Due By", "created_at": "Created (UTC)"},
        "date_format": "%Y-%m-%d %H:%M:%S", "decimal_separator": ".",
    },
}


def main() -> None:
    exports = HERE / "exports"
    exports.mkdir(exist_ok=True)
    (HERE / "workspace.json").write_text(json.dumps(workspace(), indent=2) + "\n", encoding="utf-8")
    (exports / "stripe_payout_reconciliation.csv").write_text(stripe_report(), encoding="utf-8")
    (exports / "shop_orders.csv").write_text(shop_export(), encoding="utf-8")
    (exports / "disputes.csv").write_text(disputes_export(), encoding="utf-8")
    (exports / "bank_statement.camt053.xml").write_text(camt053(), encoding="utf-8")
    for name, mapping in MAPPINGS.items():
        (exports / name).write_text(json.dumps(mapping, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
