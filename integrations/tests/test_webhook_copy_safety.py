"""The webhook pipeline drafts with the slot rule: a provider's customer name is data, not copy."""

from __future__ import annotations

import pytest

from dunning.models import Draft
from integrations.tests.conftest import load_fixture

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("name", "reason"), [
    ("javascript:alert(1)", "url_or_scheme"),
    ("<img src=x onerror=alert(1)>", "markup"),
    ("Acme\u202egnp.exe", "control_character"),
])
def test_webhook_draft_leaves_a_hostile_provider_name_out(stripe_tenant, post_stripe, name, reason):
    payload = load_fixture("stripe", "invoice_payment_failed")
    payload["data"]["object"]["customer_name"] = name
    post_stripe(payload)
    draft = Draft.objects.get()
    assert draft.body.startswith("Hi there,") and name not in draft.body
    assert {"field": "name", "reason": reason} in draft.dropped_fields


def test_webhook_draft_keeps_a_legit_name(stripe_tenant, post_stripe):
    payload = load_fixture("stripe", "invoice_payment_failed")
    payload["data"]["object"]["customer_name"] = "José Müller-O'Brien"
    post_stripe(payload)
    draft = Draft.objects.get()
    assert draft.body.startswith("Hi José Müller-O'Brien,") and draft.dropped_fields == []
