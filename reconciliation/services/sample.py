"""The shipped sample, loaded into its own `sample` tenant (never a real tenant's), and the
same books from the sample's export files into the demo tenant, so a first visit has a run."""

from __future__ import annotations

import hashlib
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
from reconciliation.services.imports import file_import, layout_save, sample_rows_import
from reconciliation.services.runs import run_create

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample"
WORKSPACE = SAMPLE_DIR / "workspace.json"
EXPORTS = SAMPLE_DIR / "exports"
SAMPLE_TENANT = "sample"
DATETIME_FIELDS = ("ordered_at", "created_at")
DATE_FIELDS = ("payout_date", "booking_date", "value_date", "evidence_due_by")
# One file of each format beyond the workspace's rows (kind, file under exports/, the
# mapping a person confirmed for a CSV without a recognised header, or None). Their books
# balance: they add no break, and one foreign payout lands within the FX margin.
FORMAT_FILES: tuple[tuple[str, str, str | None], ...] = (
    ("orders", "formats/shop_orders_more.csv", "orders.mapping.json"),
    ("provider", "formats/adyen_settlement_details.csv", None),
    ("provider", "formats/paypal_settlement_STL.csv", None),
    ("provider", "formats/braintree_transaction_level_fees.csv", None),
    ("bank", "formats/bank_notification.camt054.xml", None),
    ("bank", "formats/bank_statement.bai2", None),
    ("bank", "formats/bank_export.csv", "formats/bank.mapping.json"),
)
# The workspace's own rows as the files people download (what `demo_setup` gives the demo).
WORKSPACE_FILES: tuple[tuple[str, str, str | None], ...] = (
    ("provider", "stripe_payout_reconciliation.csv", None),
    ("bank", "bank_statement.camt053.xml", None),
    ("orders", "shop_orders.csv", "orders.mapping.json"),
    ("disputes", "disputes.csv", "disputes.mapping.json"),
)


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


def _contract_ensure(tenant: Tenant, actor: str) -> None:
    if not ContractVersion.objects.filter(tenant=tenant).exists():
        c = sample_workspace()["contract"]
        contract_add(tenant=tenant, currency=c["currency"], effective_from=date.fromisoformat(c["effective_from"]),
                     percent=c["percent"], fixed=c["fixed"], chargeback_fee=c["chargeback_fee"],
                     payout_delay_days=c["payout_delay_days"], actor=actor)


def _files_import(tenant: Tenant, files: tuple[tuple[str, str, str | None], ...], actor: str) -> int:
    """Each export not yet imported (by sha256), its layout confirmed first when it needs one."""
    imported = 0
    for kind, name, mapping in files:
        data = (EXPORTS / name).read_bytes()
        if ImportFile.objects.filter(tenant=tenant, sha256=hashlib.sha256(data).hexdigest()).exists():
            continue
        if mapping is not None:
            layout_save(tenant=tenant, kind=kind, mapping=json.loads((EXPORTS / mapping).read_text(encoding="utf-8")),
                        sample=data, actor=actor)
        file_import(tenant=tenant, kind=kind, filename=Path(name).name, data=data, actor=actor)
        imported += 1
    return imported


def sample_load(*, actor: str, slug: str = SAMPLE_TENANT) -> tuple[Tenant, Run]:
    """Create the sample tenant with the sample's contract, rows and one file of each other
    format (once) and its review. Idempotent: a second call imports nothing and returns the
    stored run."""
    data = sample_workspace()
    raw = WORKSPACE.read_bytes()
    with transaction.atomic():
        tenant = Tenant.objects.filter(slug=slug).first() or tenant_create(
            slug=slug, name="Sample workspace (fictional data)", actor=actor)
        with tenant_context(tenant):
            _contract_ensure(tenant, actor)
            for kind in ("orders", "provider", "bank", "disputes"):
                # One digest per kind: the workspace bytes plus the kind, so re-loading is refused by sha256.
                source = raw + kind.encode()
                if ImportFile.objects.filter(tenant=tenant, kind=kind, file_format="sample").exists():
                    continue
                sample_rows_import(tenant=tenant, kind=kind, filename=f"workspace.json#{kind}",
                                   rows=_canonical(data[kind]), digest_source=source, actor=actor)
            _files_import(tenant, FORMAT_FILES, actor)
    run, _ = run_create(tenant=tenant, as_of=date.fromisoformat(data["as_of"]), actor=actor)
    return tenant, run


def exports_load(*, tenant: Tenant, actor: str) -> Run:
    """The sample's books from its export files alone (every format, layouts confirmed as a
    person would) into `tenant`, and the review as of the sample's date. Idempotent."""
    with transaction.atomic(), tenant_context(tenant):
        _contract_ensure(tenant, actor)
        _files_import(tenant, WORKSPACE_FILES + FORMAT_FILES, actor)
    run, _ = run_create(tenant=tenant, as_of=date.fromisoformat(sample_workspace()["as_of"]), actor=actor)
    return run
