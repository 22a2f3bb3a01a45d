"""dispute_list and dispute_triage: families, days left, links to breaks of the same order, the
stated points heuristic, and refusals of unknown ids and statuses."""

from __future__ import annotations

from datetime import date

import pytest

from reconciliation.services.disputes import FAMILIES, dispute_list, dispute_triage, reason_family
from reconciliation.services.errors import ReconLookupError
from reconciliation.services.runs import run_create
from reconciliation.services.sample import sample_load
from reconciliation.tests.factories import at, load, order, txn

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)


def _dispute(dispute_id: str, charge: str, amount: int, due: str | None, *, reason: str,
             status: str = "needs_response") -> dict:
    return {"dispute_id": dispute_id, "charge_id": charge, "amount_minor": amount, "currency": "USD",
            "reason": reason, "status": status, "evidence_due_by": date.fromisoformat(due) if due else None,
            "created_at": at("2026-11-10")}


@pytest.mark.parametrize(("reason", "family"), [
    ("fraudulent", "fraudulent"), ("duplicate", "duplicate"), ("product_not_received", "product_not_received"),
    ("subscription_canceled", "subscription_cancelled"), ("credit_not_processed", "credit_not_processed"),
    ("unrecognized", "unrecognised"), ("general", "general"), ("product_unacceptable", "general"),
    ("debit_not_authorized", "fraudulent"), ("Duplicate Processing", "duplicate"),
    ("Cancelled Recurring Transaction", "subscription_cancelled"), ("Merchandise Not Received", "product_not_received"),
    ("No Cardholder Authorisation", "fraudulent"), ("", "general"),
])
def test_reason_families(reason: str, family: str) -> None:
    assert reason_family(reason) == family and family in FAMILIES


def test_sample_dispute_is_one_story_with_the_duplicate_capture() -> None:
    tenant, run = sample_load(actor="test")
    triage = dispute_triage(tenant=tenant, dispute_id="dp_1Nw0001", as_of=AS_OF)

    assert (triage["family"], triage["days_left"], triage["amount_minor"], triage["display"]) == (
        "duplicate", 2, 6500, "65.00 USD")
    assert triage["order_id"] == "NW-1003" and triage["due_soon"] is True
    [link] = triage["linked_breaks"]
    assert link["kind"] == "duplicate_capture" and link["break_id"] == run.breaks.get(kind="duplicate_capture").pk
    assert "one story" in triage["same_story"]
    assert triage["requires_human_decision"] is True and triage["approver"] == "finance approver"
    likelihood = triage["win_likelihood"]
    assert likelihood["level"] == "low"
    assert likelihood["score"] == likelihood["base"] + sum(r["points"] for r in likelihood["reasons"])
    assert any("captured twice" in r["why"] for r in likelihood["reasons"])
    assert triage["recommendation"]["action"] == "accept"
    assert triage["recommendation"]["approver"] == "finance approver"


def test_duplicate_dispute_without_a_double_charge_is_worth_fighting(tenant) -> None:
    load(tenant, "orders", [order("B-1", 4000, ref="ch_b1", status="shipped")])
    load(tenant, "provider", [txn("tb1", "charge", 4000, charge="ch_b1")])
    load(tenant, "disputes", [_dispute("dp_b1", "ch_b1", 4000, "2026-11-20", reason="duplicate")])
    triage = dispute_triage(tenant=tenant, dispute_id="dp_b1", as_of=AS_OF)

    assert triage["linked_breaks"] == [] and triage["same_story"] is None
    assert triage["win_likelihood"]["level"] == "high"
    assert triage["recommendation"]["action"] == "submit_evidence"


def test_fraud_without_order_is_low_and_says_why(tenant) -> None:
    load(tenant, "provider", [txn("tf", "charge", 9000, charge="ch_f")])
    load(tenant, "disputes", [_dispute("dp_f", "ch_f", 9000, "2026-11-25", reason="fraudulent")])
    triage = dispute_triage(tenant=tenant, dispute_id="dp_f", as_of=AS_OF)

    whys = " | ".join(r["why"] for r in triage["win_likelihood"]["reasons"])
    assert "no imported order" in whys and "3-D Secure" in whys
    assert triage["win_likelihood"]["level"] == "low"


