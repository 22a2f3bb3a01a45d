"""Reads: the stored review and its spreadsheet export, the contract versions."""

from __future__ import annotations

import csv
import io
import json
from datetime import date
from typing import Any

from paypilot.models import Tenant
from paypilot.money import format_minor
from paypilot.tenancy import tenant_context
from reconciliation.engine import REF_KEYS, csv_safe
from reconciliation.models import ContractVersion, Run

CSV_COLUMNS = ("section", "kind", "amount_minor", "currency", *REF_KEYS, "contract_version", "explanation",
               "approver")


def run_latest(*, tenant: Tenant, as_of: date | None = None) -> Run | None:
    """The newest stored run of `tenant` (for `as_of` when given)."""
    runs = Run.objects.filter(tenant=tenant)
    if as_of is not None:
        runs = runs.filter(as_of=as_of)
    return runs.order_by("-created_at", "-pk").first()


def review_csv(*, run: Run) -> str:
    """Breaks, disputes due and the to-do list as CSV. Every cell goes through `csv_safe`:
    ids and texts come from imported files, and a cell like =HYPERLINK(...) must never
    become a live formula in the spreadsheet it is opened in."""
    result = json.loads(run.result_json)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)

    def row(section: str, kind: str, amount: int, currency: str, refs: dict, contract: str, text: str,
            approver: str) -> None:
        cells = [section, kind, amount, currency, *(" ".join(refs.get(k, [])) for k in REF_KEYS), contract, text,
                 approver]
        writer.writerow([csv_safe(c) for c in cells])

    for b in result["breaks"]:
        row("break", b["kind"], b["amount_minor"], b["currency"], b["refs"], b.get("contract_version", ""),
            b["explanation"], "")
    for d in result["disputes_due"]:
        row("dispute_due", "dispute", d["amount_minor"], d["currency"], {"charge": [d["charge_id"]]}, "",
            f"{d['dispute_id']} due {d['due_by']} ({d['days_left']} days left)", "")
    for t in result["todo"]:
        row("todo", t["kind"], t["amount_minor"], t["currency"], t["refs"], "", t["action"], t["approver"])
    return out.getvalue()


def contract_versions_list(*, tenant: Tenant) -> list[dict[str, Any]]:
    """Every contract version of `tenant`, by currency then version: JSON-ready, money in minor
    units beside the currency and a display string, the quotes each value was read from."""
    with tenant_context(tenant):
        versions = list(ContractVersion.objects.filter(tenant=tenant).order_by("currency", "version"))
    return [{
        "id": v.pk, "label": v.label, "currency": v.currency, "version": v.version,
        "effective_from": v.effective_from.isoformat(), "percent": str(v.percent),
        "fixed_minor": v.fixed_minor, "fixed_display": f"{format_minor(v.fixed_minor, v.currency)} {v.currency}",
        "chargeback_fee_minor": v.chargeback_fee_minor,
        "chargeback_fee_display": f"{format_minor(v.chargeback_fee_minor, v.currency)} {v.currency}",
        "payout_delay_days": v.payout_delay_days,
        "payout_delay_unit": v.payout_delay_unit,
        "payout_calendar": v.payout_calendar or None,
        "rolling_reserve_days": v.rolling_reserve_days,
        "international_surcharge_percent": (str(v.international_surcharge_percent)
                                            if v.international_surcharge_percent is not None else None),
        "rolling_reserve_percent": str(v.rolling_reserve_percent) if v.rolling_reserve_percent is not None else None,
        "quotes": dict(v.quotes or {}), "actor": v.actor,
    } for v in versions]
