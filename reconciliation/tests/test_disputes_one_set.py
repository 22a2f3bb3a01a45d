"""Disputes from Stripe webhooks and from imported files are one set, joined by charge, for
every reader: the refund check, triage, the evidence pack, the list, the break detail and
the morning review. A dispute present in both sources counts once."""

from __future__ import annotations

from datetime import date

import pytest

from integrations.tests.conftest import load_fixture
from reconciliation.models import Break
from reconciliation.services.disputes import dispute_list, dispute_triage
from reconciliation.services.refunds import refund_check
from reconciliation.services.review import morning_review
from reconciliation.services.runs import run_create
from reconciliation.tests.factories import dispute, load, order, txn
from reconciliation.tests.test_dispute_webhooks import post  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)
CHARGE = "ch_3QdAcme1003b"  # the charge of the fixture's dispute du_1QdAcmeDup0001


def _captured(tenant) -> None:  # type: ignore[no-untyped-def]
    load(tenant, "orders", [order("A-1003", 6500, "2026-11-04", ref="ch_3QdAcme1003")])
    load(tenant, "provider", [txn("t1", "charge", 6500, "2026-11-04", charge="ch_3QdAcme1003", order_ref="A-1003"),
                              txn("t2", "charge", 6500, "2026-11-04", charge=CHARGE, order_ref="A-1003",
                                  clock="12:01:00")])


def test_check_refund_sees_a_dispute_that_came_by_webhook(tenant, post) -> None:  # noqa: F811
    _captured(tenant)
    post(load_fixture("stripe", "charge_dispute_created"))
    answer = refund_check(tenant=tenant, charge_id=CHARGE, amount_minor=6500, currency="USD", as_of=AS_OF)
    assert any(c["code"] == "disputed" for c in answer["checks"])


def test_check_refund_sees_a_webhook_dispute_whose_capture_is_not_imported(tenant, post) -> None:  # noqa: F811
    post(load_fixture("stripe", "charge_dispute_created"))  # nothing imported at all
    answer = refund_check(tenant=tenant, charge_id=CHARGE, amount_minor=6500, currency="USD", as_of=AS_OF)
    codes = [c["code"] for c in answer["checks"]]
    assert codes == ["disputed", "capture_not_imported"]
    assert answer["safe"] is False and answer["recommendation"]["action"] == "do_not_refund"
    assert "du_1QdAcmeDup0001" in answer["recommendation"]["text"]


def test_a_dispute_in_a_file_and_a_webhook_counts_once_everywhere(tenant, post) -> None:  # noqa: F811
    _captured(tenant)
    load(tenant, "disputes", [dispute("du_1QdAcmeDup0001", CHARGE, 6500, "2026-11-18")])
    due = morning_review(tenant=tenant, as_of=AS_OF)["disputes_due"]
    assert [d["dispute_id"] for d in due] == ["du_1QdAcmeDup0001"]  # the file says needs_response
    post(load_fixture("stripe", "charge_dispute_updated"))  # the same dispute, now under review
    answer = refund_check(tenant=tenant, charge_id=CHARGE, amount_minor=6500, currency="USD", as_of=AS_OF)
    assert [c["code"] for c in answer["checks"]].count("disputed") == 1
    assert "under_review" in answer["recommendation"]["text"]  # the state learned last
    assert [d["dispute_id"] for d in dispute_list(tenant=tenant, as_of=AS_OF)] == ["du_1QdAcmeDup0001"]
    assert dispute_triage(tenant=tenant, dispute_id="du_1QdAcmeDup0001", as_of=AS_OF)["status"] == "under_review"
    # Evidence is in (the webhook's state): nothing is due any more, and no second copy is.
    assert morning_review(tenant=tenant, as_of=AS_OF)["disputes_due"] == []
    run = run_create(tenant=tenant, as_of=AS_OF, actor="test")[0]
    brk = Break.objects.get(run=run, kind="duplicate_capture")
    from reconciliation.mcp_tools.analysis import _explain_break
    from reconciliation.mcp_tools.scope import TRANSPORT_STDIO, Caller

    explained = _explain_break(Caller(tenant=tenant, role="viewer", transport=TRANSPORT_STDIO), brk.pk, None, None)
    assert [(d["dispute_id"], d["status"]) for d in explained["rows"]["disputes"]] == [
        ("du_1QdAcmeDup0001", "under_review")]
