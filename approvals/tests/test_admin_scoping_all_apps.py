"""Every admin over tenant data shows a tenant's staff only their own tenant's rows."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.test import Client

from approvals.tests.factories import DraftFactory, finance_user
from decisions.models import DecisionRecord
from paypilot.admin_tenancy import TenantScopedAdminMixin
from paypilot.models import AuditEvent
from paypilot.services import audit_record, token_issue
from paypilot.tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def _tenant_models() -> list[type]:
    return [
        model for model in admin.site._registry
        if any(f.name == "tenant" for f in model._meta.get_fields()) or model._meta.label == "paypilot.Tenant"
    ]


# Admins no tenant user can open at all (every permission is a platform admin's only).
PLATFORM_ONLY = {"approvals.AdminMembership"}


def test_every_admin_over_tenant_data_is_tenant_scoped():
    unscoped = [
        model._meta.label for model in _tenant_models()
        if not isinstance(admin.site._registry[model], TenantScopedAdminMixin)
        and model._meta.label not in PLATFORM_ONLY
    ]
    assert unscoped == []


def test_staff_of_tenant_a_see_only_tenant_a_rows_in_read_only_admins():
    a, b = TenantFactory(slug="tenant-a"), TenantFactory(slug="tenant-b")
    DraftFactory(tenant=a)
    DraftFactory(tenant=b)
    audit_record(event="paypilot.test.a", tenant=a)
    audit_record(event="paypilot.test.b", tenant=b)
    token_issue(tenant=b, role="viewer")
    user = finance_user(tenant=a)
    user.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    client = Client()
    client.force_login(user)

    for url, own, foreign in [
        ("/admin/paypilot/auditevent/", "paypilot.test.a", "paypilot.test.b"),
        ("/admin/paypilot/tenant/", "tenant-a", "tenant-b"),
    ]:
        page = client.get(url).content.decode()
        assert own in page and foreign not in page, url

    own_decision = DecisionRecord.objects.get(tenant=a)
    foreign_decision = DecisionRecord.objects.get(tenant=b)
    assert client.get(f"/admin/decisions/decisionrecord/{own_decision.pk}/change/").status_code == 200
    assert client.get(f"/admin/decisions/decisionrecord/{foreign_decision.pk}/change/").status_code in (302, 404)
    drafts = client.get("/admin/dunning/draft/").context["cl"].result_list
    assert {d.tenant_id for d in drafts} == {a.pk}
    tokens = client.get("/admin/paypilot/apitoken/").context["cl"].result_list
    assert list(tokens) == []
    assert AuditEvent.objects.filter(tenant=b).exists()
