"""Bearer tokens, roles, tenant isolation and the audit event each rejection writes."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from paypilot.auth import PERMISSIONS, role_allows
from paypilot.models import ApiToken, AuditEvent, Role, Tenant
from paypilot.services import tenant_set_status, token_issue, token_revoke

pytestmark = pytest.mark.django_db


def _client(plaintext: str | None) -> APIClient:
    client = APIClient()
    if plaintext is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


def _rejections() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event="paypilot.auth.rejected").order_by("id"))


def test_no_plaintext_token_anywhere_in_the_database(tenant):
    issued = token_issue(tenant=tenant, role=Role.TENANT_ADMIN)
    secret = issued.plaintext.split("_", 2)[2]
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                text = " ".join(str(v) for v in row)
                assert secret not in text, f"token secret found in {table}"
                assert issued.plaintext not in text
    assert ApiToken.objects.get().secret_hash != secret


def test_valid_token_is_accepted_and_last_use_recorded(tenant):
    issued = token_issue(tenant=tenant, role=Role.TENANT_ADMIN)
    response = _client(issued.plaintext).get("/tokens")
    assert response.status_code == 200
    assert [t["prefix"] for t in response.json()["tokens"]] == [issued.token.prefix]
    assert "secret_hash" not in response.json()["tokens"][0]
    issued.token.refresh_from_db()
    assert issued.token.last_used_at is not None


@pytest.mark.parametrize(
    "header",
    [None, "Bearer pp_0123456789_wrong", "Bearer nonsense", "Basic dXNlcjpwYXNz", "Bearer "],
)
def test_missing_or_bad_token_gets_one_uniform_401(tenant, header):
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/tokens")
    assert response.status_code == 401
    body = response.json()
    refusal_id = body.pop("refusal_id")
    assert body == {"error": "unauthorized", "detail": "a valid bearer token is required"}
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response["X-Refusal-ID"] == refusal_id
    [event] = _rejections()
    assert event.detail["refusal_id"] == refusal_id


def test_right_prefix_wrong_secret_is_401(tenant):
    issued = token_issue(tenant=tenant, role=Role.TENANT_ADMIN)
    forged = f"pp_{issued.token.prefix}_{'A' * 43}"
    response = _client(forged).get("/tokens")
    assert response.status_code == 401
    assert _rejections()[0].detail["reason"] == "bad_token"


def test_revoked_token_gets_401_and_is_audited(tenant):
    issued = token_issue(tenant=tenant, role=Role.TENANT_ADMIN)
    assert token_revoke(token=issued.token) is True
    assert token_revoke(token=issued.token) is False  # second revoke is a no-op
    response = _client(issued.plaintext).get("/tokens")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    [event] = _rejections()
    assert event.detail["reason"] == "revoked_token"
    assert event.tenant == tenant
    assert event.detail["token_prefix"] == issued.token.prefix


def test_other_tenants_object_is_404_identical_to_missing(tenant, other_tenant):
    mine = token_issue(tenant=tenant, role=Role.TENANT_ADMIN)
    theirs = token_issue(tenant=other_tenant, role=Role.TENANT_ADMIN)
    client = _client(mine.plaintext)
    foreign = client.get(f"/tokens/{theirs.token.prefix}")
    missing = client.get("/tokens/ffffffffff")
    assert foreign.status_code == missing.status_code == 404
    foreign_body, missing_body = foreign.json(), missing.json()
    assert foreign_body.pop("refusal_id") != missing_body.pop("refusal_id")  # one id per answer
    assert foreign_body == missing_body == {"error": "not_found", "detail": "not found"}
    [event] = _rejections()
    assert event.detail["reason"] == "cross_tenant"
    assert event.tenant == tenant
    assert client.get(f"/tokens/{mine.token.prefix}").status_code == 200


@pytest.mark.parametrize(
    "status,reason",
    [(Tenant.Status.SUSPENDED, "tenant_suspended"), (Tenant.Status.DEACTIVATED, "tenant_deactivated")],
)
def test_inactive_tenant_token_is_refused_with_reason(tenant, status, reason):
    issued = token_issue(tenant=tenant, role=Role.TENANT_ADMIN)
    tenant_set_status(tenant=tenant, status=status)
    response = _client(issued.plaintext).get("/tokens")
    assert response.status_code == 403
    assert response.json()["error"] == reason
    [event] = _rejections()
    assert event.detail["reason"] == reason


def test_resumed_tenant_is_served_again(tenant):
    issued = token_issue(tenant=tenant, role=Role.TENANT_ADMIN)
    tenant_set_status(tenant=tenant, status=Tenant.Status.SUSPENDED)
    tenant_set_status(tenant=tenant, status=Tenant.Status.ACTIVE)
    assert _client(issued.plaintext).get("/tokens").status_code == 200


def test_role_without_permission_is_403_and_audited(tenant):
    issued = token_issue(tenant=tenant, role=Role.VIEWER)
    response = _client(issued.plaintext).get("/tokens")
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden_role"
    assert _rejections()[0].detail["reason"] == "forbidden_role"


def test_permission_table_is_the_single_source():
    assert all(role_allows(Role.PLATFORM_ADMIN, p) for p in PERMISSIONS)
    assert role_allows(Role.INTEGRATOR, "decide")
    assert not role_allows(Role.VIEWER, "decide")
    assert role_allows(Role.VIEWER, "report.read")
    with pytest.raises(KeyError):
        role_allows(Role.VIEWER, "no.such.permission")
