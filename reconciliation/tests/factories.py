"""Canonical rows for tests, loaded through the same insert path as imported files."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, date, datetime
from typing import Any

from paypilot.models import Tenant
from reconciliation.services.contracts import contract_add
from reconciliation.services.imports import sample_rows_import

_seq = itertools.count(1)


def at(day: str, clock: str = "12:00:00") -> datetime:
    return datetime.fromisoformat(f"{day}T{clock}").replace(tzinfo=UTC)


def order(order_id: str, amount: int, day: str = "2026-11-02", *, ref: str = "", currency: str = "USD",
          status: str = "paid") -> dict[str, Any]:
    return {"order_id": order_id, "ordered_at": at(day), "amount_minor": amount, "currency": currency,
            "payment_reference": ref, "customer_email": "", "status": status}


def txn(transaction_id: str, type_: str, amount: int, day: str = "2026-11-02", *, fee: int = 0,
        charge: str = "", order_ref: str = "", payout: str = "", payout_date: str | None = None,
        currency: str = "USD", clock: str = "12:00:00") -> dict[str, Any]:
    return {"transaction_id": transaction_id, "created_at": at(day, clock), "type": type_, "amount_minor": amount,
            "fee_minor": fee, "net_minor": amount - fee, "currency": currency, "charge_id": charge,
            "order_reference": order_ref, "payout_id": payout,
            "payout_date": date.fromisoformat(payout_date) if payout_date else None}


def bank(day: str, amount: int, *, reference: str = "", remittance: str = "", bank_ref: str = "",
         currency: str = "USD") -> dict[str, Any]:
    return {"booking_date": date.fromisoformat(day), "value_date": date.fromisoformat(day), "amount_minor": amount,
            "currency": currency, "reference": reference, "remittance": remittance, "bank_reference": bank_ref}


def dispute(dispute_id: str, charge: str, amount: int, due: str, *, status: str = "needs_response",
            currency: str = "USD") -> dict[str, Any]:
    return {"dispute_id": dispute_id, "charge_id": charge, "amount_minor": amount, "currency": currency,
            "reason": "duplicate", "status": status, "evidence_due_by": date.fromisoformat(due),
            "created_at": at("2026-11-01")}


def load(tenant: Tenant, kind: str, rows: list[dict[str, Any]]) -> None:
    numbered = [{"line": i, **r} for i, r in enumerate(rows, start=2)]
    source = json.dumps([kind, next(_seq), repr(rows)]).encode()
    sample_rows_import(tenant=tenant, kind=kind, filename=f"test-{kind}", rows=numbered, digest_source=source,
                       actor="test")


def contract(tenant: Tenant, *, currency: str = "USD", effective_from: str = "2026-01-01", percent: str = "2.9",
             fixed: str = "0.30", chargeback_fee: str = "15.00", delay: int = 2) -> Any:
    return contract_add(tenant=tenant, currency=currency, effective_from=date.fromisoformat(effective_from),
                        percent=percent, fixed=fixed, chargeback_fee=chargeback_fee, payout_delay_days=delay,
                        actor="test")


def fee(amount: int, percent_micro: int = 29000, fixed: int = 30) -> int:
    from paypilot.money import percent_of_minor

    return percent_of_minor(amount, percent_micro) + fixed
