"""The eval set: cases that catch people out, each run in a throw-away tenant and scored.

Each `cases/<name>.json` holds canonical rows (and optionally export files with their
mapping) plus what a careful analyst expects: the breaks as [kind, amount_minor, currency]
in output order, the match rate and the payouts in transit. Expectations are written by
hand from the case, never copied from the engine's output. `manage.py recon_eval` prints
the score; `tests/test_evals.py` requires every case to pass.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from django.db import transaction

from paypilot.services import tenant_create
from reconciliation.services.contracts import contract_add
from reconciliation.services.imports import file_import, layout_save, sample_rows_import
from reconciliation.services.runs import run_compute
from reconciliation.services.sample import _canonical

CASES_DIR = Path(__file__).resolve().parent / "cases"


class _Rollback(Exception):
    pass


def eval_cases() -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(CASES_DIR.glob("*.json"))
            if not p.name.endswith(".mapping.json")]


def eval_case_run(case: dict[str, Any]) -> dict[str, Any]:
    """Load `case` into a new tenant, compute (not store) its review, roll everything back."""
    outcome: dict[str, Any] = {}
    try:
        with transaction.atomic():
            tenant = tenant_create(slug=f"eval-{case['name'][:50]}".replace("_", "-"), name="eval", actor="eval")
            for c in case.get("contracts", []):
                contract_add(tenant=tenant, currency=c["currency"],
                             effective_from=date.fromisoformat(c["effective_from"]), percent=c["percent"],
                             fixed=c["fixed"], chargeback_fee=c["chargeback_fee"],
                             payout_delay_days=c["payout_delay_days"], actor="eval")
            for kind in ("orders", "provider", "bank", "disputes"):
                if case.get(kind):
                    sample_rows_import(tenant=tenant, kind=kind, filename=f"{case['name']}#{kind}",
                                       rows=_canonical(case[kind]), actor="eval",
                                       digest_source=json.dumps([case["name"], kind]).encode())
            for f in case.get("files", []):
                data = (CASES_DIR / f["file"]).read_bytes()
                if f.get("mapping"):
                    mapping = json.loads((CASES_DIR / f["mapping"]).read_text(encoding="utf-8"))
                    layout_save(tenant=tenant, kind=f["kind"], mapping=mapping, sample=data, actor="eval")
                file_import(tenant=tenant, kind=f["kind"], filename=f["file"], data=data, actor="eval")
            result, _ = run_compute(tenant=tenant, as_of=date.fromisoformat(case["as_of"]))
            outcome = result
            raise _Rollback
    except _Rollback:
        pass
    expect = case["expect"]
    got = {
        "breaks": [[b["kind"], b["amount_minor"], b["currency"]] for b in outcome["breaks"]],
        "match_rate": outcome["match_rate"],
        "in_transit": [p["payout_id"] for p in outcome["in_transit"]],
    }
    if "money_in_breaks_minor" in expect:
        got["money_in_breaks_minor"] = outcome["money_in_breaks_minor"]
    if "break_banks" in expect:
        got["break_banks"] = [b["refs"]["bank"] for b in outcome["breaks"] if b["refs"]["bank"]]
    wanted = {k: v for k, v in expect.items() if k != "note"}
    return {"name": case["name"], "passed": got == wanted, "expected": wanted, "got": got,
            "catches": case.get("catches", "")}


def eval_run_all() -> dict[str, Any]:
    results = [eval_case_run(c) for c in eval_cases()]
    return {"passed": sum(r["passed"] for r in results), "total": len(results), "cases": results}