def test_credit_not_processed_with_a_refund_on_record_scores_up(tenant) -> None:
    load(tenant, "orders", [order("C-1", 5000, ref="ch_c")])
    load(tenant, "provider", [txn("tc", "charge", 5000, charge="ch_c"),
                              txn("tc_r", "refund", -5000, "2026-11-05", charge="ch_c")])
    load(tenant, "disputes", [_dispute("dp_c", "ch_c", 5000, "2026-11-20", reason="credit_not_processed")])
    triage = dispute_triage(tenant=tenant, dispute_id="dp_c", as_of=AS_OF)
    assert {"points": 30, "why": "a full refund of 50.00 USD was already issued"} in triage["win_likelihood"]["reasons"]


def test_past_deadline_is_accept_and_zero(tenant) -> None:
    load(tenant, "disputes", [_dispute("dp_old", "ch_x", 1000, "2026-11-10", reason="general")])
    triage = dispute_triage(tenant=tenant, dispute_id="dp_old", as_of=AS_OF)
    assert triage["days_left"] == -6 and triage["win_likelihood"]["score"] == 0
    assert triage["recommendation"]["action"] == "accept" and triage["due_soon"] is False


def test_list_orders_by_deadline_and_filters_status(tenant) -> None:
    load(tenant, "disputes", [
        _dispute("dp_late", "ch_1", 1000, "2026-11-30", reason="general"),
        _dispute("dp_soon", "ch_2", 2000, "2026-11-17", reason="fraudulent"),
        _dispute("dp_won", "ch_3", 3000, "2026-11-12", reason="duplicate", status="won"),
        _dispute("dp_none", "ch_4", 500, None, reason="general", status="warning_needs_response"),
    ])
    assert [d["dispute_id"] for d in dispute_list(tenant=tenant, as_of=AS_OF)] == [
        "dp_soon", "dp_late", "dp_none", "dp_won"]
    assert [d["dispute_id"] for d in dispute_list(tenant=tenant, as_of=AS_OF, status="open")] == [
        "dp_soon", "dp_late", "dp_none"]
    assert [d["dispute_id"] for d in dispute_list(tenant=tenant, as_of=AS_OF, status="closed")] == ["dp_won"]
    assert [d["dispute_id"] for d in dispute_list(tenant=tenant, as_of=AS_OF, status="won")] == ["dp_won"]
    with pytest.raises(ReconLookupError) as exc:
        dispute_list(tenant=tenant, as_of=AS_OF, status="pending_forever")
    assert exc.value.reason == "invalid_status"


def test_a_newer_file_closes_the_dispute_and_a_later_date_hides_new_ones(tenant) -> None:
    load(tenant, "disputes", [_dispute("dp_1", "ch_1", 1000, "2026-11-20", reason="general")])
    load(tenant, "disputes", [_dispute("dp_1", "ch_1", 1000, "2026-11-20", reason="general", status="lost")])
    assert dispute_list(tenant=tenant, as_of=AS_OF, status="open") == []
    assert dispute_list(tenant=tenant, as_of=date(2026, 11, 9)) == []  # opened on the 10th


def test_unknown_and_other_tenants_disputes_raise(tenant, other_tenant) -> None:
    load(other_tenant, "disputes", [_dispute("dp_theirs", "ch_1", 1000, "2026-11-20", reason="general")])
    for dispute_id in ("dp_missing", "dp_theirs"):
        with pytest.raises(ReconLookupError) as exc:
            dispute_triage(tenant=tenant, dispute_id=dispute_id, as_of=AS_OF)
        assert exc.value.reason == "dispute_not_found"
    assert dispute_list(tenant=tenant, as_of=AS_OF) == []


def test_triage_reads_only(tenant) -> None:
    load(tenant, "disputes", [_dispute("dp_1", "ch_1", 1000, "2026-11-20", reason="general")])
    run_create(tenant=tenant, as_of=AS_OF, actor="test")
    from paypilot.models import AuditEvent
    from reconciliation.models import Run

    before = (AuditEvent.objects.count(), Run.objects.count())
    dispute_triage(tenant=tenant, dispute_id="dp_1", as_of=AS_OF)
    dispute_list(tenant=tenant, as_of=AS_OF)
    assert (AuditEvent.objects.count(), Run.objects.count()) == before
