"""refund_check: already refunded, partially refunded, disputed, duplicate capture (refund the
duplicate, not the original), amount above captured minus refunded; never executes."""

from __future__ import annotations

from datetime import date

import pytest

from reconciliation.services.errors import ReconLookupError
from reconciliation.services.refunds import refund_check
from reconciliation.services.sample import sample_load
from reconciliation.tests.factories import dispute, load, order, txn

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)


def codes(answer: dict) -> list[tuple[str, str]]:
    return [(c["code"], c["severity"]) for c in answer["checks"]]


def check(tenant, **kwargs):
    kwargs.setdefault("amount_minor", None)
    kwargs.setdefault("currency", None)
    answer = refund_check(tenant=tenant, as_of=AS_OF, **kwargs)
    assert answer["executes_refund"] is False and answer["approver"] == "finance approver"
    assert answer["recommendation"]["approver"] == "finance approver"
    return answer


@pytest.fixture
def books(tenant):
    load(tenant, "orders", [order("O-1", 5000, ref="ch_1"), order("O-2", 3000, ref="ch_2"),
                            order("O-3", 2000, ref="ch_3"), order("O-4", 6500, ref="ch_4"),
                            order("O-5", 1000)])
    load(tenant, "provider", [
        txn("t1", "charge", 5000, charge="ch_1"),
        txn("t2", "charge", 3000, charge="ch_2"), txn("t2r", "refund", -1000, charge="ch_2"),
        txn("t3", "charge", 2000, charge="ch_3"), txn("t3r", "refund", -2000, charge="ch_3"),
        txn("t4", "charge", 6500, charge="ch_4"), txn("t4b", "charge", 6500, charge="ch_4b", order_ref="O-4",
                                                      clock="12:05:00"),
        txn("t6", "charge", 1200, charge="ch_6"),
    ])
    load(tenant, "disputes", [dispute("dp_6", "ch_6", 1200, "2026-11-20")])
    return tenant


def test_a_clean_charge_is_safe(books) -> None:
    answer = check(books, order_id="O-1", amount_minor=5000, currency="usd")
    assert answer["safe"] is True and answer["appropriate"] is True and codes(answer) == []
    assert answer["refundable"] == {"amount_minor": 5000, "currency": "USD", "display": "50.00 USD"}
    assert answer["recommendation"]["action"] == "refund"


def test_partially_refunded_warns_and_caps_the_amount(books) -> None:
    answer = check(books, charge_id="ch_2")
    assert codes(answer) == [("partially_refunded", "warn")] and answer["safe"] is True
    assert answer["amount"]["amount_minor"] == 2000  # no amount: what is left
    over = check(books, charge_id="ch_2", amount_minor=2500, currency="USD")
    assert ("amount_above_refundable", "block") in codes(over) and over["safe"] is False
    assert "30.00 USD - 10.00 USD = 20.00 USD" in over["recommendation"]["text"]


def test_already_refunded_is_blocked(books) -> None:
    answer = check(books, order_id="O-3")
    assert ("already_refunded", "block") in codes(answer) and answer["safe"] is False


def test_duplicate_capture_refund_the_duplicate_not_the_original(books) -> None:
    original = check(books, charge_id="ch_4")
    assert codes(original) == [("duplicate_original", "block")]
    assert "Refund the duplicate (ch_4b), not the original" in original["recommendation"]["text"]
    extra = check(books, charge_id="ch_4b")
    assert codes(extra) == [("duplicate_extra", "ok")] and extra["safe"] is True
    by_order = check(books, order_id="O-4")
    assert by_order["charge_id"] == "ch_4b" and by_order["safe"] is True


def test_disputed_charge_is_blocked(books) -> None:
    answer = check(books, charge_id="ch_6")
    assert ("disputed", "block") in codes(answer)
    assert "pay the customer twice" in answer["recommendation"]["text"]


def test_the_sample_duplicate_is_disputed_so_no_refund() -> None:
    tenant, _ = sample_load(actor="test")
    answer = check(tenant, order_id="NW-1003")
    assert answer["charge_id"] == "ch_3Nw1003b"
    assert codes(answer) == [("disputed", "block"), ("duplicate_extra", "ok")] and answer["safe"] is False


def test_currency_and_order_without_capture(books) -> None:
    assert ("currency_mismatch", "block") in codes(check(books, order_id="O-1", amount_minor=100, currency="EUR"))
    assert codes(check(books, order_id="O-5")) == [("order_not_captured", "block")]


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({}, "order_or_charge_required"),
    ({"order_id": "nope"}, "order_not_found"),
    ({"charge_id": "ch_nope"}, "charge_not_found"),
    ({"order_id": "O-1", "amount_minor": 0, "currency": "USD"}, "invalid_amount"),
    ({"order_id": "O-1", "amount_minor": 1.5, "currency": "USD"}, "invalid_amount"),
    ({"order_id": "O-1", "amount_minor": 100, "currency": "XQQ"}, "invalid_currency"),
])
def test_refusals(books, kwargs, reason) -> None:
    with pytest.raises(ReconLookupError) as exc:
        check(books, **kwargs)
    assert exc.value.reason == reason


def test_another_tenants_order_is_not_found(books, other_tenant) -> None:
    with pytest.raises(ReconLookupError) as exc:
        check(other_tenant, order_id="O-1")
    assert exc.value.reason == "order_not_found"
