"""The seven onboarding tools: three read (preview_file, list_contract_versions,
list_loaded), four write to the tenant's workspace (propose_contract_terms,
save_contract_terms, save_column_mapping, import_file) and need tenant_admin."""

from __future__ import annotations

import hashlib
import itertools
from typing import Annotated, Any

from django.db.models import Count, Sum
from mcp.types import CallToolResult
from pydantic import Field

from reconciliation.formats import FileRefused, decode
from reconciliation.layouts import layout_suggest
from reconciliation.models import ContractVersion, ImportFile, Kind, Layout, Run
from reconciliation.services.imports import REASON_UNKNOWN_LAYOUT, file_detect, file_import, layout_save

from .analysis import service
from .files import LocalPath, file_bytes
from .schemas import ContractVersionsOut, LoadedOut, PreviewOut, WriteOut, money
from .scope import REASON_REFUSED, Caller, ToolRefused, guarded

PREVIEW_ROWS = 5
KindArg = Annotated[str, Field(description="what the file is", json_schema_extra={"enum": list(Kind.values)})]
Filename = Annotated[str, Field(description="the file's name, for the record",
                                json_schema_extra={"minLength": 1, "maxLength": 255})]
Content = Annotated[str | None, Field(description="the file as text (CSV, XML, MT940)")]
ContentB64 = Annotated[str | None, Field(description="or: the file's bytes in base64 (any encoding, PDF)")]


def _refused(exc: FileRefused) -> ToolRefused:
    return ToolRefused(REASON_REFUSED, exc.message, reason=exc.reason, line=exc.line, column=exc.column)


def _kind(kind: str) -> str:
    if kind not in Kind.values:
        raise ToolRefused("invalid_argument", f"kind must be one of {', '.join(Kind.values)}", argument="kind")
    return kind


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in sorted(row.items())}
    if "amount_minor" in out and "currency" in out:
        out["amount"] = money(out["amount_minor"], out["currency"])
    return out


def _preview_file(who: Caller, kind: str, filename: str, content: str | None, content_base64: str | None,
                  path: str | None) -> dict[str, Any]:
    data = file_bytes(who, content=content, content_base64=content_base64, path=path)
    kind = _kind(kind)
    digest = hashlib.sha256(data).hexdigest()
    out: dict[str, Any] = {
        "tenant": who.tenant.slug, "kind": kind, "filename": filename, "size_bytes": len(data),
        "already_imported": ImportFile.objects.filter(tenant=who.tenant, sha256=digest).exists(),
    }
    try:
        parsed, layout = file_detect(tenant=who.tenant, kind=kind, data=data)  # reads only the head it shows
    except FileRefused as exc:
        if exc.reason != REASON_UNKNOWN_LAYOUT:
            raise _refused(exc) from exc
        suggestion = layout_suggest(kind=kind, text=decode(data))
        out.update(recognised_as="new_layout", importable_now=False, suggestion=suggestion,
                   preview=[_json_row(r) for r in suggestion.pop("preview")],
                   next_step={"action": "show the person the mapping and the converted rows; on their yes call "
                                        "save_column_mapping, then import_file",
                              "approver": "tenant_admin", "requires_human_decision": True})
        return out
    try:
        rows = [_json_row(r) for r in itertools.islice(parsed.rows, PREVIEW_ROWS)]
    except FileRefused as exc:
        raise _refused(exc) from exc
    out.update(recognised_as="layout" if layout is not None else parsed.file_format,
               importable_now=not out["already_imported"], preview=rows)
    return out


async def preview_file(kind: KindArg, filename: Filename, content: Content = None, content_base64: ContentB64 = None,
                       path: LocalPath = None) -> Annotated[CallToolResult, PreviewOut]:
    """What a file is and what importing it would give: a recognised format (camt.053,
    MT940, Stripe's balance report, a layout confirmed before) with a few converted rows,
    or for a new layout the suggested column mapping, date format and converted rows for
    the person to check. Reads only."""
    return await guarded(_preview_file, kind, filename, content, content_base64, path)


def _list_contract_versions(who: Caller) -> dict[str, Any]:
    versions = service("selectors", "contract_versions_list")(tenant=who.tenant)
    for v in versions:
        v["fixed"] = money(v["fixed_minor"], v["currency"])
        v["chargeback_fee"] = money(v["chargeback_fee_minor"], v["currency"])
    return {"tenant": who.tenant.slug, "versions": versions}


