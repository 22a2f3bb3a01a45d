"""A run's break rows are written BREAK_ROWS at a time: across several statements they are
the run's breaks in order, each with its refs, its contract version and any carried resolution."""

from __future__ import annotations

import json
from datetime import date

import pytest

from reconciliation.services import run_breaks
from reconciliation.services.runs import break_resolve, run_create
from reconciliation.tests.factories import contract, fee, load, order, txn

pytestmark = pytest.mark.django_db
AS_OF = date(2026, 11, 16)


def test_break_rows_in_small_batches_equal_the_result_and_carry_a_resolution(tenant, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(run_breaks, "BREAK_ROWS", 2)
    contract(tenant)
    load(tenant, "orders", [order(f"M-{i}", 1000 + i) for i in range(5)] + [order("A-1", 5500, ref="ch_a")])
    load(tenant, "provider", [txn("ta", "charge", 5000, fee=fee(5000) + 1, charge="ch_a")])
    run, _ = run_create(tenant=tenant, as_of=AS_OF, actor="test")
    result = json.loads(run.result_json)["breaks"]
    rows = list(run.breaks.order_by("position"))
    assert len(rows) == len(result) >= 7  # 5 missing captures, an amount and a fee mismatch: 4 statements
    assert [(r.position, r.kind, r.amount_minor, r.currency, r.refs, r.explanation) for r in rows] == [
        (i, b["kind"], b["amount_minor"], b["currency"], b["refs"], b["explanation"]) for i, b in enumerate(result)]
    assert all(r.status == "open" and r.assignee_id is None and r.resolved_at is None for r in rows)
    (fee_row,) = [r for r in rows if r.kind == "fee_mismatch"]
    assert fee_row.contract_version_id is not None
    last = rows[-1]
    break_resolve(brk=last, note="checked", actor="user:1")
    load(tenant, "orders", [order("M-9", 100)])
    newer, _ = run_create(tenant=tenant, as_of=AS_OF, actor="test")
    (carried,) = [b for b in newer.breaks.all() if b.refs == last.refs and b.kind == last.kind]
    assert (carried.status, carried.resolution_note, carried.resolved_by) == ("resolved", "checked", "user:1")
    assert carried.resolved_at is not None and carried.resolved_at.tzinfo is not None
