"""A refused webhook delivery carries the refusal id of its one audit row (paypilot.refusals)."""

from __future__ import annotations

import pytest

from integrations.models import WebhookEvent
from integrations.tests.conftest import load_fixture
from paypilot.models import AuditEvent
from paypilot.refusals import REFUSED_EVENT, refusal_audit_detail, refusal_find

pytestmark = pytest.mark.django_db


def test_bad_signature_answer_names_the_rejection_row(stripe_tenant, post_stripe):
    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"), secret="whsec_wrong")
    assert response.status_code == 400
    refusal_id = response.json()["refusal_id"]
    assert response["X-Refusal-ID"] == refusal_id
    event = refusal_find(refusal_id=refusal_id)
    assert (event.event, event.tenant, event.detail["reason"]) == (
        "integrations.webhook.rejected", stripe_tenant, "signature_mismatch")
    # One row per refusal: the inbox wrote it, the middleware adds no second one.
    assert not AuditEvent.objects.filter(event=REFUSED_EVENT).exists()
    assert not WebhookEvent.objects.exists()


def test_unknown_tenant_gets_an_id_and_a_row(post_stripe):
    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"), tenant="nobody")
    assert response.status_code == 404
    event = refusal_find(refusal_id=response["X-Refusal-ID"])
    assert (event.event, event.detail["route"]) == (REFUSED_EVENT, "t/<slug:tenant>/webhooks/<str:provider>")


def test_outside_a_request_there_is_no_refusal_id():
    assert refusal_audit_detail() == {}
