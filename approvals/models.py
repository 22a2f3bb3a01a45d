"""Admin tenant membership, approval requests, sends, suppressed sends and draft edits."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from paypilot.models import Tenant


class AdminMembership(models.Model):
    """Links a Django staff user to the one tenant whose data they see in the admin.

    Superusers are platform admins and need no membership. A staff user without one sees
    nothing (`paypilot.admin_tenancy` fails closed).
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="admin_membership"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="admin_members")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"user {self.user_id} @ {self.tenant_id}"
