"""GET /refusals: admin role, tenant-scoped, newest first, each with its gate and sources."""

from __future__ import annotations

from approvals.models import SuppressedSend
from approvals.sending import send_approved
from approvals.tests.factories import DraftFactory
from decisions.services import decision_refusal_record
from decisions.tests.factories import DecisionRecordFactory


def test_lists_all_sources_newest_first(api_client_for, tenant, make_approval, sending_on):
    decision_refusal_record(tenant=tenant, gate="fields", reason="unknown_field")
    DecisionRecordFactory(tenant=tenant, matched=False, rule_fired="default", failure_code="odd")
    DecisionRecordFactory(tenant=tenant, matched=True)  # a matched decision is not a refusal
    DraftFactory(tenant=tenant, fallback_used=True, guard_verdict={"ok": False, "reasons": ["link_host_not_allowed"]})
    DraftFactory(tenant=tenant, fallback_used=True, guard_verdict={"ok": True, "reasons": []})  # model call failed
    approval = make_approval(tenant)
    send_approved(approval_id=approval.pk)  # pending: not_approved

    response = api_client_for(tenant, "tenant_admin").get("/refusals")
    assert response.status_code == 200
    body = response.json()
    assert body["sources"] == {
        "decision_refusals": {"status": "read", "count": 1},
        "suppressed_sends": {"status": "read", "count": 1},
        "decision_fall_throughs": {"status": "read", "count": 1},
        "guard_swaps": {"status": "read", "count": 1},
        "delivery_unknown": {"status": "read", "count": 0},
    }
    by_source = {item["source"]: item for item in body["refusals"]}
    assert by_source["decision_refusals"]["gate"] == "fields"
    assert by_source["suppressed_sends"]["gate"] == "approved"
    assert by_source["suppressed_sends"]["reason"] == "not_approved"
    assert by_source["suppressed_sends"]["approval"] == approval.pk
    assert (by_source["decision_fall_throughs"]["gate"], by_source["decision_fall_throughs"]["reason"]) == (
        "rules_table", "fell_through")
    assert by_source["guard_swaps"]["reason"] == "link_host_not_allowed"
    stamps = [item["created_at"] for item in body["refusals"]]
    assert stamps == sorted(stamps, reverse=True)


def test_unknown_reason_is_unclassified_not_dropped(api_client_for, tenant, make_approval):
    approval = make_approval(tenant)
    SuppressedSend.objects.create(tenant=tenant, approval=approval, invoice=approval.invoice,
                                  gate="legacy", reason="some_old_reason")
    body = api_client_for(tenant, "tenant_admin").get("/refusals").json()
    assert body["refusals"][0]["gate"] == "unclassified"


def test_other_tenants_refusals_are_not_listed(api_client_for, tenant, other_tenant, make_approval):
    send_approved(approval_id=make_approval(other_tenant).pk)
    body = api_client_for(tenant, "tenant_admin").get("/refusals").json()
    assert body["refusals"] == [] and body["sources"]["suppressed_sends"]["count"] == 0


def test_roles_without_refusals_read_are_forbidden(api_client_for, tenant):
    for role in ("integrator", "approver", "viewer"):
        response = api_client_for(tenant, role).get("/refusals")
        assert response.status_code == 403 and response.json()["error"] == "forbidden_role"


def test_no_token_is_401(client, db):
    assert client.get("/refusals").status_code == 401


def test_limit_and_source_are_validated(api_client_for, tenant):
    api = api_client_for(tenant, "tenant_admin")
    for query in ("limit=0", "limit=501", "limit=abc"):
        response = api.get(f"/refusals?{query}")
        assert response.status_code == 422 and response.json()["field"] == "limit"
        assert "abc" not in response.json()["detail"]
    response = api.get("/refusals?source=nope")
    assert response.status_code == 422 and response.json()["field"] == "source"
    only = api.get("/refusals?source=suppressed_sends").json()
    assert only["sources"]["guard_swaps"]["status"] == "not_requested"


def test_limit_caps_rows(api_client_for, tenant):
    for n in range(3):
        decision_refusal_record(tenant=tenant, gate="parse", reason=f"r{n}")
    body = api_client_for(tenant, "tenant_admin").get("/refusals?limit=2").json()
    assert [item["reason"] for item in body["refusals"]] == ["r2", "r1"]
