"""Imports: one file, recognised or through a confirmed layout, stored once, all or nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from paypilot.models import Tenant
from paypilot.services import audit_record, pii_hash
from paypilot.tenancy import tenant_context
from reconciliation.formats import (
    CANONICAL,
    FileRefused,
    LayoutSpec,
    Parsed,
    Sample,
    csv_rows,
    day_number,
    decode,
    header_key,
    parse_with_layout,
    recognise,
    sniff_delimiter,
    text_stream,
)
from reconciliation.models import BankRow, DisputeRow, ImportFile, Kind, Layout, OrderRow, ProviderRow

REASON_TOO_LARGE = "file_too_large"
REASON_DUPLICATE = "duplicate_file"
REASON_UNKNOWN_LAYOUT = "unknown_layout"
REASON_WRONG_KIND = "wrong_kind_for_format"
REASON_BAD_KIND = "unknown_kind"
REASON_TOO_LONG = "value_too_long"
REASON_BAD_MAPPING = "bad_mapping"

BATCH = 20_000  # rows per INSERT statement: bounded memory, few round trips
# Files from this size are first offered to the columnar reader (polars); smaller ones go
# straight to the row parser, whose start-up is cheaper. Tests set 0 to run both paths.
COLUMNAR_MIN_BYTES = 256 * 1024

# Columns written per kind, in order; `_row_values` produces values in the same order.
COLUMNS: dict[str, tuple[str, ...]] = {
    Kind.ORDERS: ("tenant_id", "file_id", "line", "order_id", "ordered_at", "ordered_day", "amount_minor",
                  "currency", "payment_reference", "customer_email_hash", "status"),
    Kind.PROVIDER: ("tenant_id", "file_id", "line", "transaction_id", "created_at", "created_day", "type",
                    "amount_minor", "fee_minor", "net_minor", "currency", "charge_id", "order_reference",
                    "payout_id", "payout_date", "payout_day"),
    Kind.BANK: ("tenant_id", "file_id", "line", "booking_date", "booking_day", "value_date", "amount_minor",
                "currency", "reference", "remittance", "bank_reference", "original_amount_minor", "original_currency",
                "fx_rate"),
    Kind.DISPUTES: ("tenant_id", "file_id", "line", "dispute_id", "charge_id", "amount_minor", "currency",
                    "reason", "status", "evidence_due_by", "created_at"),
}
MODELS: dict[str, Any] = {
    Kind.ORDERS: OrderRow, Kind.PROVIDER: ProviderRow, Kind.BANK: BankRow, Kind.DISPUTES: DisputeRow,
}


def _lengths(kind: str) -> dict[str, int]:
    model = MODELS[kind]
    return {f.column: f.max_length for f in model._meta.concrete_fields if getattr(f, "max_length", None)}


def _text(row: dict[str, Any], name: str, limits: dict[str, int], column: str | None = None) -> str:
    value = row.get(name) or ""
    if len(value) > limits[column or name]:
        raise FileRefused(REASON_TOO_LONG, f"{name} is longer than {limits[column or name]} characters",
                          line=row["line"], column=name)
    return value


def _day(value: date | datetime | None) -> int | None:
    if value is None:
        return None
    return day_number(value.date() if isinstance(value, datetime) else value)


def _row_values(kind: str, tenant_id: int, file_id: int, rows: Iterable[dict[str, Any]]) -> Iterator[tuple]:
    """Canonical rows as INSERT tuples; long texts refused with their line."""
    limits = _lengths(kind)
    for r in rows:
        base = (tenant_id, file_id, r["line"])
        if kind == Kind.ORDERS:
            email = r.get("customer_email") or ""
            yield base + (
                _text(r, "order_id", limits), r["ordered_at"], _day(r["ordered_at"]), r["amount_minor"],
                r["currency"], _text(r, "payment_reference", limits),
                pii_hash(email.strip().lower()) if email else "", _text(r, "status", limits).lower(),
            )
        elif kind == Kind.PROVIDER:
            yield base + (
                _text(r, "transaction_id", limits), r["created_at"], _day(r["created_at"]), r["type"],
                r["amount_minor"], r.get("fee_minor", 0), r.get("net_minor", r["amount_minor"]), r["currency"],
                _text(r, "charge_id", limits), _text(r, "order_reference", limits), _text(r, "payout_id", limits),
                r.get("payout_date"), _day(r.get("payout_date")),
            )
        elif kind == Kind.BANK:
            yield base + (
                r["booking_date"], _day(r["booking_date"]), r.get("value_date"), r["amount_minor"], r["currency"],
                _text(r, "reference", limits), r.get("remittance") or "", _text(r, "bank_reference", limits),
                r.get("original_amount_minor"), r.get("original_currency") or "", r.get("fx_rate") or "",
            )
        else:
            yield base + (
                _text(r, "dispute_id", limits), _text(r, "charge_id", limits), r["amount_minor"], r["currency"],
                _text(r, "reason", limits).lower(), _text(r, "status", limits).lower(), r.get("evidence_due_by"),
                r["created_at"],
            )


def _sqlite_datetime(value: datetime) -> str:
    """What Django's SQLite backend stores for an aware datetime: naive UTC, ISO with a space."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ")


