"""The run: every break kind, payouts to the bank, disputes, determinism and the input digest."""

from __future__ import annotations

import json
from datetime import date

import pytest

from paypilot.models import AuditEvent
from reconciliation.models import Break, OrderRow, Run
from reconciliation.services.runs import break_resolve, run_create
from reconciliation.tests.factories import bank, contract, dispute, fee, load, order, txn

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)


def review(tenant, as_of: date = AS_OF) -> dict:
    run, _ = run_create(tenant=tenant, as_of=as_of, actor="test")
    return json.loads(run.result_json)


def kinds(result: dict) -> list[tuple[str, int]]:
    return [(b["kind"], b["amount_minor"]) for b in result["breaks"]]


def payout_breaks(result: dict) -> list[dict]:
    """Leg 2 only: the payout tests carry charges without orders."""
    return [b for b in result["breaks"] if b["kind"].startswith("payout_")]


def test_clean_books_have_no_breaks_and_full_match_rate(tenant) -> None:
    contract(tenant)
    load(tenant, "orders", [order("A-1", 1000, ref="ch_1"), order("A-2", 2000)])
    load(tenant, "provider", [txn("t1", "charge", 1000, fee=fee(1000), charge="ch_1", payout="po_1111111",
                                  payout_date="2026-11-05"),
                              txn("t2", "charge", 2000, fee=fee(2000), charge="ch_2", order_ref="A-2",
                                  payout="po_1111111", payout_date="2026-11-05")])
    load(tenant, "bank", [bank("2026-11-07", 3000 - fee(1000) - fee(2000), remittance="STRIPE po_1111111")])
    result = review(tenant)
    assert result["breaks"] == [] and result["match_rate"] == 1.0 and result["orders"] == 2
    assert result["money_in_breaks_minor"] == {} and result["in_transit"] == [] and result["todo"] == []
    assert list(result) == sorted(["as_of", "match_rate", "orders", "money_in_breaks_minor", "breaks",
                                   "in_transit", "disputes_due", "todo"])


def test_leg_one_break_kinds_with_their_amounts(tenant) -> None:
    contract(tenant)
    load(tenant, "orders", [
        order("M-1", 3000),  # missing capture
        order("A-1", 5500, ref="ch_a"),  # captured 5000: amount mismatch -500
        order("D-1", 6500, ref="ch_d1"),  # captured twice
        order("C-1", 990, status="cancelled"),  # expects no capture: left out
    ])
    load(tenant, "provider", [
        txn("ta", "charge", 5000, fee=fee(5000), charge="ch_a"),
        txn("td1", "charge", 6500, fee=fee(6500), charge="ch_d1", clock="09:00:00"),
        txn("td2", "charge", 6500, fee=fee(6500), charge="ch_d2", order_ref="D-1", clock="09:01:00"),
        txn("tx", "charge", 4000, fee=fee(4000), charge="ch_x", order_ref="NOPE"),  # no order
    ])
    result = review(tenant)
    assert kinds(result) == [("duplicate_capture", 6500), ("capture_without_order", 4000),
                             ("missing_capture", 3000), ("amount_mismatch", -500)]
    dup = result["breaks"][0]
    assert dup["refs"] == {"order": ["D-1"], "transaction": ["td2"], "charge": ["ch_d1", "ch_d2"], "payout": [],
                           "bank": []}
    assert "65.00 USD" in dup["explanation"]
    assert result["orders"] == 3 and result["match_rate"] == 0.0
    assert result["money_in_breaks_minor"] == {"USD": 6500 + 4000 + 3000 + 500}
    assert [t["approver"] for t in result["todo"]] == ["finance approver"] * 4


def test_a_refunded_second_capture_and_a_refunded_order_are_not_breaks(tenant) -> None:
    load(tenant, "orders", [order("D-1", 6500, ref="ch_d1"), order("R-1", 2500, ref="ch_r", status="refunded")])
    load(tenant, "provider", [
        txn("td1", "charge", 6500, charge="ch_d1"), txn("td2", "charge", 6500, charge="ch_d2", order_ref="D-1"),
        txn("rf2", "refund", -6500, charge="ch_d2"),
        txn("tr", "charge", 2500, charge="ch_r"), txn("rfr", "refund", -2500, charge="ch_r"),
    ])
    result = review(tenant)
    assert result["breaks"] == [] and result["match_rate"] == 1.0


