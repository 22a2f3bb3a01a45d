"""Issue 18: unknown currencies never reach the ledger from any adapter, and every
provider's signature-age window includes its boundary (Stripe: 300 s in, 301 s out)."""

from __future__ import annotations

import json
import time

import pytest

from approvals.models import ApprovalRequest
from dunning.models import Draft
from integrations.models import WebhookEvent
from integrations.providers import Credentials, VerificationFailed
from integrations.providers import chargebee as chargebee_adapter
from integrations.providers import recharge as recharge_adapter
from integrations.providers import stripe as stripe_adapter
from integrations.tests.conftest import CHARGEBEE_PASSWORD, CHARGEBEE_USER, RECHARGE_SECRET, STRIPE_SECRET, load_fixture
from ledger.models import Invoice

pytestmark = pytest.mark.django_db


def _assert_ignored_and_nothing_written() -> None:
    event = WebhookEvent.objects.get()
    assert (event.status, event.outcome) == ("ignored", "currency_unknown")
    assert not Invoice.objects.exists() and not Draft.objects.exists() and not ApprovalRequest.objects.exists()


@pytest.mark.parametrize("currency", ["xxx", "QQQ", "xts", "XAU"])
def test_stripe_unknown_currency_is_ignored_never_a_ledger_row(stripe_tenant, post_stripe, currency):
    payload = load_fixture("stripe", "invoice_payment_failed")
    payload["data"]["object"]["currency"] = currency
    assert post_stripe(payload).status_code == 200  # stored (so nothing is lost), then refused
    _assert_ignored_and_nothing_written()


@pytest.mark.parametrize("currency", ["XXX", "QQQ"])
def test_recharge_unknown_currency_is_ignored(recharge_tenant, post_recharge, currency):
    payload = load_fixture("recharge", "charge_failed_card_expired")
    payload["charge"]["currency"] = currency
    assert post_recharge(payload).status_code == 200
    _assert_ignored_and_nothing_written()


@pytest.mark.parametrize("currency", ["XXX", "QQQ"])
def test_chargebee_unknown_currency_is_ignored(post_chargebee, currency):
    payload = load_fixture("chargebee", "payment_failed")
    payload["occurred_at"] = int(time.time())  # older events are refused as replays
    payload["content"]["invoice"]["currency_code"] = currency
    payload["content"]["transaction"]["currency_code"] = currency
    assert post_chargebee(payload).status_code == 200
    _assert_ignored_and_nothing_written()


def test_stripe_unknown_currency_on_a_paid_invoice_is_ignored_too(stripe_tenant, post_stripe):
    payload = load_fixture("stripe", "invoice_paid")
    payload["data"]["object"]["currency"] = "qqq"
    assert post_stripe(payload).status_code == 200
    assert WebhookEvent.objects.get().outcome == "currency_unknown"


def test_a_known_currency_still_goes_through(stripe_tenant, post_stripe, recovery):
    payload = load_fixture("stripe", "invoice_payment_failed")
    payload["data"]["object"]["currency"] = "jpy"
    assert post_stripe(payload).status_code == 200
    assert Invoice.objects.get().currency == "JPY"


# --- signature age boundaries (the clock pinned through `now`) ------------------------------

T = 1_780_000_000
BODY = json.dumps({"id": "evt_1", "type": "invoice.paid", "occurred_at": T}).encode()


@pytest.mark.parametrize(("age", "accepted"), [(0, True), (299, True), (300, True), (300.999, True),
                                               (301, False), (10_000, False)])
def test_stripe_tolerance_is_inclusive(age, accepted):
    header = stripe_adapter.sign(body=BODY, secret=STRIPE_SECRET, timestamp=T)
    credential = Credentials(secret=STRIPE_SECRET)

    def verify():  # type: ignore[no-untyped-def]
        stripe_adapter.verify(body=BODY, headers={"Stripe-Signature": header}, credential=credential, now=T + age)

    if accepted:
        verify()
    else:
        with pytest.raises(VerificationFailed) as refused:
            verify()
        assert refused.value.reason == "timestamp_stale"


def test_stripe_sdk_alone_is_exclusive_which_is_why_we_check_the_age_ourselves(monkeypatch):
    # Documents the SDK behaviour the adapter works around: its check is
    # `timestamp < time.time() - tolerance` on a float clock.
    import time as time_module

    from stripe import SignatureVerificationError, WebhookSignature

    header = stripe_adapter.sign(body=BODY, secret=STRIPE_SECRET, timestamp=T)
    monkeypatch.setattr(time_module, "time", lambda: T + 300.5)
    with pytest.raises(SignatureVerificationError):
        WebhookSignature.verify_header(BODY.decode(), header, STRIPE_SECRET, tolerance=300)
    stripe_adapter.verify(body=BODY, headers={"Stripe-Signature": header},
                          credential=Credentials(secret=STRIPE_SECRET))  # same clock: accepted


@pytest.mark.parametrize(("age", "accepted"), [(172_800, True), (172_800.5, True), (172_801, False),
                                               (-172_800, True), (-172_801, False)])
def test_recharge_window_is_inclusive(age, accepted):
    headers = recharge_adapter.sign_timestamped(body=BODY, secret=RECHARGE_SECRET, timestamp=T)
    credential = Credentials(secret=RECHARGE_SECRET)
    if accepted:
        recharge_adapter.verify(body=BODY, headers=headers, credential=credential, now=T + age)
    else:
        with pytest.raises(VerificationFailed, match="timestamp_stale"):
            recharge_adapter.verify(body=BODY, headers=headers, credential=credential, now=T + age)


@pytest.mark.parametrize(("age", "accepted"), [(4 * 86400, True), (4 * 86400 + 0.9, True), (4 * 86400 + 1, False)])
def test_chargebee_age_is_inclusive(age, accepted):
    credential = Credentials(secret=CHARGEBEE_PASSWORD, username=CHARGEBEE_USER, url_key="k" * 24)
    headers = {"Authorization": chargebee_adapter.basic_auth_header(username=CHARGEBEE_USER,
                                                                    password=CHARGEBEE_PASSWORD)}
    kwargs = {"body": BODY, "headers": headers, "credential": credential, "url_key": "k" * 24, "now": T + age}
    if accepted:
        chargebee_adapter.verify(**kwargs)
    else:
        with pytest.raises(VerificationFailed, match="timestamp_stale"):
            chargebee_adapter.verify(**kwargs)
