"""`manage.py tenants ...` and `manage.py tokens ...`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from paypilot.models import ApiToken, AuditEvent, Tenant

pytestmark = pytest.mark.django_db


def _call(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_tenant_lifecycle():
    assert "created tenant shop" in _call("tenants", "create", "shop", "--name", "Shop")
    with pytest.raises(CommandError):
        _call("tenants", "create", "shop")
    assert "shop\tactive\tShop" in _call("tenants", "list")
    assert "shop: suspended" in _call("tenants", "suspend", "shop")
    assert "(unchanged)" in _call("tenants", "suspend", "shop")
    assert "shop: active" in _call("tenants", "resume", "shop")
    assert "shop: deactivated" in _call("tenants", "deactivate", "shop")
    with pytest.raises(CommandError, match="deactivated"):
        _call("tenants", "resume", "shop")
    assert Tenant.objects.get(slug="shop").status == "deactivated"
    events = list(AuditEvent.objects.values_list("event", flat=True).order_by("id"))
    assert events == [
        "paypilot.tenant.created", "paypilot.tenant.suspended", "paypilot.tenant.active",
        "paypilot.tenant.deactivated",
    ]


def test_token_issue_prints_secret_once_and_it_works(tenant):
    out = _call("tokens", "issue", "--tenant", "acme", "--role", "tenant_admin", "--label", "ci")
    secret = out.strip().splitlines()[-1]
    assert secret.startswith("pp_")
    token = ApiToken.objects.get()
    assert secret not in _call("tokens", "list")
    assert token.prefix in _call("tokens", "list", "--tenant", "acme")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/tokens").status_code == 200
    assert "revoked" in _call("tokens", "revoke", token.prefix)
    assert "already revoked" in _call("tokens", "revoke", token.prefix)
    assert client.get("/tokens").status_code == 401


def test_token_issue_rejects_unknown_tenant_and_role(tenant):
    with pytest.raises(CommandError):
        _call("tokens", "issue", "--tenant", "nope", "--role", "viewer")
    with pytest.raises(CommandError):
        _call("tokens", "issue", "--tenant", "acme", "--role", "superuser")
    with pytest.raises(CommandError):
        _call("tokens", "revoke", "0000000000")


@pytest.mark.django_db
def test_qinfo_reports_the_cluster_overview(capsys):
    # django-q2's own monitor commands need `blessed`; qinfo prints straight to the terminal.
    call_command("qinfo")
    text = capsys.readouterr().out
    assert "Clusters" in text and "Schedules" in text
