"""The admin login form with the lockout (paypilot.lockout) in front of the password check."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError

from paypilot.lockout import (
    lockout_message,
    login_failure_record,
    login_lockout_check,
    login_success_record,
)
from paypilot.ratelimit import client_address


class LockoutAdminAuthenticationForm(AdminAuthenticationForm):
    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        client = client_address(self.request) if self.request is not None else ""
        locked = login_lockout_check(username=username, client=client)
        if locked is not None:
            reason, seconds = locked
            raise ValidationError(lockout_message(reason=reason, seconds=seconds), code=reason)
        try:
            cleaned = super().clean()
        except ValidationError:
            if username:
                login_failure_record(username=username, client=client)
            raise
        login_success_record(username=username)
        return cleaned