def test_an_order_whose_every_capture_was_refunded_counts_its_first_capture_once(tenant) -> None:
    # Captured twice, both refunded: the order is refunded, not twice captured and not
    # missing its capture; the capture that counts is the first by date, whatever the ids.
    load(tenant, "orders", [order("R-2", 2500, ref="ch_r2b", status="refunded"),
                            order("R-3", 2600, ref="ch_r3a", status="refunded")])
    load(tenant, "provider", [
        txn("t-late", "charge", 2500, "2026-11-03", charge="ch_r2b"),
        txn("t-early", "charge", 2500, "2026-11-02", charge="ch_r2a", order_ref="R-2"),
        txn("rf-a", "refund", -2500, "2026-11-04", charge="ch_r2a"),
        txn("rf-b", "refund", -2500, "2026-11-04", charge="ch_r2b"),
        # The first capture was 2,000 (the amount differs): one mismatch, about that capture.
        txn("z-1", "charge", 2000, "2026-11-02", charge="ch_r3a"),
        txn("a-2", "charge", 2600, "2026-11-03", charge="ch_r3b", order_ref="R-3"),
        txn("rf-u1", "refund", -2000, "2026-11-04", charge="ch_r3a"),
        txn("rf-u2", "refund", -2600, "2026-11-04", charge="ch_r3b"),
    ])
    result = review(tenant)
    assert kinds(result) == [("amount_mismatch", -600)] and result["match_rate"] == 0.5
    assert result["breaks"][0]["refs"]["transaction"] == ["z-1"]


def test_partial_captures_that_add_up_are_fine_and_those_that_do_not_are_one_mismatch(tenant) -> None:
    load(tenant, "orders", [order("P-1", 10000, ref="ch_p1"), order("P-2", 10000)])
    load(tenant, "provider", [
        txn("a", "charge", 6000, charge="ch_p1", order_ref="P-1"), txn("b", "charge", 4000, charge="ch_p1b",
                                                                      order_ref="P-1"),
        # An authorisation of 100 captured at 70: the reversal of the uncaptured 30 belongs to the charge.
        txn("c", "charge", 10000, charge="ch_p2", order_ref="P-2"), txn("c-rev", "adjustment", -3000, charge="ch_p2"),
    ])
    assert kinds(review(tenant)) == [("amount_mismatch", -3000)]


def test_fee_checked_against_the_version_in_force_half_up_and_named(tenant) -> None:
    v1 = contract(tenant, effective_from="2026-10-01", percent="2.9", fixed="0.30")
    contract(tenant, effective_from="2026-11-10", percent="2.5", fixed="0.25")
    load(tenant, "orders", [order("A-1", 6500, ref="ch_1"), order("A-2", 6500, ref="ch_2"),
                            order("A-3", 12000, ref="ch_3")])
    load(tenant, "provider", [
        txn("t1", "charge", 6500, "2026-11-04", fee=189 + 30, charge="ch_1"),  # 188.5 rounds half up to 189
        txn("t2", "charge", 6500, "2026-11-12", fee=163 + 25, charge="ch_2"),  # v2: 162.5 -> 163
        txn("t3", "charge", 12000, "2026-11-05", fee=383, charge="ch_3"),  # v1 says 378
        txn("dp", "dispute", -6500, "2026-11-06", fee=2000, charge="ch_1"),  # chargeback fee 15.00
    ])
    result = review(tenant)
    assert kinds(result) == [("fee_mismatch", 500), ("fee_mismatch", 5)]
    chargeback, small = result["breaks"]
    assert chargeback["contract_version"] == small["contract_version"] == v1.label == "USD v1 from 2026-10-01"
    assert small["refs"]["transaction"] == ["t3"] and small["refs"]["order"] == ["A-3"]
    assert "3.83 USD" in small["explanation"] and "3.78 USD" in small["explanation"]
    assert Break.objects.get(kind="fee_mismatch", amount_minor=5).contract_version == v1


