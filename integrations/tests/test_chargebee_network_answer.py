"""Chargebee passes on the card network's decline code (transaction.gateway_error_detail)
and the card type: a Visa category-1 decline (closed account, 46) gets no retry and cites
the rule; without it the same failure is retried (issue 15)."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from decisions.models import DecisionRecord
from integrations.providers import chargebee as chargebee_adapter
from integrations.tests.conftest import load_fixture

pytestmark = pytest.mark.django_db


def _failed(*, network_code: str | None, card_type: str = "visa") -> dict[str, Any]:
    payload = copy.deepcopy(load_fixture("chargebee", "payment_failed"))
    payload["occurred_at"] = int(time.time())  # older events are refused as replays
    transaction = payload["content"]["transaction"]
    transaction["gateway_error_detail"] = {"error_code": "card_declined", "network_error_code": network_code,
                                           "network_error_message": "Closed account"}
    payload["content"]["card"] = {"customer_id": transaction["customer_id"], "card_type": card_type,
                                  "last4": "4242", "object": "card"}
    return payload


def test_network_answer_reads_the_gateway_error_detail_and_card_type():
    content = _failed(network_code="46")["content"]
    assert chargebee_adapter.network_answer(content, content["transaction"]) == {
        "card_brand": "visa", "network_decline_code": "46"}
    assert chargebee_adapter.network_answer({"card": "x"}, {"gateway_error_detail": ["x"]}) == {
        "card_brand": "", "network_decline_code": ""}
    assert chargebee_adapter.network_answer({}, {"gateway_error_detail": {"network_error_code": "<b>x</b>"}}) == {
        "card_brand": "", "network_decline_code": ""}


def test_a_visa_closed_account_decline_gets_no_retry_and_cites_the_rule(post_chargebee):
    assert post_chargebee(_failed(network_code="46")).status_code == 200
    record = DecisionRecord.objects.get()
    assert (record.card_brand, record.network_decline_code) == ("visa", "46")
    assert record.retry_at is None and record.schedule_source == "network_rule"
    assert [c["rule_id"] for c in record.network_rules] == ["visa_cat1_never"]


def test_without_the_network_code_the_failure_is_retried(post_chargebee):
    assert post_chargebee(_failed(network_code=None)).status_code == 200
    record = DecisionRecord.objects.get()
    assert record.network_decline_code == "" and record.network_rules == [] and record.retry_at is not None
