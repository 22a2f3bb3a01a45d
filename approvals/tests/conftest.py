"""Fixtures for approvals tests: sending switched on into the locmem outbox, finance users."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from approvals.models import ApprovalRequest
from approvals.services import approval_open
from approvals.tests.factories import DraftFactory, finance_user


@pytest.fixture(autouse=True)
def _fallback_dir(settings, tmp_path):  # type: ignore[no-untyped-def]
    # Never write fallback files into the project tree from a test.
    settings.PAYPILOT_SEND_FALLBACK_DIR = tmp_path / "send-fallback"


@pytest.fixture
def sending_on(settings):  # type: ignore[no-untyped-def]
    """Real sending into pytest-django's locmem outbox, everybody allowlisted."""
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["*"]
    settings.PAYPILOT_AI_DISCLOSURE = ""
    settings.PAYPILOT_HIGH_VALUE_ANNUAL = 0
    settings.PAYPILOT_MAX_TOUCHES = 3
    settings.PAYPILOT_SEND_COOLDOWN_HOURS = 24
    return settings


@pytest.fixture
def make_approval(db) -> Callable[..., ApprovalRequest]:  # type: ignore[no-untyped-def]
    def _make(tenant: Any, **draft_fields: Any) -> ApprovalRequest:
        return approval_open(draft=DraftFactory(tenant=tenant, **draft_fields))

    return _make


@pytest.fixture
def approver(tenant):  # type: ignore[no-untyped-def]
    return finance_user(tenant=tenant)
