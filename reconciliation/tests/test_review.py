"""The morning review on the sample tenant (every planted problem named, the dispute linked to
the duplicate charge), which run it reads, break_explain, and `manage.py recon_review`."""

from __future__ import annotations

import json
from datetime import date
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from paypilot.models import AuditEvent
from reconciliation.models import Break, Run
from reconciliation.services.errors import ReconLookupError
from reconciliation.services.review import break_explain, morning_review
from reconciliation.services.sample import sample_load
from reconciliation.tests.factories import load, order

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)
PLANTED = {"duplicate_capture", "fee_mismatch", "payout_short", "payout_missing", "missing_capture",
           "capture_without_order", "amount_mismatch"}


def test_sample_review_names_every_planted_problem_and_the_linked_dispute() -> None:
    tenant, run = sample_load(actor="test")
    review = morning_review(tenant=tenant, as_of=AS_OF)

    assert review["run"] == {"id": run.pk, "stored": True, "input_digest": run.input_digest}
    assert review["match_rate"] == json.loads(run.result_json)["match_rate"]
    assert review["match_rate_display"] == "83.33%"  # 15 of 18 orders (the workspace and the other formats)
    assert review["money_in_breaks"] == [{"amount_minor": 26361, "currency": "USD", "display": "263.61 USD"}]
    assert {t["kind"] for t in review["todo"]} == PLANTED | {"dispute_due"}
    biggest = review["biggest_breaks"]
    assert len(biggest) == 5 and biggest[0]["kind"] == "payout_missing" and biggest[0]["break_id"]
    duplicate = next(b for b in biggest if b["kind"] == "duplicate_capture")
    assert duplicate["related_disputes"] == ["dp_1Nw0001"]
    [due] = review["disputes_due"]
    assert due["dispute_id"] == "dp_1Nw0001" and due["linked_breaks"][0]["kind"] == "duplicate_capture"
    assert due["requires_human_decision"] is True
    story = next(t for t in review["todo"] if t["kind"] == "duplicate_capture")
    assert story["linked_dispute"] == "dp_1Nw0001" and story["action"].startswith("Do not refund")
    assert all(t["approver"] in ("finance approver", "controller") for t in review["todo"])
    marks = {t["kind"]: t["only_a_person_can_approve"] for t in review["todo"]}
    assert marks["dispute_due"] and marks["duplicate_capture"] and not marks["payout_missing"]
    assert review["executes_anything"] is False
    assert any("dp_1Nw0001" in line for line in review["summary"])


def test_without_a_stored_run_it_computes_and_stores_nothing_unless_asked(tenant) -> None:
    load(tenant, "orders", [order("A-1", 1000)])
    audits = AuditEvent.objects.count()
    review = morning_review(tenant=tenant, as_of=AS_OF)
    assert review["run"]["stored"] is False and review["breaks_count"] == 1
    assert review["biggest_breaks"][0]["break_id"] is None
    assert not Run.objects.exists() and AuditEvent.objects.count() == audits

    stored = morning_review(tenant=tenant, as_of=AS_OF, store=True, actor="test")
    assert stored["run"]["stored"] is True and Run.objects.count() == 1
    assert stored["biggest_breaks"][0]["break_id"] == Break.objects.get().pk
    again = morning_review(tenant=tenant, as_of=AS_OF, store=True)
    assert again["run"]["id"] == stored["run"]["id"] and Run.objects.count() == 1


def test_a_new_file_makes_the_stored_run_stale(tenant) -> None:
    load(tenant, "orders", [order("A-1", 1000)])
    first = morning_review(tenant=tenant, as_of=AS_OF, store=True)
    load(tenant, "orders", [order("A-2", 2000)])
    fresh = morning_review(tenant=tenant, as_of=AS_OF)
    assert fresh["run"]["stored"] is False and fresh["breaks_count"] == 2 and first["breaks_count"] == 1


def test_break_explain_and_refusals(other_tenant) -> None:
    tenant, run = sample_load(actor="test")
    brk = run.breaks.get(kind="duplicate_capture")
    explained = break_explain(tenant=tenant, break_id=brk.pk)

    assert explained["kind"] == "duplicate_capture" and explained["display"] == "65.00 USD"
    assert [c["transaction_id"] for c in explained["captures"]] == ["txn_1003", "txn_1003b"]
    assert explained["orders"][0]["order_id"] == "NW-1003"
    assert [d["dispute_id"] for d in explained["disputes"]] == ["dp_1Nw0001"]
    assert explained["recommendation"]["approver"] == "finance approver"
    fee = break_explain(tenant=tenant, break_id=run.breaks.get(kind="fee_mismatch").pk)
    assert fee["contract_version"] == "USD v1 from 2026-10-01" and fee["approver"] == "controller"
    for who, break_id in ((tenant, 10**9), (other_tenant, brk.pk)):
        with pytest.raises(ReconLookupError) as exc:
            break_explain(tenant=who, break_id=break_id)
        assert exc.value.reason == "break_not_found"


def test_command_prints_the_review_and_json() -> None:
    tenant, run = sample_load(actor="test")
    out = StringIO()
    call_command("recon_review", "--tenant", "sample", "--as-of", "2026-11-16", stdout=out)
    text = out.getvalue()
    assert f"(run {run.pk})" in text and "83.33% of 18 orders" in text
    assert "dp_1Nw0001" in text and "One story" not in text and "one story" in text
    assert "[APPROVAL: finance approver]" in text and "[inquiry: controller]" in text
    out = StringIO()
    call_command("recon_review", "--tenant", "sample", "--as-of", "2026-11-16", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["disputes_due"][0]["dispute_id"] == "dp_1Nw0001"
    with pytest.raises(CommandError):
        call_command("recon_review", "--tenant", "nobody", stdout=StringIO())


def test_command_stores_a_run_unless_told_not_to(tenant) -> None:
    load(tenant, "orders", [order("A-1", 1000)])
    call_command("recon_review", "--tenant", "acme", "--as-of", "2026-11-16", "--no-store", stdout=StringIO())
    assert not Run.objects.exists()
    call_command("recon_review", "--tenant", "acme", "--as-of", "2026-11-16", stdout=StringIO())
    assert Run.objects.filter(tenant=tenant, as_of=AS_OF).count() == 1