def _payout(tenant, payout_id: str, day: str, amounts: list[int], *, refunds: list[int] = ()) -> int:
    rows = [txn(f"{payout_id}-c{i}", "charge", a, charge=f"ch_{payout_id}_{i}", payout=payout_id, payout_date=day)
            for i, a in enumerate(amounts)]
    rows += [txn(f"{payout_id}-r{i}", "refund", r, charge=f"ch_{payout_id}_0", payout=payout_id, payout_date=day)
             for i, r in enumerate(refunds)]
    load(tenant, "provider", rows)
    return sum(amounts) + sum(refunds)


def test_payouts_short_over_missing_in_transit_and_refunds_netted(tenant) -> None:
    contract(tenant, delay=2)
    short = _payout(tenant, "po_SHORT01", "2026-11-09", [10000, 12620], refunds=[-2500])
    over = _payout(tenant, "po_OVER001", "2026-11-09", [5000])
    missing = _payout(tenant, "po_MISS001", "2026-11-11", [11106])
    _payout(tenant, "po_TRANS01", "2026-11-15", [6535])
    ok = _payout(tenant, "po_OK00001", "2026-11-06", [4000], refunds=[-1000])
    load(tenant, "bank", [
        bank("2026-11-11", short - 1250, reference="po_SHORT01", bank_ref="B1"),
        bank("2026-11-11", over + 100, remittance="PAYOUT po_OVER001 STRIPE", bank_ref="B2"),
        bank("2026-11-08", ok, remittance="po_OK00001", bank_ref="B3"),
        bank("2026-11-09", -180000, remittance="RENT", bank_ref="B4"),
    ])
    result = review(tenant)
    assert [(b["kind"], b["amount_minor"], b["refs"]["payout"], b["refs"]["bank"]) for b in payout_breaks(result)] == [
        ("payout_missing", missing, ["po_MISS001"], []),
        ("payout_short", -1250, ["po_SHORT01"], ["B1"]),
        ("payout_over", 100, ["po_OVER001"], ["B2"]),
    ]
    assert result["in_transit"] == [{"payout_id": "po_TRANS01", "amount_minor": 6535, "currency": "USD",
                                     "payout_date": "2026-11-15", "expected_by": "2026-11-17"}]


def test_payout_missing_only_after_the_contract_delay(tenant) -> None:
    contract(tenant, delay=5)
    _payout(tenant, "po_LATE001", "2026-11-11", [1000])
    assert review(tenant)["in_transit"][0]["expected_by"] == "2026-11-16"
    assert [b["amount_minor"] for b in payout_breaks(review(tenant, date(2026, 11, 17)))] == [1000]


def test_payout_by_amount_in_the_window_batched_days_and_split_lines(tenant) -> None:
    contract(tenant, delay=2)
    by_amount = _payout(tenant, "po_AMT0001", "2026-11-02", [7777])
    day1 = _payout(tenant, "po_DAY0001", "2026-11-05", [1000])
    day2 = _payout(tenant, "po_DAY0002", "2026-11-06", [2000])
    day3 = _payout(tenant, "po_DAY0003", "2026-11-07", [3000])
    split = _payout(tenant, "po_SPLIT01", "2026-11-10", [50000])
    load(tenant, "bank", [
        bank("2026-11-04", by_amount, remittance="STRIPE TRANSFER", bank_ref="A1"),
        bank("2026-11-09", day1 + day2 + day3, remittance="STRIPE TRANSFER", bank_ref="G1"),  # one credit, 3 days
        bank("2026-11-12", 30000, reference="po_SPLIT01", bank_ref="S1"),
        bank("2026-11-12", split - 30000, remittance="rest of po_SPLIT01", bank_ref="S2"),
    ])
    result = review(tenant)
    assert payout_breaks(result) == [] and result["in_transit"] == []


def test_a_split_payout_that_does_not_add_up_is_short_naming_both_lines(tenant) -> None:
    split = _payout(tenant, "po_SPLIT01", "2026-11-10", [50000])
    load(tenant, "bank", [bank("2026-11-12", 30000, reference="po_SPLIT01", bank_ref="S1"),
                          bank("2026-11-12", split - 30000 - 50, remittance="po_SPLIT01", bank_ref="S2")])
    (only,) = payout_breaks(review(tenant))
    assert (only["kind"], only["amount_minor"], only["refs"]["bank"]) == ("payout_short", -50, ["S1", "S2"])


