"""Disputes, evidence packs, refund checks and the review as the application role under
row-level security (PostgreSQL only): another tenant's disputes are never visible, and a
dispute webhook is stored under the policy in its own tenant."""

from __future__ import annotations

from datetime import date

import pytest
from django.db import connection
from django.test import Client

from integrations.providers.stripe import sign
from integrations.services import credential_set
from integrations.tests.conftest import STRIPE_SECRET, body_of, load_fixture
from paypilot.pg_roles import app_role_apply
from paypilot.rls import rls_apply
from paypilot.services import tenant_create
from reconciliation.models import DisputeRow
from reconciliation.services.disputes import dispute_list, dispute_triage
from reconciliation.services.errors import ReconLookupError
from reconciliation.services.evidence import evidence_pack_draft
from reconciliation.services.refunds import refund_check
from reconciliation.services.review import break_explain, morning_review
from reconciliation.services.sample import sample_load
from reconciliation.tests.test_rls_postgres import ROLE, django_as

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="row-level security is PostgreSQL only")
AS_OF = date(2026, 11, 16)


@pytest.fixture
def two(transactional_db):  # type: ignore[no-untyped-def]
    a, run = sample_load(actor="test")
    b = tenant_create(slug="bravo", name="Bravo")
    credential_set(tenant=b, provider="stripe", secret=STRIPE_SECRET)
    rls_apply()
    app_role_apply(role=ROLE)
    return a, b, run


def test_another_tenants_disputes_are_never_visible(two) -> None:
    a, b, run = two
    brk = run.breaks.get(kind="duplicate_capture").pk
    with django_as(ROLE):
        assert [d["dispute_id"] for d in dispute_list(tenant=a, as_of=AS_OF)] == ["dp_1Nw0001"]
        assert dispute_list(tenant=b, as_of=AS_OF) == []
        for call in (lambda: dispute_triage(tenant=b, dispute_id="dp_1Nw0001", as_of=AS_OF),
                     lambda: evidence_pack_draft(tenant=b, dispute_id="dp_1Nw0001", as_of=AS_OF),
                     lambda: refund_check(tenant=b, order_id="NW-1003", amount_minor=None, currency=None),
                     lambda: break_explain(tenant=b, break_id=brk)):
            with pytest.raises(ReconLookupError):
                call()
        assert evidence_pack_draft(tenant=a, dispute_id="dp_1Nw0001", as_of=AS_OF)["proven_facts"]
        assert refund_check(tenant=a, order_id="NW-1003", amount_minor=None, currency=None)["safe"] is False
        review = morning_review(tenant=a, as_of=AS_OF)
        assert review["run"]["stored"] and review["disputes_due"][0]["dispute_id"] == "dp_1Nw0001"
        assert morning_review(tenant=b, as_of=AS_OF)["disputes_due"] == []


def test_a_dispute_webhook_is_stored_under_the_policy(two) -> None:
    a, b, _ = two
    body = body_of(load_fixture("stripe", "charge_dispute_created"))
    with django_as(ROLE):
        response = Client().post("/t/bravo/webhooks/stripe", data=body, content_type="application/json",
                                 headers={"Stripe-Signature": sign(body=body, secret=STRIPE_SECRET)})
        assert response.status_code == 200
        assert [d["dispute_id"] for d in dispute_list(tenant=b, as_of=AS_OF)] == ["du_1QdAcmeDup0001"]
        assert [d["dispute_id"] for d in dispute_list(tenant=a, as_of=AS_OF)] == ["dp_1Nw0001"]
    assert DisputeRow.objects.get(dispute_id="du_1QdAcmeDup0001").tenant_id == b.pk
