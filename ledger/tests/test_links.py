"""Signed recovery links."""

from __future__ import annotations

import pytest
from django.core import signing
from django.test import override_settings

from ledger.links import LINK_SALT, recovery_link_parse, recovery_link_url
from ledger.tests.factories import InvoiceFactory


@pytest.mark.django_db
@override_settings(PAYPILOT_PUBLIC_BASE_URL="https://pay.example.com/")
def test_url_round_trips_to_the_invoice(tenant) -> None:  # type: ignore[no-untyped-def]
    invoice = InvoiceFactory(tenant=tenant)
    url = recovery_link_url(invoice=invoice)
    assert url.startswith("https://pay.example.com/r/")
    assert recovery_link_parse(url.rsplit("/r/", 1)[1]) == invoice.pk


def test_tampered_or_foreign_tokens_are_refused() -> None:
    token = signing.dumps(7, salt=LINK_SALT)
    assert recovery_link_parse(token) == 7
    assert recovery_link_parse(token[:-2] + "xx") is None
    assert recovery_link_parse(signing.dumps(7, salt="other")) is None
    assert recovery_link_parse(signing.dumps("7", salt=LINK_SALT)) is None
    assert recovery_link_parse("garbage") is None


def test_expired_tokens_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    token = signing.dumps(9, salt=LINK_SALT)
    with override_settings(PAYPILOT_LINK_TTL_DAYS=0):
        import time
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + 5)
        assert recovery_link_parse(token) is None
