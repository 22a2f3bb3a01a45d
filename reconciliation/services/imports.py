"""Imports: one file, recognised or through a confirmed layout, stored once, all or nothing.

Reading is `reconciliation.formats`; storing the rows is `import_rows` (row by row) and
`import_columns` (the columnar fast path for large files).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction

from paypilot.models import Tenant
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context
from reconciliation.formats import (
    CANONICAL,
    FileRefused,
    LayoutSpec,
    Parsed,
    Sample,
    csv_rows,
    decode,
    header_key,
    parse_with_layout,
    recognise,
    sniff_delimiter,
    text_stream,
)
from reconciliation.models import ImportFile, Kind, Layout
from reconciliation.services.import_columns import columns_bulk_insert, columns_fit
from reconciliation.services.import_rows import REASON_TOO_LONG, row_values, rows_bulk_insert

REASON_TOO_LARGE = "file_too_large"
REASON_DUPLICATE = "duplicate_file"
REASON_UNKNOWN_LAYOUT = "unknown_layout"
REASON_WRONG_KIND = "wrong_kind_for_format"
REASON_BAD_KIND = "unknown_kind"
REASON_BAD_MAPPING = "bad_mapping"
# Files from this size are first offered to the columnar reader (polars); smaller ones go
# straight to the row parser, whose start-up is cheaper. Tests set 0 to run both paths.
COLUMNAR_MIN_BYTES = 256 * 1024

__all__ = ["REASON_TOO_LONG", "file_import", "layout_save", "sample_rows_import"]


def _detect(*, tenant: Tenant, kind: str, data: bytes) -> tuple[Parsed, Layout | None]:
    """Recognise the file (a reader of `reconciliation.formats`), else read it through the
    tenant's confirmed layout for its header."""
    sample = Sample(data)
    reader = recognise(sample)
    if reader is not None:
        if kind != reader.kind:
            raise FileRefused(REASON_WRONG_KIND, reader.wrong_kind)
        columns = _recognised_columns(reader.file_format, data)
        if columns is not None and columns_fit(kind, columns):
            return Parsed(kind=kind, file_format=reader.file_format, columns=columns), None
        return reader.read(sample), None
    first_line = sample.first_line
    delimiter = sniff_delimiter(first_line)
    header, _ = csv_rows(first_line, delimiter)
    layout = Layout.objects.filter(tenant=tenant, kind=kind, header_key=header_key(header)).first()
    if layout is None:
        raise FileRefused(
            REASON_UNKNOWN_LAYOUT,
            f"no confirmed {kind} layout for this header; run `manage.py recon_layout suggest --kind {kind} FILE`, "
            f"check it, then `manage.py recon_layout save --tenant {tenant.slug} --kind {kind} --mapping M.json "
            "--sample FILE` (or upload it in the admin and confirm the preview)",
            line=1,
        )
    spec = LayoutSpec(columns=layout.columns, date_format=layout.date_format,
                      decimal_separator=layout.decimal_separator, delimiter=layout.delimiter, values=layout.values)
    from reconciliation.columnar import layout_columns  # polars loads only for a large file

    columns = layout_columns(data, kind=kind, spec=spec) if len(data) >= COLUMNAR_MIN_BYTES else None
    if columns is not None and columns_fit(kind, columns):
        return Parsed(kind=kind, file_format="layout", columns=columns), layout
    return parse_with_layout(text_stream(data), kind=kind, spec=spec), layout


def _recognised_columns(file_format: str, data: bytes) -> dict[str, Any] | None:
    """A large recognised file's canonical columns when the columnar reader has a path for
    its format (Stripe's report) and takes it; else None and the row reader reads it."""
    if file_format != "stripe_report" or len(data) < COLUMNAR_MIN_BYTES:
        return None
    from reconciliation.columnar import stripe_columns  # polars loads only for a large file

    return stripe_columns(data)


def file_import(
    *, tenant: Tenant, kind: str, filename: str, data: bytes, actor: str,
    progress: Callable[[int], None] | None = None,
) -> ImportFile:
    """Import one file of `kind` for `tenant` in one transaction with its audit row.

    Raises FileRefused (reason, line, column) and stores nothing when the file is too large,
    already imported (same sha256), of an unknown layout, or has any bad row."""
    if kind not in Kind.values:
        raise FileRefused(REASON_BAD_KIND, f"kind must be one of {', '.join(Kind.values)}")
    limit = settings.PAYPILOT_RECON_MAX_FILE_BYTES
    if len(data) > limit:
        raise FileRefused(REASON_TOO_LARGE, f"the file has {len(data)} bytes; the limit is {limit}")
    if not data or data.isspace():  # strip() would copy the whole file to learn the same
        raise FileRefused("empty_file", "the file is empty")
    digest = hashlib.sha256(data).hexdigest()
    with tenant_context(tenant):
        existing = ImportFile.objects.filter(tenant=tenant, sha256=digest).first()
        if existing is not None:
            raise FileRefused(REASON_DUPLICATE, f"this file was already imported as batch {existing.pk} "
                              f"({existing.filename}, {existing.created_at:%Y-%m-%d %H:%M} UTC); nothing imported")
        parsed, layout = _detect(tenant=tenant, kind=kind, data=data)
        return _store(tenant=tenant, kind=kind, filename=filename, size=len(data), digest=digest,
                      parsed=parsed, layout=layout, actor=actor, progress=progress)


