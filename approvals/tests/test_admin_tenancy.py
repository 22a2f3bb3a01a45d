"""paypilot.admin_tenancy: the scoping helpers every tenant-data ModelAdmin relies on."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser

from approvals.models import AdminMembership, ApprovalRequest
from approvals.tests.factories import UserFactory
from paypilot.admin_tenancy import admin_is_platform, admin_scope_queryset, admin_tenant_for


def test_scope_by_membership(tenant, other_tenant, make_approval):
    mine, theirs = make_approval(tenant), make_approval(other_tenant)
    member = UserFactory()
    AdminMembership.objects.create(user=member, tenant=tenant)
    member.refresh_from_db()
    qs = ApprovalRequest.objects.all()
    assert list(admin_scope_queryset(qs, user=member)) == [mine]
    assert list(admin_scope_queryset(qs, user=member, tenant_field="invoice__tenant")) == [mine]
    assert admin_tenant_for(member) == tenant and not admin_is_platform(member)

    superuser = UserFactory(is_superuser=True)
    assert set(admin_scope_queryset(qs, user=superuser)) == {mine, theirs}
    assert admin_is_platform(superuser)


def test_fails_closed_without_membership(tenant, make_approval):
    make_approval(tenant)
    for user in (UserFactory(), AnonymousUser(), UserFactory(is_superuser=True, is_active=False)):
        assert admin_scope_queryset(ApprovalRequest.objects.all(), user=user).count() == 0
        assert admin_tenant_for(user) is None
