"""Admin login lockout per account and per client address (paypilot.lockout)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from paypilot.models import AuditEvent
from paypilot.ratelimit import counters_clear
from paypilot.services import pii_hash

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-staple-9"


@pytest.fixture(autouse=True)
def _limits(settings):  # type: ignore[no-untyped-def]
    counters_clear()
    settings.PAYPILOT_LOGIN_FAILURES_PER_ACCOUNT = 5
    settings.PAYPILOT_LOGIN_FAILURES_PER_IP = 8
    settings.PAYPILOT_LOGIN_LOCKOUT_SECONDS = 900
    yield
    counters_clear()


@pytest.fixture
def staff(db):  # type: ignore[no-untyped-def]
    return get_user_model().objects.create_superuser("finance", "finance@example.com", PASSWORD)


def _login(username: str, password: str, address: str = "203.0.113.9") -> tuple[bool, str]:
    client = Client()
    response = client.post("/admin/login/?next=/admin/", {"username": username, "password": password},
                           REMOTE_ADDR=address)
    logged_in = response.status_code == 302 and "_auth_user_id" in client.session
    return logged_in, response.content.decode()


def test_account_is_locked_after_five_failures_even_with_the_right_password(staff):
    for _ in range(5):
        assert _login("finance", "wrong")[0] is False

    logged_in, page = _login("finance", PASSWORD)

    assert not logged_in
    assert "Too many failed sign-ins for this account" in page and "try again in" in page
    failed = AuditEvent.objects.filter(event="paypilot.admin.login_failed")
    assert failed.count() == 5
    assert failed.first().detail == {"subject_hash": pii_hash("finance"), "client": "203.0.113.0/24"}
    locked = AuditEvent.objects.get(event="paypilot.admin.login_locked")
    assert locked.detail["reason"] == "account_locked" and locked.detail["count"] == 5


def test_account_lock_holds_from_another_address_and_any_case(staff):
    for n in range(5):
        _login("finance", "wrong", address=f"198.51.100.{n}")
    assert "this account" in _login("FINANCE", PASSWORD, address="192.0.2.1")[1]
    assert _login("finance", PASSWORD, address="192.0.2.1")[0] is False


def test_locked_attempts_write_no_rows(staff):
    for _ in range(5):
        _login("finance", "wrong")
    before = AuditEvent.objects.count()
    for _ in range(20):
        _login("finance", "wrong")
    assert AuditEvent.objects.count() == before


def test_address_is_locked_after_failures_over_many_accounts(staff):
    for n in range(8):
        _login(f"guess{n}", "wrong")
    logged_in, page = _login("finance", PASSWORD)
    assert not logged_in and "Too many failed sign-ins for this address" in page
    assert _login("finance", PASSWORD, address="192.0.2.50")[0] is True  # the account itself is fine


def test_a_correct_login_clears_the_account_failures(staff):
    for _ in range(4):
        _login("finance", "wrong")
    assert _login("finance", PASSWORD)[0] is True
    for _ in range(4):
        _login("finance", "wrong", address="192.0.2.7")
    assert _login("finance", PASSWORD, address="192.0.2.7")[0] is True


def test_lock_ends_with_its_window(staff, monkeypatch):
    import time

    for _ in range(5):
        _login("finance", "wrong")
    assert _login("finance", PASSWORD)[0] is False
    real = time.time
    # A lock lasts at least one whole window, however late in its window it began...
    monkeypatch.setattr(time, "time", lambda: real() + 899)
    assert _login("finance", PASSWORD)[0] is False
    # ...and at most two.
    monkeypatch.setattr(time, "time", lambda: real() + 1800)
    assert _login("finance", PASSWORD)[0] is True