def _store(
    *, tenant: Tenant, kind: str, filename: str, size: int, digest: str, parsed: Parsed,
    layout: Layout | None, actor: str, progress: Callable[[int], None] | None,
) -> ImportFile:
    with transaction.atomic():
        batch = ImportFile.objects.create(
            tenant=tenant, kind=kind, file_format=parsed.file_format, filename=filename[:255], sha256=digest,
            size_bytes=size, rows=0, layout=layout, actor=actor,
        )
        if parsed.columns is not None:
            count = columns_bulk_insert(kind=kind, tenant_id=tenant.pk, file_id=batch.pk, columns=parsed.columns,
                                        progress=progress)
        else:
            count = rows_bulk_insert(kind=kind, values=row_values(kind, tenant.pk, batch.pk, parsed.rows),
                                     progress=progress)
        batch.rows = count
        batch.save(update_fields=["rows"])
        audit_record(event="reconciliation.file.imported", tenant=tenant, actor=actor,
                     detail={"kind": kind, "recon_file": batch.pk, "count": count, "source": parsed.file_format,
                             "sha256": digest})
    return batch


def sample_rows_import(
    *, tenant: Tenant, kind: str, filename: str, rows: list[dict[str, Any]], digest_source: bytes, actor: str,
) -> ImportFile:
    """Canonical rows of the shipped sample workspace, stored like an imported file."""
    digest = hashlib.sha256(digest_source).hexdigest()
    parsed = Parsed(kind=kind, file_format="sample", rows=rows)
    with tenant_context(tenant):
        return _store(tenant=tenant, kind=kind, filename=filename, size=len(digest_source), digest=digest,
                      parsed=parsed, layout=None, actor=actor, progress=None)


def layout_save(
    *, tenant: Tenant, kind: str, mapping: dict[str, Any], sample: bytes, actor: str,
) -> tuple[Layout, list[dict[str, Any]]]:
    """Confirm a layout for the header of `sample`: the mapping must convert every sample
    row (FileRefused otherwise). Returns the layout and the first converted rows."""
    if kind not in Kind.values:
        raise FileRefused(REASON_BAD_KIND, f"kind must be one of {', '.join(Kind.values)}")
    columns = mapping.get("columns")
    date_format = mapping.get("date_format")
    decimal_separator = mapping.get("decimal_separator", ".")
    if not isinstance(columns, dict) or not all(
            isinstance(v, str) or (isinstance(v, list) and v and all(isinstance(x, str) for x in v))
            for v in columns.values()):
        raise FileRefused(REASON_BAD_MAPPING, "mapping.columns must be an object of field -> header "
                          "(or, for an amount, a list of headers, \"-Header\" subtracting)")
    unknown = sorted(set(columns) - set(CANONICAL[kind]))
    if unknown:
        raise FileRefused(REASON_BAD_MAPPING, f"not {kind} fields: {', '.join(unknown)}")
    if not isinstance(date_format, str) or not date_format:
        raise FileRefused(REASON_BAD_MAPPING, "mapping.date_format is required (e.g. \"%d/%m/%Y %H:%M\"); "
                          "an ambiguous date is never guessed")
    values = mapping.get("values", {})
    if not isinstance(values, dict) or not all(
            isinstance(v, dict) and all(isinstance(x, str) for x in v.values()) for v in values.values()):
        raise FileRefused(REASON_BAD_MAPPING, "mapping.values must be an object of field -> {export word: value}")
    if decimal_separator not in (".", ","):
        raise FileRefused(REASON_BAD_MAPPING, "mapping.decimal_separator must be \".\" or \",\"")
    text = decode(sample)
    first_line = text.split("\n", 1)[0]
    delimiter = mapping.get("delimiter") or sniff_delimiter(first_line)
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise FileRefused(REASON_BAD_MAPPING, "mapping.delimiter must be one character")
    spec = LayoutSpec(columns=columns, date_format=date_format, decimal_separator=decimal_separator,
                      delimiter=delimiter, values=values)
    rows = list(parse_with_layout(text, kind=kind, spec=spec).rows)  # raises on the first bad row
    header, _ = csv_rows(first_line, delimiter)
    key = header_key(header)
    with tenant_context(tenant), transaction.atomic():
        layout, created = Layout.objects.update_or_create(
            tenant=tenant, kind=kind, header_key=key,
            defaults={"headers": [h.strip() for h in header], "columns": columns, "values": values,
                      "date_format": date_format,
                      "decimal_separator": decimal_separator, "delimiter": delimiter, "actor": actor},
        )
        audit_record(event="reconciliation.layout.confirmed", tenant=tenant, actor=actor,
                     detail={"kind": kind, "action": "created" if created else "replaced", "count": len(rows)})
    preview = [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in sorted(r.items())}
               for r in rows[:5]]
    return layout, preview