def _adapt(kind: str) -> Callable[[tuple], tuple]:
    """Per-backend value adaptation for raw inserts (what the ORM would do per field)."""
    if connection.vendor == "postgresql":
        return lambda values: values  # psycopg adapts date/datetime itself
    if connection.vendor != "sqlite":  # pragma: no cover - the two supported databases
        raise NotImplementedError(connection.vendor)
    fields = {f.column: f for f in MODELS[kind]._meta.concrete_fields}
    active: list[tuple[int, Callable[[Any], Any]]] = []
    for i, column in enumerate(COLUMNS[kind]):
        internal = fields[column].get_internal_type()
        if internal == "DateTimeField":
            active.append((i, _sqlite_datetime))
        elif internal == "DateField":
            active.append((i, date.isoformat))

    def adapt(values: tuple) -> tuple:
        out = list(values)
        for i, adapter in active:
            if out[i] is not None:
                out[i] = adapter(out[i])
        return tuple(out)

    return adapt


def rows_bulk_insert(*, kind: str, values: Iterable[tuple], progress: Callable[[int], None] | None = None) -> int:
    """Insert canonical tuples inside the caller's transaction; returns the count.

    PostgreSQL: one COPY, each tuple written by psycopg's row writer (the UNNEST statement it
    replaces quoted its arrays in Python: the bench's camt.053 of 19,802 entries took 2.2 s
    of CPU with it, 1.8 s now); SQLite one executemany per batch."""
    model = MODELS[kind]
    table = connection.ops.quote_name(model._meta.db_table)
    columns = COLUMNS[kind]
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    total = 0
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor, _copy_target(cursor, kind, table, names) as target:
            with cursor.copy(f"COPY {target} ({names}) FROM STDIN") as copy:
                for value in values:
                    copy.write_row(value)
                    total += 1
                    if progress is not None and total % BATCH == 0:
                        progress(BATCH)
        if progress is not None and total % BATCH:
            progress(total % BATCH)
        return total
    sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"
    adapt = _adapt(kind)
    batch: list[tuple] = []

    def flush() -> None:
        with connection.cursor() as cursor:
            cursor.executemany(sql, [adapt(v) for v in batch])
        if progress is not None:
            progress(len(batch))

    for value in values:
        batch.append(value)
        if len(batch) >= BATCH:
            flush()
            total += len(batch)
            batch = []
    if batch:
        flush()
        total += len(batch)
    return total


@contextmanager
def _copy_target(cursor: Any, kind: str, table: str, quoted: str) -> Iterator[str]:
    """Where a COPY of this kind's rows goes: the table itself when row-level security does
    not apply to this role, else a temporary table whose rows then move with one INSERT ...
    SELECT (PostgreSQL refuses COPY FROM on a table under row-level security; the INSERT
    still checks the policy)."""
    cursor.execute("SELECT row_security_active(%s)", [MODELS[kind]._meta.db_table])
    if not cursor.fetchone()[0]:
        yield table
        return
    target = "rt_import"
    cursor.execute(f"CREATE TEMP TABLE {target} ON COMMIT DROP AS SELECT {quoted} FROM {table} WITH NO DATA")
    yield target
    cursor.execute(f"INSERT INTO {table} ({quoted}) SELECT {quoted} FROM {target}")
    cursor.execute(f"DROP TABLE {target}")


# --- the columnar path ---------------------------------------------------------------------

def _fits(kind: str, columns: dict[str, Any]) -> bool:
    """Every text within its column's length (else the row path refuses with the line)."""
    return all((columns[name].str.len_chars().max() or 0) <= limit
               for name, limit in _lengths(kind).items() if name in columns)


def _db_lists(kind: str, columns: dict[str, Any], *, timestamp_suffix: str) -> list[list[Any]]:
    """Each column after tenant and file as a Python list of what the database is given:
    times as "YYYY-MM-DD HH:MM:SS" (+ suffix), dates as "YYYY-MM-DD", None for null."""
    import polars as pl

    fields = {f.column: f for f in MODELS[kind]._meta.concrete_fields}
    out = []
    for name in COLUMNS[kind][2:]:
        series = columns[name]
        internal = fields[name].get_internal_type()
        if internal == "DateTimeField":
            series = pl.from_epoch(series, time_unit="us").dt.strftime("%Y-%m-%d %H:%M:%S" + timestamp_suffix)
        elif internal == "DateField":
            series = series.cast(pl.Date).dt.strftime("%Y-%m-%d")
        out.append(series.to_list())
    return out


