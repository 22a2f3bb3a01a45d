"""Holdout assignment: the exact formula, clamping, and stability after first sight."""

from __future__ import annotations

import hashlib

import pytest
from django.test import override_settings

from ledger.holdout import holdout_arm_for, holdout_bucket
from ledger.models import Invoice
from ledger.services import invoice_record_failure


def test_bucket_is_the_documented_formula() -> None:
    digest = hashlib.sha256(b"s3:in_42").digest()
    assert holdout_bucket(seed="s3", invoice_id="in_42") == int.from_bytes(digest[:8], "big") % 100


def test_assignment_is_deterministic_and_follows_pct() -> None:
    ids = [f"in_{i}" for i in range(400)]
    first = [holdout_arm_for(invoice_id=i, pct=25, seed="x") for i in ids]
    assert first == [holdout_arm_for(invoice_id=i, pct=25, seed="x") for i in ids]
    held = first.count(Invoice.Arm.HOLDOUT)
    assert held == sum(holdout_bucket(seed="x", invoice_id=i) < 25 for i in ids)
    assert 0 < held < 400


@pytest.mark.parametrize(("pct", "arm"), [(0, "treatment"), (-5, "treatment"), (100, "holdout"), (250, "holdout")])
def test_pct_is_clamped(pct: int, arm: str) -> None:
    assert holdout_arm_for(invoice_id="in_1", pct=pct, seed="x") == arm


def _fail(tenant, invoice_id: str) -> Invoice:  # type: ignore[no-untyped-def]
    return invoice_record_failure(
        tenant=tenant, provider="stripe", external_invoice_id=invoice_id, amount_minor=100,
        currency="usd", failure_code="card_expired",
    ).invoice


@pytest.mark.django_db
def test_arm_is_stored_at_first_sight_and_never_moves(tenant) -> None:  # type: ignore[no-untyped-def]
    with override_settings(PAYPILOT_HOLDOUT_PCT=100, PAYPILOT_HOLDOUT_SEED="one"):
        held = _fail(tenant, "in_a")
    with override_settings(PAYPILOT_HOLDOUT_PCT=0, PAYPILOT_HOLDOUT_SEED="two"):
        treated = _fail(tenant, "in_b")
        repeat = _fail(tenant, "in_a")  # a repeat failure after the config changed
    assert held.arm == repeat.arm == Invoice.Arm.HOLDOUT
    assert treated.arm == Invoice.Arm.TREATMENT
    with override_settings(PAYPILOT_HOLDOUT_PCT=100, PAYPILOT_HOLDOUT_SEED="three"):
        _fail(tenant, "in_b")
    # "restart": read back fresh from the database
    assert Invoice.objects.get(external_invoice_id="in_a").arm == Invoice.Arm.HOLDOUT
    assert Invoice.objects.get(external_invoice_id="in_b").arm == Invoice.Arm.TREATMENT


@pytest.mark.django_db
def test_stored_arm_matches_formula_for_the_configured_seed(tenant) -> None:  # type: ignore[no-untyped-def]
    with override_settings(PAYPILOT_HOLDOUT_PCT=50, PAYPILOT_HOLDOUT_SEED="seedy"):
        arms = {f"in_{i}": _fail(tenant, f"in_{i}").arm for i in range(40)}
    for invoice_id, arm in arms.items():
        bucket = holdout_bucket(seed="seedy", invoice_id=invoice_id)
        assert arm == ("holdout" if bucket < 50 else "treatment")


@pytest.mark.django_db
def test_tenant_holdout_applies_from_its_start_and_defaults_otherwise(tenant, other_tenant) -> None:  # type: ignore[no-untyped-def]
    from datetime import UTC, date, datetime

    from ledger.holdout import holdout_in_force
    from ledger.services.holdout import tenant_holdout_set

    before, after = datetime(2026, 6, 30, 23, 0, tzinfo=UTC), datetime(2026, 7, 1, 0, 0, tzinfo=UTC)
    with override_settings(PAYPILOT_HOLDOUT_PCT=10):
        assert holdout_in_force(tenant=tenant, at=after) == (10, "default")
        assert tenant_holdout_set(tenant=tenant, pct=100, start=date(2026, 7, 1), actor="test")
        assert holdout_in_force(tenant=tenant, at=before) == (10, "default")
        assert holdout_in_force(tenant=tenant, at=after) == (100, "tenant")
        assert holdout_in_force(tenant=other_tenant, at=after) == (10, "default")
        early = invoice_record_failure(tenant=tenant, provider="stripe", external_invoice_id="in_early",
                                       amount_minor=1, currency="usd", failure_code="x", now=before).invoice
        late = invoice_record_failure(tenant=tenant, provider="stripe", external_invoice_id="in_late",
                                      amount_minor=1, currency="usd", failure_code="x", now=after).invoice
        assert late.arm == Invoice.Arm.HOLDOUT  # 100% from the start date on
        assert early.arm == holdout_arm_for(invoice_id="in_early", pct=10)
        assert tenant_holdout_set(tenant=tenant, pct=None, start=None, actor="test")  # back to the default
        assert holdout_in_force(tenant=tenant, at=after) == (10, "default")
        assert Invoice.objects.get(external_invoice_id="in_late").arm == Invoice.Arm.HOLDOUT  # never moves
    with pytest.raises(ValueError):
        tenant_holdout_set(tenant=tenant, pct=101, start=None, actor="test")
