"""evidence_pack_draft: what to gather for the reason, the facts the rows prove, a timeline and
Markdown that keeps imported text as text; never submitted."""

from __future__ import annotations

import re
from datetime import date

import pytest

from reconciliation.services.errors import ReconLookupError
from reconciliation.services.evidence import GATHER, evidence_pack_draft
from reconciliation.services.sample import sample_load
from reconciliation.tests.factories import at, load, order, txn

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)


def test_sample_pack_proves_the_double_capture_and_keeps_order() -> None:
    tenant, _ = sample_load(actor="test")
    pack = evidence_pack_draft(tenant=tenant, dispute_id="dp_1Nw0001", as_of=AS_OF)

    assert pack["submitted"] is False and pack["requires_human_decision"] is True
    assert pack["approver"] == "finance approver" and pack["family"] == "duplicate"
    assert pack["to_gather"] == GATHER["duplicate"]
    kinds = [f["fact"] for f in pack["proven_facts"]]
    assert kinds == ["order", "capture", "capture", "duplicate_capture"]
    assert pack["proven_facts"][0]["amount_minor"] == 6500
    events = [t["event"] for t in pack["timeline"]]
    assert events[0] == "order NW-1003 placed" and events[-1] == "evidence due"
    assert [t["at"] for t in pack["timeline"]] == sorted(t["at"] for t in pack["timeline"])
    assert any(e.startswith("dispute debit") for e in events)
    md = pack["markdown"]
    assert md.startswith("# Evidence pack (draft) for dispute dp_1Nw0001")
    assert "Nothing has been submitted" in md and "## Timeline" in md and "- [ ] " in md
    assert "2026-11-18 (2 days left as of 2026-11-16)" in md


def test_reason_specific_gathering_and_missing_facts(tenant) -> None:
    load(tenant, "orders", [order("P-1", 2500, ref="ch_p", status="shipped")])
    load(tenant, "provider", [txn("tp", "charge", 2500, charge="ch_p"),
                              txn("tp_r", "refund", -500, "2026-11-05", charge="ch_p")])
    load(tenant, "disputes", [{"dispute_id": "dp_p", "charge_id": "ch_p", "amount_minor": 2500, "currency": "USD",
                               "reason": "product_not_received", "status": "needs_response",
                               "evidence_due_by": date(2026, 11, 25), "created_at": at("2026-11-10")}])
    pack = evidence_pack_draft(tenant=tenant, dispute_id="dp_p", as_of=AS_OF)
    assert any("tracking number" in g for g in pack["to_gather"])
    assert "delivery proof (tracking, carrier) is not in the exports" in pack["not_in_the_data"]
    texts = [f["text"] for f in pack["proven_facts"]]
    assert any("status 'shipped'" in t for t in texts)
    assert any(t.startswith("Refund tp_r of 5.00 USD") for t in texts)


def test_markdown_escapes_imported_text(tenant) -> None:
    load(tenant, "disputes", [{"dispute_id": "dp_<img src=x>", "charge_id": "[click](http://evil)",
                               "amount_minor": 100, "currency": "USD", "reason": "general", "status": "needs_response",
                               "evidence_due_by": None, "created_at": at("2026-11-10")}])
    md = evidence_pack_draft(tenant=tenant, dispute_id="dp_<img src=x>", as_of=AS_OF)["markdown"]
    assert re.search(r"(?<!\\)<img", md) is None and "\\<img src=x\\>" in md
    assert "[click](" not in md


def test_unknown_dispute_is_refused(tenant) -> None:
    with pytest.raises(ReconLookupError) as exc:
        evidence_pack_draft(tenant=tenant, dispute_id="dp_none", as_of=AS_OF)
    assert exc.value.reason == "dispute_not_found"