SQLITE_ROWS_PER_INSERT = 200  # rows per multi-row VALUES statement (under SQLite's 32,766 variables)
COPY_ROWS = 50_000  # rows per COPY chunk (a progress step)
SQLITE_SLICE_ROWS = 50_000  # rows turned into Python values at once on SQLite (bounded memory)


def columns_bulk_insert(
    *, kind: str, tenant_id: int, file_id: int, columns: dict[str, Any],
    progress: Callable[[int], None] | None = None,
) -> int:
    """Insert canonical columns inside the caller's transaction; returns the count.

    SQLite: multi-row VALUES statements from one flat list (binding dominates; one row per
    statement costs twice as much). PostgreSQL: COPY of CSV text written by polars, into the
    table itself when row-level security does not apply to this role, else into a
    temporary table and from there with one INSERT ... SELECT (COPY FROM is not allowed on
    a table under row-level security; the INSERT still checks the policy)."""
    model = MODELS[kind]
    table = connection.ops.quote_name(model._meta.db_table)
    names = COLUMNS[kind]
    quoted = ", ".join(connection.ops.quote_name(c) for c in names)
    count = len(columns["line"])
    if count == 0:
        return 0
    if connection.vendor == "postgresql":
        _copy_insert(kind, table, quoted, tenant_id, file_id, columns, count, progress)
        return count
    width = len(names) - 2
    # tenant and file are this import's own integer ids: literals, not bound per row.
    one = f"({int(tenant_id)}, {int(file_id)}, " + ", ".join(["?"] * width) + ")"
    step = SQLITE_ROWS_PER_INSERT
    sql = f"INSERT INTO {table} ({quoted}) VALUES " + ", ".join([one] * step)
    connection.ensure_connection()
    raw = connection.connection.cursor()  # the sqlite3 cursor: no per-call query rewriting
    # A slice of the file at a time: Python values for a million rows would take ~1 GB.
    for start in range(0, count, SQLITE_SLICE_ROWS):
        part = {name: series.slice(start, SQLITE_SLICE_ROWS) for name, series in columns.items()}
        size = min(SQLITE_SLICE_ROWS, count - start)
        flat: list[Any] = [None] * (size * width)
        for i, values in enumerate(_db_lists(kind, part, timestamp_suffix="")):
            flat[i::width] = values
        full = size // step * step
        raw.executemany(sql, (flat[i * width:(i + step) * width] for i in range(0, full, step)))
        if full < size:
            raw.execute(f"INSERT INTO {table} ({quoted}) VALUES " + ", ".join([one] * (size - full)),
                        flat[full * width:])
        if progress is not None:
            progress(size)
    return count


def _copy_insert(
    kind: str, table: str, quoted: str, tenant_id: int, file_id: int, columns: dict[str, Any], count: int,
    progress: Callable[[int], None] | None,
) -> None:
    import polars as pl

    fields = {f.column: f for f in MODELS[kind]._meta.concrete_fields}
    exprs = []
    for name in COLUMNS[kind][2:]:
        series = columns[name]
        internal = fields[name].get_internal_type()
        if internal == "DateTimeField":
            series = pl.from_epoch(series, time_unit="us").dt.strftime("%Y-%m-%d %H:%M:%S+00")
        elif internal == "DateField":
            series = series.cast(pl.Date)
        exprs.append(series.alias(name))
    frame = pl.DataFrame(exprs).select(pl.lit(int(tenant_id)).alias("tenant_id"), pl.lit(int(file_id)).alias(
        "file_id"), pl.all())
    with connection.cursor() as cursor, _copy_target(cursor, kind, table, quoted) as target:
        with cursor.copy(f"COPY {target} ({quoted}) FROM STDIN WITH (FORMAT csv)") as copy:
            for start in range(0, count, COPY_ROWS):
                copy.write(frame.slice(start, COPY_ROWS).write_csv(None, include_header=False))
                if progress is not None:
                    progress(min(COPY_ROWS, count - start))


def _detect(*, tenant: Tenant, kind: str, data: bytes) -> tuple[Parsed, Layout | None]:
    """Recognise the file (a reader of `reconciliation.formats`), else read it through the
    tenant's confirmed layout for its header."""
    sample = Sample(data)
    reader = recognise(sample)
    if reader is not None:
        if kind != reader.kind:
            raise FileRefused(REASON_WRONG_KIND, reader.wrong_kind)
        columns = _recognised_columns(reader.file_format, data)
        if columns is not None and _fits(kind, columns):
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
    if columns is not None and _fits(kind, columns):
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
            count = rows_bulk_insert(kind=kind, values=_row_values(kind, tenant.pk, batch.pk, parsed.rows),
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
