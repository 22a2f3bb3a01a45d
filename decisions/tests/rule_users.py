"""Staff users for the rule-version tests: tenant admins with edit and/or approval rights."""

from __future__ import annotations

from django.apps import apps
from django.contrib.auth.models import Permission, User

from paypilot.models import Tenant

EDIT = ("add_ruleversion", "change_ruleversion", "view_ruleversion")
APPROVE = ("approve_ruleversion", "view_ruleversion")


def staff_user(*, tenant: Tenant, username: str, codenames: tuple[str, ...] = EDIT + APPROVE) -> User:
    """A staff user of `tenant` holding the named decisions permissions."""
    user = User.objects.create_user(username=username, password="pw-for-tests-only", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="decisions",
                                                         codename__in=codenames))
    # The membership model lives in the approvals app; looked up by name so the decisions
    # package never imports another app's models.
    apps.get_model("approvals", "AdminMembership").objects.create(user=user, tenant=tenant)
    return User.objects.get(pk=user.pk)
