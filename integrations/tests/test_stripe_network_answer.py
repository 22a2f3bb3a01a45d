"""The network's own answer in a Stripe event (issue 15): card brand, network advice and
decline codes from both payload shapes reach decide(), and a Mastercard "do not try again"
(MAC 03) gets no retry, citing the rule."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from decisions.models import DecisionRecord
from integrations.providers import stripe as stripe_adapter
from integrations.tests.conftest import load_fixture

pytestmark = pytest.mark.django_db


def _modern(*, mac: str | None) -> dict[str, Any]:
    """The basil-and-later shape: payments.data[].payment.payment_intent.last_payment_error."""
    payload = copy.deepcopy(load_fixture("stripe", "invoice_payment_failed"))
    intent = payload["data"]["object"]["payments"]["data"][0]["payment"]["payment_intent"]
    intent["last_payment_error"].update({
        "code": "card_declined", "decline_code": "generic_decline", "network_advice_code": mac,
        "network_decline_code": "05", "payment_method": {"id": "pm_1", "type": "card",
                                                          "card": {"brand": "mastercard"}},
    })
    return payload


def _legacy_charge(*, mac: str | None) -> dict[str, Any]:
    """The pre-basil shape with the charge expanded: charge.outcome and payment_method_details."""
    payload = copy.deepcopy(load_fixture("stripe", "invoice_payment_failed_legacy"))
    invoice = payload["data"]["object"]
    invoice["payment_intent"] = "pi_3PqLegacyGlobex"  # not expanded: the charge carries the answer
    invoice["charge"] = {
        "id": "ch_3PqLegacyGlobex", "object": "charge", "failure_code": "card_declined",
        "outcome": {"type": "issuer_declined", "advice_code": "do_not_try_again", "network_advice_code": mac,
                    "network_decline_code": "05"},
        "payment_method_details": {"type": "card", "card": {"brand": "mastercard"}},
    }
    return payload


@pytest.mark.parametrize("shape", [_modern, _legacy_charge])
def test_translation_carries_the_network_answer(shape) -> None:  # type: ignore[no-untyped-def]
    payload = shape(mac="03")
    event = stripe_adapter.translate(payload=payload, event_type=payload["type"], context=None)  # type: ignore[arg-type]
    assert (event.card_brand, event.network_advice_code, event.network_decline_code) == ("mastercard", "03", "05")


def test_network_answer_refuses_what_is_not_a_code() -> None:
    assert stripe_adapter.network_answer({"card_brand": {"x": 1}, "network_advice_code": "<b>",
                                          "network_decline_code": "123456"}) == {
        "card_brand": "", "network_advice_code": "", "network_decline_code": ""}
    assert stripe_adapter.network_answer(None)["card_brand"] == ""


@pytest.mark.parametrize("shape", [_modern, _legacy_charge])
def test_signed_event_with_mac_03_gets_no_retry_and_cites_the_rule(shape, stripe_tenant, post_stripe) -> None:  # type: ignore[no-untyped-def]
    assert post_stripe(shape(mac="03")).status_code == 200
    record = DecisionRecord.objects.get()
    assert (record.card_brand, record.network_advice_code) == ("mastercard", "03")
    assert record.retry_at is None and record.schedule_source == "network_rule"
    assert record.action == "request_new_payment_method"
    assert [c["rule_id"] for c in record.network_rules] == ["mc_mac_03_never"]


def test_same_event_without_the_advice_code_is_retried(stripe_tenant, post_stripe) -> None:  # type: ignore[no-untyped-def]
    payload = _modern(mac=None)
    assert post_stripe(payload).status_code == 200
    record = DecisionRecord.objects.get()
    assert record.network_advice_code == "" and record.retry_at is not None and record.network_rules == []
