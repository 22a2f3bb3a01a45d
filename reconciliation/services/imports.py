"""Imports: one file, recognised or through a confirmed layout, stored once, all or nothing.

Reading is `reconciliation.formats`; storing the rows is `import_rows` (row by row) and
`import_columns` (the columnar fast path for large files).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from paypilot.models import Tenant
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context
from reconciliation.columnar_chunks import sliced_columns
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
from reconciliation.services.import_source import Source

REASON_TOO_LARGE = "file_too_large"
REASON_DUPLICATE = "duplicate_file"
REASON_UNKNOWN_LAYOUT = "unknown_layout"
REASON_WRONG_KIND = "wrong_kind_for_format"
REASON_BAD_KIND = "unknown_kind"
REASON_BAD_MAPPING = "bad_mapping"
# Files from this size are first offered to the columnar reader (polars); smaller ones go
# straight to the row parser, whose start-up is cheaper. Tests set 0 to run both paths.
COLUMNAR_MIN_BYTES = 256 * 1024

__all__ = ["REASON_TOO_LONG", "file_detect", "file_import", "layout_save", "sample_rows_import"]


@dataclass(frozen=True)
class _Plan:
    """How a file will be read: its format and layout, the row parser over the whole file,
    and (a large CSV the columnar reader has a path for) that reader of one slice."""

    file_format: str
    layout: Layout | None
    parse: Callable[[], Parsed]
    convert: Callable[[bytes], dict[str, Any] | None] | None = None


def _plan(*, tenant: Tenant, kind: str, source: Source, columnar: bool = True) -> _Plan:
    """Recognise the file from its head (a reader of `reconciliation.formats`), else find the
    tenant's confirmed layout for its header."""
    head = Sample(source.head())
    large = columnar and source.size >= COLUMNAR_MIN_BYTES
    reader = recognise(head)
    if reader is not None:
        if kind != reader.kind:
            raise FileRefused(REASON_WRONG_KIND, reader.wrong_kind)
        convert = None
        if large and reader.file_format == "stripe_report":
            from reconciliation.columnar import stripe_columns  # polars loads only for a large file

            convert = stripe_columns
        return _Plan(reader.file_format, None, lambda: reader.read(Sample(source.read_all())), convert)
    first_line = head.first_line
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
    convert = None
    if large:
        from reconciliation.columnar import layout_columns  # polars loads only for a large file

        convert = functools.partial(layout_columns, kind=kind, spec=spec)
    return _Plan("layout", layout, lambda: parse_with_layout(text_stream(source.read_all()), kind=kind, spec=spec),
                 convert)


def file_detect(*, tenant: Tenant, kind: str, data: bytes) -> tuple[Parsed, Layout | None]:
    """What `file_import` would read, for a preview: the format, the layout and the rows
    produced lazily by the row parser (a CSV is read only as far as the preview goes; no
    columnar pass over the whole file). Raises FileRefused like the import."""
    plan = _plan(tenant=tenant, kind=kind, source=Source(data=data), columnar=False)
    return plan.parse(), plan.layout


def file_import(
    *, tenant: Tenant, kind: str, filename: str, data: bytes | None = None, path: str | Path | None = None,
    actor: str, progress: Callable[[int], None] | None = None,
) -> ImportFile:
    """Import one file of `kind` for `tenant` in one transaction with its audit row. Give
    the bytes (`data`) or a `path`: a path is hashed and read in slices, never whole unless
    a row parser reads it (XML, BAI2, MT940, a CSV the columnar reader declines).

    Raises FileRefused (reason, line, column) and stores nothing when the file is too large,
    already imported (same sha256), of an unknown layout, or has any bad row."""
    if kind not in Kind.values:
        raise FileRefused(REASON_BAD_KIND, f"kind must be one of {', '.join(Kind.values)}")
    source = Source.of(data=data, path=path)
    limit = settings.PAYPILOT_RECON_MAX_FILE_BYTES
    size = source.size
    if size > limit:
        raise FileRefused(REASON_TOO_LARGE, f"the file has {size} bytes; the limit is {limit}")
    digest, blank = source.digest_and_blank()
    if blank:
        raise FileRefused("empty_file", "the file is empty")
    with tenant_context(tenant):
        existing = ImportFile.objects.filter(tenant=tenant, sha256=digest).first()
        if existing is not None:
            raise FileRefused(REASON_DUPLICATE, f"this file was already imported as batch {existing.pk} "
                              f"({existing.filename}, {existing.created_at:%Y-%m-%d %H:%M} UTC); nothing imported")
        plan = _plan(tenant=tenant, kind=kind, source=source)
        return _store(tenant=tenant, kind=kind, filename=filename, size=size, digest=digest, plan=plan,
                      source=source, actor=actor, progress=progress)


class _Declined(Exception):
    """A slice the columnar reader does not take: roll its slices back, use the row parser."""


def _sliced_insert(
    *, kind: str, tenant_id: int, file_id: int, plan: _Plan, source: Source, progress: Callable[[int], None] | None,
) -> int:
    """Convert and insert one slice at a time (memory follows the slice); _Declined when the
    columnar reader does not take a slice."""
    assert plan.convert is not None
    count = 0
    with source.open() as stream:
        for columns in sliced_columns(stream, plan.convert):
            if columns is None or not columns_fit(kind, columns):
                raise _Declined
            count += columns_bulk_insert(kind=kind, tenant_id=tenant_id, file_id=file_id, columns=columns,
                                         progress=progress)
    return count


def _store(
    *, tenant: Tenant, kind: str, filename: str, size: int, digest: str, plan: _Plan, source: Source | None,
    actor: str, progress: Callable[[int], None] | None,
) -> ImportFile:
    with transaction.atomic():
        batch = ImportFile.objects.create(
            tenant=tenant, kind=kind, file_format=plan.file_format, filename=filename[:255], sha256=digest,
            size_bytes=size, rows=0, layout=plan.layout, actor=actor,
        )
        count = None
        if plan.convert is not None and source is not None:
            try:
                with transaction.atomic():  # a savepoint: a declined slice takes the slices before with it
                    count = _sliced_insert(kind=kind, tenant_id=tenant.pk, file_id=batch.pk, plan=plan,
                                           source=source, progress=progress)
            except _Declined:
                count = None
        if count is None:
            parsed = plan.parse()
            count = rows_bulk_insert(kind=kind, values=row_values(kind, tenant.pk, batch.pk, parsed.rows),
                                     progress=progress)
        batch.rows = count
        batch.save(update_fields=["rows"])
        audit_record(event="reconciliation.file.imported", tenant=tenant, actor=actor,
                     detail={"kind": kind, "recon_file": batch.pk, "count": count, "source": plan.file_format,
                             "sha256": digest})
    return batch


def sample_rows_import(
    *, tenant: Tenant, kind: str, filename: str, rows: list[dict[str, Any]], digest_source: bytes, actor: str,
) -> ImportFile:
    """Canonical rows of the shipped sample workspace, stored like an imported file."""
    digest = hashlib.sha256(digest_source).hexdigest()
    plan = _Plan("sample", None, lambda: Parsed(kind=kind, file_format="sample", rows=rows))
    with tenant_context(tenant):
        return _store(tenant=tenant, kind=kind, filename=filename, size=len(digest_source), digest=digest,
                      plan=plan, source=None, actor=actor, progress=None)


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
