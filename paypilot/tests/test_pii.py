"""PII hashing (salted, warns once when unsalted), the audit allowlist and the log filter."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings as django_settings

from paypilot import services
from paypilot.logsafe import PiiLogFilter
from paypilot.services import audit_record, pii_hash


def test_salt_changes_the_hash_and_the_raw_value_never_appears(settings):
    settings.PAYPILOT_PII_SALT = "one"
    first = pii_hash("ada@example.org")
    settings.PAYPILOT_PII_SALT = "two"
    assert pii_hash("ada@example.org") != first
    assert "ada" not in first and len(first) == 32


def test_unsalted_hashing_warns_once(settings, monkeypatch, caplog):
    settings.PAYPILOT_PII_SALT = ""
    monkeypatch.setattr(services, "_warned_unsalted", False)
    with caplog.at_level(logging.WARNING, logger="paypilot.audit"):
        pii_hash("a")
        pii_hash("b")
    assert [r.getMessage() for r in caplog.records].count(
        "PAYPILOT_PII_SALT is unset: personal values are hashed without a salt"
    ) == 1


@pytest.mark.django_db
def test_audit_detail_keeps_only_allowlisted_keys(tenant):
    event = audit_record(event="test.thing", tenant=tenant, detail={"invoice": 7, "email": "ada@example.org"})
    assert event.detail == {"invoice": 7}


def test_log_filter_hashes_emails_and_drops_unlisted_extras():
    record = logging.makeLogRecord(
        {"msg": "bounce for %s", "args": ("Ada.L@Example.org",), "customer_name": "Ada", "invoice": 3}
    )
    assert PiiLogFilter().filter(record)
    assert "Example.org" not in record.getMessage()
    assert record.getMessage().startswith("bounce for <email:")
    assert not hasattr(record, "customer_name") and record.invoice == 3


def test_the_filter_is_on_the_stderr_handler():
    handler = django_settings.LOGGING["handlers"]["stderr"]
    assert "pii" in handler["filters"]
    stderr = next(h for h in logging.getLogger("paypilot").handlers if isinstance(h, logging.StreamHandler))
    assert any(isinstance(f, PiiLogFilter) for f in stderr.filters)
