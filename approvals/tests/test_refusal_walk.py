"""manage.py refusal_walk runs in the suite: every expected refusal fires, no control shows."""

from __future__ import annotations

import pytest
from django.core import mail
from django.core.management import CommandError, call_command

from approvals import gates
from approvals.models import ApprovalRequest
from paypilot.models import Tenant


def test_walk_passes_and_leaves_nothing_behind(db, capsys):
    call_command("refusal_walk")
    out = capsys.readouterr().out
    assert "all 8 cases behaved" in out
    for name in ("refused /decide body", "fall-through", "allowlist refusal", "output-guard refusal",
                 "guard-swapped model draft", "expired approval", "control: matched decision",
                 "control: clean approved send"):
        assert name in out
    assert "FAIL" not in out
    assert not Tenant.objects.filter(slug__startswith="refusal-walk-").exists()
    assert not ApprovalRequest.objects.exists()


def test_walk_fails_when_an_expected_refusal_is_missing(db, monkeypatch):
    # Break the allowlist: everybody passes, so the allowlist refusal never happens.
    monkeypatch.setattr(gates, "recipient_allowlisted", lambda address, allowlist: True)
    with pytest.raises(CommandError, match="allowlist refusal"):
        call_command("refusal_walk")


def test_walk_fails_when_a_control_appears(db, monkeypatch):
    # A gate that refuses everything makes the clean send appear among the refusals.
    always = gates.Gate("always", "always_refuses", lambda ctx: False)
    monkeypatch.setattr(gates, "SEND_GATES", (*gates.SEND_GATES, always))
    with pytest.raises(CommandError, match="control: clean approved send"):
        call_command("refusal_walk")
    assert mail.outbox == []