def test_disputes_due_within_seven_days_linked_to_the_duplicate_capture(tenant) -> None:
    load(tenant, "orders", [order("D-1", 6500, ref="ch_d1")])
    load(tenant, "provider", [txn("td1", "charge", 6500, charge="ch_d1"),
                              txn("td2", "charge", 6500, charge="ch_d2", order_ref="D-1")])
    load(tenant, "disputes", [dispute("dp_1", "ch_d2", 6500, "2026-11-18"),
                              dispute("dp_far", "ch_d1", 6500, "2026-11-30"),
                              dispute("dp_won", "ch_d1", 6500, "2026-11-17", status="won")])
    result = review(tenant)
    assert result["disputes_due"] == [{
        "dispute_id": "dp_1", "charge_id": "ch_d2", "due_by": "2026-11-18", "days_left": 2, "amount_minor": 6500,
        "currency": "USD", "requires_human_decision": True,
        "linked_break": {"kind": "duplicate_capture", "refs": result["breaks"][0]["refs"]},
    }]
    assert [t["kind"] for t in result["todo"]] == ["dispute_due", "duplicate_capture"]


def test_rows_after_the_as_of_date_are_left_out_and_the_newest_file_wins(tenant) -> None:
    load(tenant, "orders", [order("A-1", 1000, "2026-11-02", ref="ch_1"), order("LATE", 500, "2026-11-20")])
    load(tenant, "provider", [txn("t1", "charge", 1000, charge="ch_1")])
    load(tenant, "orders", [order("A-1", 1200, "2026-11-02", ref="ch_1")])  # the shop corrected the order
    result = review(tenant)
    assert result["orders"] == 1 and kinds(result) == [("amount_mismatch", -200)]


def test_same_inputs_same_bytes_one_stored_run_and_a_digest_of_the_inputs(tenant) -> None:
    contract(tenant)
    load(tenant, "orders", [order("M-1", 3000), order("A-1", 1000, ref="ch_1")])
    load(tenant, "provider", [txn("t1", "charge", 1000, fee=fee(1000), charge="ch_1")])
    first, created = run_create(tenant=tenant, as_of=AS_OF, actor="test")
    again, created_again = run_create(tenant=tenant, as_of=AS_OF, actor="test")
    assert created and not created_again and again.pk == first.pk and again.result_json == first.result_json
    assert len(first.input_digest) == 64 and Run.objects.count() == 1
    assert AuditEvent.objects.filter(event="reconciliation.run.created").count() == 1
    load(tenant, "orders", [order("M-2", 100)])
    newer, created_newer = run_create(tenant=tenant, as_of=AS_OF, actor="test")
    assert created_newer and newer.input_digest != first.input_digest


def test_resolving_is_audited_never_touches_rows_and_carries_to_the_next_run(tenant) -> None:
    load(tenant, "orders", [order("M-1", 3000)])
    run, _ = run_create(tenant=tenant, as_of=AS_OF, actor="test")
    brk = run.breaks.get()
    before = list(OrderRow.objects.values())
    with pytest.raises(ValueError):
        break_resolve(brk=brk, note="  ", actor="user:1")
    assert break_resolve(brk=brk, note="customer paid by bank transfer", actor="user:1")
    assert not break_resolve(brk=brk, note="again", actor="user:1")  # a repeated click
    assert list(OrderRow.objects.values()) == before
    event = AuditEvent.objects.get(event="reconciliation.break.resolved")
    assert event.detail["recon_break"] == brk.pk and "customer" not in json.dumps(event.detail)
    load(tenant, "orders", [order("M-2", 100)])
    newer, _ = run_create(tenant=tenant, as_of=AS_OF, actor="test")
    (carried,) = [b for b in newer.breaks.all() if b.refs["order"] == ["M-1"]]
    assert carried.status == "resolved" and carried.resolution_note == "customer paid by bank transfer"
    assert json.loads(newer.result_json)["breaks"][0]["kind"] == "missing_capture"  # JSON reflects inputs only
