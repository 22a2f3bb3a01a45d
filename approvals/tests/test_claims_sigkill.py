"""A real worker process SIGKILLed mid-send, then the sweeper (PostgreSQL: the child process
must see the test database, which SQLite's in-memory test database does not allow)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core import mail
from django.db import connection
from django.utils import timezone

from approvals.claims import SENDER_DIED, SENDER_DIED_AFTER_HANDOFF, send_claims_sweep
from approvals.models import EmailSend
from approvals.sending import send_approved
from approvals.services import approval_approve, approval_open
from approvals.tests.factories import DraftFactory, finance_user
from paypilot.services import tenant_create

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs a test database another process can open"),
    pytest.mark.django_db(transaction=True),
]

# The worker: one send_approved, stopped where the test wants it, then SIGKILLed.
CHILD = """
import os, sys, time
from pathlib import Path
import django
django.setup()
from approvals import sending
if sys.argv[2] == "before_handoff":
    def hang(**kwargs):
        Path(os.environ["PAYPILOT_TEST_HANG_MARKER"]).write_text("claimed, not handed over")
        time.sleep(120)
    sending._hand_off = hang
sending.send_approved(approval_id=int(sys.argv[1]))
"""


def _approved(monkeypatch):  # type: ignore[no-untyped-def]
    tenant = tenant_create(slug="acme", name="Acme Ltd")
    approval = approval_open(draft=DraftFactory(tenant=tenant))
    with monkeypatch.context() as patch:
        patch.setattr("approvals.services.send_enqueue", lambda **kwargs: None)
        approval_approve(approval=approval, user=finance_user(tenant=tenant))
    return approval


def _kill_worker_mid_send(approval_id: int, mode: str, tmp_path: Path) -> None:
    db = connection.settings_dict
    marker = tmp_path / "marker"
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "paypilot.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "PAYPILOT_SEND_EMAIL": "1", "PAYPILOT_ALLOWED_RECIPIENTS": "*", "PAYPILOT_AI_DISCLOSURE": "",
        "PAYPILOT_HIGH_VALUE_ANNUAL": "0", "PAYPILOT_SEND_FALLBACK_DIR": str(tmp_path / "fallback"),
        "EMAIL_BACKEND": "approvals.tests.backends.HangingBackend", "PAYPILOT_TEST_HANG_MARKER": str(marker),
        "PAYPILOT_LOG_LEVEL": "WARNING", "PYTHONPATH": str(ROOT),
    }
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(approval_id), mode], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:] if child.stderr else ""
            assert time.monotonic() < deadline, "the worker never reached the point to kill it at"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
        if child.stderr:
            child.stderr.close()
    assert child.returncode == -signal.SIGKILL


def _after_timeout():  # type: ignore[no-untyped-def]
    return timezone.now() + timedelta(seconds=settings.PAYPILOT_SEND_CLAIM_TIMEOUT + 1)


def test_worker_killed_before_the_hand_off_is_retried_once_and_sends_once(monkeypatch, tmp_path, sending_on):
    approval = _approved(monkeypatch)
    _kill_worker_mid_send(approval.pk, "before_handoff", tmp_path)
    send = EmailSend.objects.get(approval=approval)
    assert (send.status, send.handed_at) == (EmailSend.Status.SENDING, None)
    assert send_approved(approval_id=approval.pk).outcome == "already_done"  # a redelivered task
    assert send_claims_sweep(tenant_id=approval.tenant_id, now=timezone.now()).retried == []  # too soon

    assert send_claims_sweep(tenant_id=approval.tenant_id, now=_after_timeout()).retried == [approval.pk]
    send.refresh_from_db()
    assert (send.status, send.error_code, send.reclaimed) == (EmailSend.Status.RETRYING, SENDER_DIED, True)
    assert send_approved(approval_id=approval.pk).outcome == "sent"
    assert len(mail.outbox) == 1


def test_worker_killed_in_the_provider_call_is_delivery_unknown(monkeypatch, tmp_path, sending_on):
    approval = _approved(monkeypatch)
    _kill_worker_mid_send(approval.pk, "in_provider_call", tmp_path)
    send = EmailSend.objects.get(approval=approval)
    assert send.status == EmailSend.Status.SENDING and send.handed_at is not None

    assert send_claims_sweep(tenant_id=approval.tenant_id, now=_after_timeout()).unknown == [send.pk]
    send.refresh_from_db()
    assert (send.status, send.error_code) == (EmailSend.Status.UNKNOWN, SENDER_DIED_AFTER_HANDOFF)
    assert send_approved(approval_id=approval.pk).outcome == "already_done"
    assert mail.outbox == []
