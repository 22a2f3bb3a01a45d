"""Pure translation: code tables (every published code), precedence, payload shapes."""

from __future__ import annotations

import csv
import filecmp
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings

from integrations.domain import Ignored, PaymentFailed, PaymentSucceeded, RetriesExhausted, SubscriptionCancelled
from integrations.providers import Credentials, VerificationFailed, chargebee, recharge, stripe
from integrations.tests.conftest import load_fixture

DATA = Path(__file__).resolve().parent.parent / "data"
FACTS = Path(settings.FACTS_DIR)
CTX = Credentials(default_currency="USD")


@pytest.mark.parametrize("name", ["stripe_decline_codes.csv", "stripe_decline_map.csv", "recharge_error_map.csv"])
def test_copied_tables_match_the_facts(name):
    if not (FACTS / name).is_file():
        pytest.skip("shared facts directory not present")
    assert filecmp.cmp(DATA / name, FACTS / name, shallow=False)


def _rows(name):
    with (DATA / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# --- Stripe -------------------------------------------------------------------------------

@pytest.mark.parametrize("row", _rows("stripe_decline_codes.csv"), ids=lambda r: r["decline_code"])
def test_every_published_stripe_decline_code_maps_to_its_failure_code(row):
    invoice = {"status": "open", "next_payment_attempt": 1781654405}
    error = {"decline_code": row["decline_code"], "payment_method_type": "card"}
    assert stripe.failure_code_for(invoice=invoice, error=error) == row["proposed_failure_code"]


def test_stripe_table_has_all_62_codes_plus_the_old_map():
    assert len(_rows("stripe_decline_codes.csv")) == 62
    assert stripe.DECLINE_CODES["card_declined"] == "generic_decline"


@pytest.mark.parametrize("advice,expected", [("do_not_try_again", "issuer_do_not_retry"),
                                             ("confirm_card_data", "card_details_invalid")])
def test_advice_code_outranks_everything(advice, expected):
    invoice = {"status": "open", "next_payment_attempt": None}
    error = {"advice_code": advice, "decline_code": "insufficient_funds", "payment_method_type": "sepa_debit"}
    assert stripe.failure_code_for(invoice=invoice, error=error) == expected


def test_try_again_later_advice_does_not_override():
    error = {"advice_code": "try_again_later", "decline_code": "expired_card", "payment_method_type": "card"}
    assert stripe.failure_code_for(invoice={"next_payment_attempt": 1}, error=error) == "card_expired"


def test_non_card_method_without_next_attempt_is_not_retried():
    invoice = {"status": "open", "next_payment_attempt": None}
    error = {"decline_code": "expired_card", "payment_method_type": "sepa_debit"}
    assert stripe.failure_code_for(invoice=invoice, error=error) == "direct_debit_not_retried"
    ach = {"decline_code": "insufficient_funds", "payment_method_type": "us_bank_account"}
    retried = {"next_payment_attempt": 5, "status": "open"}
    assert stripe.failure_code_for(invoice=retried, error=ach) == "insufficient_funds"


def test_unknown_or_missing_code_falls_back_to_generic_decline():
    invoice = {"status": "open", "next_payment_attempt": 1}
    assert stripe.failure_code_for(invoice=invoice, error={"decline_code": "brand_new_code"}) == "generic_decline"
    assert stripe.failure_code_for(invoice=invoice, error=None) == "generic_decline"


def test_retry_dependent_code_with_no_retry_left_is_retries_exhausted():
    invoice = {"status": "open", "next_payment_attempt": None, "collection_method": "charge_automatically"}
    error = {"decline_code": "insufficient_funds", "payment_method_type": "card"}
    assert stripe.failure_code_for(invoice=invoice, error=error) == "retries_exhausted"
    assert stripe.failure_code_for(invoice=invoice, error={"decline_code": "expired_card"}) == "card_expired"


def _translate_stripe(name):
    payload = load_fixture("stripe", name)
    return stripe.translate(payload=payload, event_type=payload["type"], context=CTX)


def test_stripe_basil_shape():
    event = _translate_stripe("invoice_payment_failed")
    assert isinstance(event, PaymentFailed)
    assert (event.subscription_id, event.provider_customer_id, event.failure_code) == (
        "sub_1RAcmeScale", "cus_QAcme001", "card_expired")
    assert event.hosted_invoice_url.startswith("https://invoice.stripe.com/")


def test_stripe_pre_basil_shape():
    event = _translate_stripe("invoice_payment_failed_legacy")
    assert isinstance(event, PaymentFailed)
    assert (event.subscription_id, event.failure_code, event.attempt) == ("sub_1PGlobexPro", "insufficient_funds", 2)


def test_stripe_other_types():
    assert isinstance(_translate_stripe("invoice_paid"), PaymentSucceeded)
    assert isinstance(_translate_stripe("invoice_payment_succeeded_legacy"), PaymentSucceeded)
    # provider times: the subscription's ended_at (one second before the event), the event's created
    assert _translate_stripe("customer_subscription_deleted") == SubscriptionCancelled(
        "sub_1RAcmeScale", occurred_at=datetime.fromtimestamp(1781740000, tz=UTC))
    assert _translate_stripe("invoice_marked_uncollectible") == RetriesExhausted(
        "in_1RzQ4xAcmeRobotics", occurred_at=datetime.fromtimestamp(1782086400, tz=UTC))
    assert _translate_stripe("invoice_payment_action_required") == Ignored("unhandled_event_type")


def test_stripe_enrich_fetches_decline_details_through_the_seam():
    payload = load_fixture("stripe", "invoice_payment_failed_no_details")
    calls = []

    def fetch(**kwargs):
        calls.append(kwargs)
        return {"decline_code": "lost_card", "payment_method_type": "card"}

    enriched = stripe.enrich(payload=payload, event_type="invoice.payment_failed", api_key="rk_test", fetch=fetch)
    event = stripe.translate(payload=enriched, event_type="invoice.payment_failed", context=CTX)
    assert event.failure_code == "issuer_do_not_retry"
    assert calls == [
        {"api_key": "rk_test", "invoice_id": "in_1RzR7aNorthwind", "payment_intent_id": "pi_3RzR7bNorth"}
    ]
    plain = stripe.translate(payload=payload, event_type="invoice.payment_failed", context=CTX)
    assert plain.failure_code == "generic_decline"


# --- Recharge -----------------------------------------------------------------------------

@pytest.mark.parametrize("row", _rows("recharge_error_map.csv"), ids=lambda r: r["error_type"])
def test_every_recharge_error_type_is_classified(row):
    payload = load_fixture("recharge", "charge_failed_2021_11")
    payload["charge"]["error_type"] = row["error_type"]
    event = recharge.translate(payload=payload, event_type="charge/failed", context=CTX)
    if row["paypilot_classification"] == "not_customer":
        assert event == Ignored("not_customer_error")
        return
    assert isinstance(event, PaymentFailed)
    assert event.failure_code == row["paypilot_classification"]
    suppressed = row["customer_emailed"].startswith("suppressed")
    assert (event.suppressed_reason == "recharge_retry_scheduled") is suppressed  # retry_date is set


def test_recharge_map_has_109_types():
    assert len(recharge.ERROR_TYPES) == 109


def test_recharge_without_retry_date_is_not_suppressed():
    payload = load_fixture("recharge", "charge_failed_2021_11")
    payload["charge"]["retry_date"] = None
    event = recharge.translate(payload=payload, event_type="charge/failed", context=CTX)
    assert event.suppressed_reason == "" and event.retry_at is None


def test_recharge_topic_header_must_agree_with_payload():
    paid = load_fixture("recharge", "charge_paid")
    failed = load_fixture("recharge", "charge_failed_2021_11")
    assert recharge.topic_of(failed, "charge/paid") == "charge/failed"  # a relabelled replay
    assert recharge.topic_of(paid, "charge/paid") == "charge/paid"
    assert recharge.topic_of(failed, "charge/updated") == "charge/failed"
    assert recharge.topic_of(load_fixture("recharge", "charge_upcoming"), "charge/upcoming") == "charge/upcoming"


def test_recharge_signature_schemes():
    body = b'{"charge": {"id": 1}}'
    creds = Credentials(secret="s3cret")
    recharge.verify(body=body, headers=recharge.sign_legacy(body=body, secret="s3cret"), credential=creds)
    recharge.verify(body=body, headers=recharge.sign_timestamped(body=body, secret="s3cret"), credential=creds)
    future = recharge.sign_timestamped(body=body, secret="s3cret", timestamp=2_000_000_000)
    with pytest.raises(VerificationFailed) as exc:
        recharge.verify(body=body, headers=future, credential=creds, now=1_700_000_000)
    assert exc.value.reason == "timestamp_stale"  # the 48 h window is symmetric


# --- Chargebee ----------------------------------------------------------------------------

@pytest.mark.parametrize("detail,method,next_retry,expected", [
    ({"recommendation_code": "do_not_try_again", "decline_code": "insufficient_funds"}, "card", 1,
     "issuer_do_not_retry"),
    ({"recommendation_code": "confirm_card_data"}, "card", 1, "card_details_invalid"),
    ({"decline_code": "insufficient_funds"}, "direct_debit", None, "direct_debit_not_retried"),
    ({"decline_code": "expired_card"}, "card", 1, "card_expired"),
    ({"decline_code": "incorrect_number"}, "card", 1, "card_details_invalid"),
    ({"error_cause_id": "gateway.transaction_processing.low_balance"}, "card", 1, "insufficient_funds"),
    ({"error_cause_id": "gateway.payment_method.not_found"}, "card", 1, "card_details_invalid"),
    ({"error_cause_id": "gateway.merchant_account.test_only"}, "card", 1, "generic_decline"),
    ({}, "card", 1, "generic_decline"),
])
def test_chargebee_failure_code_precedence(detail, method, next_retry, expected):
    transaction = {"payment_method": method, "error_detail": detail}
    assert chargebee.failure_code_for(invoice={"next_retry_at": next_retry}, transaction=transaction) == expected


def test_every_chargebee_error_cause_is_a_failure_code():
    from decisions.rules import FAILURE_CODES

    assert set(chargebee.ERROR_CAUSES.values()) <= set(FAILURE_CODES)
    assert chargebee.MERCHANT_SIDE_CAUSES <= set(chargebee.ERROR_CAUSES)


def test_chargebee_envelope_reads_resource_version():
    from integrations.tests.conftest import body_of

    env = chargebee.envelope(body=body_of(load_fixture("chargebee", "payment_succeeded")), headers={})
    assert (env.event_key, env.resource_key, env.resource_version) == (
        "ev_16BPgETyVrQcX2Lm", "invoice:inv_1042", 1780646400230)


def test_chargebee_basic_auth_needs_user_password_and_url_key():
    creds = Credentials(secret="pw", username="u", url_key="k" * 32)
    header = {"Authorization": chargebee.basic_auth_header(username="u", password="pw")}
    chargebee.verify(body=b"{}", headers=header, credential=creds, url_key="k" * 32)
    for url_key in ("", "k" * 31 + "x"):
        with pytest.raises(VerificationFailed):
            chargebee.verify(body=b"{}", headers=header, credential=creds, url_key=url_key)
    with pytest.raises(VerificationFailed) as exc:
        chargebee.verify(body=b"{}", headers={"Authorization": "Basic !!!"}, credential=creds, url_key="k" * 32)
    assert exc.value.reason == "signature_malformed"


# --- refunds, voids, event times (issue 12) --------------------------------------------------

def test_stripe_refund_and_void_translation():
    from integrations.domain import InvoiceVoided, PaymentRefunded

    assert _translate_stripe("invoice_voided") == InvoiceVoided(
        "in_1RzQ4xAcmeRobotics", occurred_at=datetime.fromtimestamp(1782000000, tz=UTC))
    refund = _translate_stripe("charge_refunded_legacy")
    assert refund == PaymentRefunded(
        external_invoice_id="in_1RzQ4xAcmeRobotics", refund_ref="ch_3RzQ9kGlobexPro", currency="USD",
        cumulative_minor=50000, occurred_at=datetime.fromtimestamp(1781913598, tz=UTC))  # the refund's created
    note = _translate_stripe("credit_note_created")
    assert (note.amount_minor, note.cumulative_minor, note.refund_ref) == (60000, None, "cn_1RzS2gAcmeRobotics")


def test_stripe_credit_note_without_money_back_is_ignored():
    payload = load_fixture("stripe", "credit_note_created")
    payload["data"]["object"].update(out_of_band_amount=None, refunds=[])
    assert stripe.translate(payload=payload, event_type="credit_note.created", context=CTX) == Ignored(
        "credit_note_without_refund")
    payload["data"]["object"]["invoice"] = None
    with pytest.raises(stripe.PayloadInvalid):
        stripe.translate(payload=payload, event_type="credit_note.created", context=CTX)


def test_chargebee_refund_needs_a_successful_refund_transaction_and_an_invoice():
    payload = load_fixture("chargebee", "payment_refunded")
    payload["content"]["transaction"]["type"] = "payment"
    assert chargebee.translate(payload=payload, event_type="payment_refunded", context=CTX) == Ignored(
        "not_a_successful_refund")
    payload = load_fixture("chargebee", "payment_refunded")
    del payload["content"]["invoice"], payload["content"]["credit_note"]
    payload["content"]["transaction"]["linked_credit_notes"] = []
    with pytest.raises(chargebee.PayloadInvalid):
        chargebee.translate(payload=payload, event_type="payment_refunded", context=CTX)


def test_recharge_refund_is_cumulative_in_minor_units():
    event = recharge.translate(payload=load_fixture("recharge", "charge_refunded"), event_type="charge/refunded",
                               context=CTX)
    assert (event.refund_ref, event.cumulative_minor, event.currency) == ("charge:581120044", 2000, "EUR")
    payload = load_fixture("recharge", "charge_refunded")
    del payload["charge"]["total_refunds"]
    with pytest.raises(recharge.PayloadInvalid):
        recharge.translate(payload=payload, event_type="charge/refunded", context=CTX)
