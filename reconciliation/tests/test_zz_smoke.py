import json
from datetime import date
import pytest
from reconciliation.services.sample import sample_load
from reconciliation.services.disputes import dispute_list, dispute_triage
pytestmark = pytest.mark.django_db
def test_smoke():
    t, run = sample_load(actor="t")
    print(json.dumps(dispute_list(tenant=t, as_of=date(2026,11,16)), indent=1))
def test_smoke2():
    from reconciliation.services.evidence import evidence_pack_draft
    t, run = sample_load(actor="t")
    p = evidence_pack_draft(tenant=t, dispute_id="dp_1Nw0001", as_of=date(2026,11,16))
    print(p["markdown"])
def test_smoke3():
    from reconciliation.services.refunds import refund_check
    t, run = sample_load(actor="t")
    d=date(2026,11,16)
    for kw in [dict(order_id="NW-1003"), dict(charge_id="ch_3Nw1003"), dict(charge_id="ch_3Nw1003b"), dict(order_id="NW-1007"), dict(order_id="NW-1001", amount_minor=5000, currency="USD")]:
        kw.setdefault("amount_minor", None); kw.setdefault("currency", None)
        r = refund_check(tenant=t, as_of=d, **kw)
        print(kw, r["safe"], [ (c["code"], c["text"]) for c in r["checks"]], r["recommendation"]["text"])
def test_smoke4():
    from reconciliation.services.review import morning_review, break_explain
    t, run = sample_load(actor="t")
    d=date(2026,11,16)
    r = morning_review(tenant=t, as_of=d)
    print(json.dumps(r, indent=1)[:6000])
    print(json.dumps(break_explain(tenant=t, break_id=r["biggest_breaks"][0]["break_id"]), indent=1))
