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
