"""The admin shows the append-only tables and offers no add, change or delete."""

from __future__ import annotations

import pytest
from django.contrib.admin.sites import site
from django.test import RequestFactory

from decisions.models import DecisionOutcome, DecisionRecord, DecisionRefusal
from decisions.tests.factories import DecisionRecordFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("model", [DecisionRecord, DecisionOutcome, DecisionRefusal])
def test_read_only(model, admin_user):  # type: ignore[no-untyped-def]
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    model_admin = site._registry[model]
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def test_changelist_renders(admin_client, tenant):  # type: ignore[no-untyped-def]
    DecisionRecordFactory(tenant=tenant, invoice_ref="in_admin_1")
    response = admin_client.get("/admin/decisions/decisionrecord/")
    assert response.status_code == 200 and b"in_admin_1" in response.content


def test_decision_changelist_names_the_network_rules_with_their_sources(admin_client, tenant):  # type: ignore[no-untyped-def]
    from decisions import rules, services

    decision = rules.decide(failure_code="insufficient_funds", card_brand="mastercard", network_advice_code="03")
    services.decision_record(tenant=tenant, invoice_ref="in_mc_admin", decision=decision, source="api")
    page = admin_client.get("/admin/decisions/decisionrecord/").content.decode()
    assert "mc_mac_03_never" in page
    assert decision.network_rules[0]["source_url"] in page