async def list_contract_versions() -> Annotated[CallToolResult, ContractVersionsOut]:
    """Every contract version of the workspace: per currency, its terms from its effective
    date, with the clause each value was read from. Reads only."""
    return await guarded(_list_contract_versions)


def _list_loaded(who: Caller) -> dict[str, Any]:
    t = who.tenant
    files = ImportFile.objects.filter(tenant=t).order_by("-created_at", "-pk")
    by_kind = {row["kind"]: row["n"] or 0 for row in files.values("kind").annotate(n=Sum("rows"))}
    run = Run.objects.filter(tenant=t).order_by("-created_at", "-pk").first()
    return {
        "tenant": t.slug,
        "files": [{"id": f.pk, "kind": f.kind, "format": f.file_format, "filename": f.filename, "rows": f.rows,
                   "sha256": f.sha256, "imported_at": f.created_at.isoformat()} for f in files[:200]],
        "rows_by_kind": {k: by_kind.get(k, 0) for k in Kind.values},
        "layouts": [{"id": lay.pk, "kind": lay.kind, "headers": lay.headers, "columns": lay.columns,
                     "date_format": lay.date_format, "confirmed_at": lay.created_at.isoformat()}
                    for lay in Layout.objects.filter(tenant=t).order_by("kind", "pk")],
        "contract_versions": ContractVersion.objects.filter(tenant=t).aggregate(n=Count("pk"))["n"],
        "latest_run": None if run is None else {"id": run.pk, "as_of": run.as_of.isoformat(),
                                                "match_rate": run.match_rate, "breaks": run.breaks_count},
    }


async def list_loaded() -> Annotated[CallToolResult, LoadedOut]:
    """What the workspace holds: imported files and rows per kind, confirmed layouts, the
    number of contract versions and the newest stored review. Reads only."""
    return await guarded(_list_loaded)


def _save_column_mapping(who: Caller, kind: str, mapping: dict[str, Any], filename: str, content: str | None,
                         content_base64: str | None, path: str | None) -> dict[str, Any]:
    data = file_bytes(who, content=content, content_base64=content_base64, path=path)
    try:
        layout, preview = layout_save(tenant=who.tenant, kind=_kind(kind), mapping=mapping, sample=data,
                                      actor=who.actor)
    except FileRefused as exc:
        raise _refused(exc) from exc
    return {"tenant": who.tenant.slug, "saved": True, "audit_actor": who.actor, "layout_id": layout.pk,
            "kind": layout.kind, "headers": layout.headers, "preview": [_json_row(r) for r in preview]}


async def save_column_mapping(
    kind: KindArg,
    mapping: Annotated[dict[str, Any], Field(description="columns (field -> header), date_format, "
                                                         "decimal_separator, optional delimiter and values; "
                                                         "as preview_file suggested and the person agreed")],
    filename: Filename, content: Content = None, content_base64: ContentB64 = None, path: LocalPath = None,
) -> Annotated[CallToolResult, WriteOut]:
    """Confirm a column mapping for this file's header (tenant_admin). Every row of the file
    must convert; later files with the same header then import in one step. Audited."""
    return await guarded(_save_column_mapping, kind, mapping, filename, content,
                         content_base64, path, write=True)


def _import_file(who: Caller, kind: str, filename: str, content: str | None, content_base64: str | None,
                 path: str | None) -> dict[str, Any]:
    data = file_bytes(who, content=content, content_base64=content_base64, path=path)
    try:
        batch = file_import(tenant=who.tenant, kind=_kind(kind), filename=filename, data=data, actor=who.actor)
    except FileRefused as exc:
        raise _refused(exc) from exc
    return {"tenant": who.tenant.slug, "saved": True, "audit_actor": who.actor, "file_id": batch.pk,
            "kind": batch.kind, "format": batch.file_format, "rows": batch.rows, "sha256": batch.sha256,
            "next_step": "call reconcile for the review with this file"}


async def import_file(kind: KindArg, filename: Filename, content: Content = None, content_base64: ContentB64 = None,
                      path: LocalPath = None) -> Annotated[CallToolResult, WriteOut]:
    """Import one export into the workspace (tenant_admin): a recognised format or a
    confirmed layout, all rows or none, the same file never twice. Audited."""
    return await guarded(_import_file, kind, filename, content, content_base64, path,
                         write=True)
