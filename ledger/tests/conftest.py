"""Ledger test helpers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ledger.services import FailureResult, invoice_record_failure


@pytest.fixture
def record_failure(tenant) -> Callable[..., FailureResult]:  # type: ignore[no-untyped-def]
    """`record_failure("in_1", amount_minor=500)` for the `tenant` fixture, Stripe, USD."""

    def _record(external_invoice_id: str = "in_1", **overrides: Any) -> FailureResult:
        values: dict[str, Any] = {
            "tenant": tenant, "provider": "stripe", "external_invoice_id": external_invoice_id,
            "amount_minor": 4900, "currency": "usd", "failure_code": "card_expired",
            "subscription_id": "sub_1",
        }
        values.update(overrides)
        return invoice_record_failure(**values)

    return _record
