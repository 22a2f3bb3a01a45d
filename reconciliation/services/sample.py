"""The shipped sample workspace, loaded into its own `sample` tenant (never a real tenant's)."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import Any

from django.db import transaction

from paypilot.models import Tenant
from paypilot.services import tenant_create
from paypilot.tenancy import tenant_context
from reconciliation.models import ContractVersion, ImportFile, Run
from reconciliation.services.contracts import contract_add
from reconciliation.services.imports import sample_rows_import
from reconciliation.services.runs import run_create

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample"
WORKSPACE = SAMPLE_DIR / "workspace.json"
SAMPLE_TENANT = "sample"
DATETIME_FIELDS = ("ordered_at", "created_at")
DATE_FIELDS = ("payout_date", "booking_date", "value_date", "evidence_due_by")


def _canonical(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for line, row in enumerate(rows, start=1):
        item: dict[str, Any] = {"line": line, **row}
        for name in DATETIME_FIELDS:
            if item.get(name):
                item[name] = datetime.fromisoformat(item[name])
        for name in DATE_FIELDS:
            if item.get(name):
                item[name] = date.fromisoformat(item[name])
        out.append(item)
    return out


def sample_workspace() -> dict[str, Any]:
    return json.loads(WORKSPACE.read_text(encoding="utf-8"))


def sample_load(*, actor: str, slug: str = SAMPLE_TENANT) -> tuple[Tenant, Run]:
    """Create the sample tenant with the sample's contract and rows (once) and its review.
    Idempotent: a second call imports nothing and returns the stored run."""
    data = sample_workspace()
    raw = WORKSPACE.read_bytes()
    with transaction.atomic():
        tenant = Tenant.objects.filter(slug=slug).first() or tenant_create(
            slug=slug, name="Sample workspace (fictional data)", actor=actor)
        with tenant_context(tenant):
            if not ContractVersion.objects.filter(tenant=tenant).exists():
                c = data["contract"]
                contract_add(tenant=tenant, currency=c["currency"],
                             effective_from=date.fromisoformat(c["effective_from"]), percent=c["percent"],
                             fixed=c["fixed"], chargeback_fee=c["chargeback_fee"],
                             payout_delay_days=c["payout_delay_days"], actor=actor)
            for kind in ("orders", "provider", "bank", "disputes"):
                # One digest per kind: the workspace bytes plus the kind, so re-loading is refused by sha256.
                source = raw + kind.encode()
                if ImportFile.objects.filter(tenant=tenant, kind=kind, file_format="sample").exists():
                    continue
                sample_rows_import(tenant=tenant, kind=kind, filename=f"workspace.json#{kind}",
                                   rows=_canonical(data[kind]), digest_source=source, actor=actor)
    run, _ = run_create(tenant=tenant, as_of=date.fromisoformat(data["as_of"]), actor=actor)
    return tenant, run
