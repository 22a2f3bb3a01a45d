"""The search for rows that mention a data subject: every tenant table read once, a batch at a time.

No query grows with the number of the subject's identifiers (the old search built one OR term
per text column per identifier, which SQLite refused past 1,000 terms and PostgreSQL planned as
a scan per term). Each table is read by one query, `SCAN_BATCH` rows at a time, and a
batch is first checked as a whole with C-level operations: one lower-cased substring search per
term (a name, an e-mail: a handful), and one split of the batch's bytes into runs of letters
and digits intersected with the identifiers' key runs (see `operations.matching`). Only a
batch that may hold something is checked row by row. Columns with choices and code columns
(`CODE_COLUMNS`) hold codes, never words or identifiers, and are not read.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from django.db import connection, models

from operations import records
from operations.matching import IdentifierMatcher, TermMatcher
from paypilot.models import Tenant


class Subject(Protocol):
    """What the scan needs of `operations.gdpr.Subject` (named here so neither module imports the other)."""

    tenant: Tenant
    linked: records.Rows

    @property
    def term_matcher(self) -> TermMatcher: ...

    @property
    def identifier_matcher(self) -> IdentifierMatcher: ...

SCAN_BATCH = 5000
CODE_COLUMNS = frozenset(
    {"currency", "locale", "provider", "failure_code", "expected_currency", "received_currency", "rules_version"}
)
# JSON a database or a provider stored with \u escapes: "Ren\u00e9e" must still be found.
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescaped(text: str) -> str:
    if "\\u" not in text:
        return text
    return text + "\n" + _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def _select(model: type[models.Model], fields: list[models.Field]) -> str:
    """Raw bytes columns one by one (decoded in Python); text and JSON ones joined by the
    database into one string per row, a newline between columns."""
    quote = connection.ops.quote_name
    postgres = connection.vendor == "postgresql"
    pk = quote(model._meta.pk.column)
    binary = [quote(f.column) for f in fields if isinstance(f, models.BinaryField)]
    text = [
        f"COALESCE({quote(f.column)}{'::text' if postgres else ''}, '')"
        for f in fields if not isinstance(f, models.BinaryField)
    ]
    columns = [(" || chr(10) || " if postgres else " || char(10) || ").join(text) or "''", *binary]
    tenant = quote(model._meta.get_field("tenant").column)  # type: ignore[union-attr,arg-type]  # a ForeignKey
    return f"SELECT {pk}, {', '.join(columns)} FROM {quote(model._meta.db_table)} WHERE {tenant} = %s"


def _row_text(values: tuple[Any, ...]) -> str:
    parts = [
        bytes(v).decode("utf-8", "replace") if isinstance(v, (bytes, memoryview)) else v
        for v in values if v
    ]
    return "\n".join(parts)


def _batches(model: type[models.Model], fields: list[models.Field], tenant_id: Any) -> Any:
    """Lists of (pk, the row's scanned text), `SCAN_BATCH` at a time, from one query read as it
    goes: a server-side cursor on PostgreSQL (`chunked_cursor`), SQLite's own stepping. (Key
    ranges, one query a batch, were tried: both planners then walked the tenant index and
    sorted the whole tenant for every batch, 380 s for a million invoices on PostgreSQL.)"""
    binary = any(isinstance(f, models.BinaryField) for f in fields)
    with connection.chunked_cursor() as cursor:
        cursor.execute(_select(model, fields), [tenant_id])
        while rows := cursor.fetchmany(SCAN_BATCH):
            yield [(row[0], _row_text(row[1:])) for row in rows] if binary else rows


def _hits(subject: Subject, batch: list[tuple[Any, str]]) -> list[Any]:
    joined = "\x00".join([text for _, text in batch])
    if "\\u" in joined:
        batch = [(pk, _unescaped(text)) for pk, text in batch]
        joined = "\x00".join([text for _, text in batch])
    terms = subject.term_matcher.search(joined)
    keys = subject.identifier_matcher.keys_in(joined)
    if not terms and keys is not None and not keys:
        return []
    return [
        pk for pk, text in batch
        if (terms and subject.term_matcher.search(text))
        or ((keys is None or any(k in text for k in keys)) and subject.identifier_matcher.search(text))
    ]


def find_mentions(subject: Subject) -> records.Rows:
    """The tenant's rows, other than the subject's own, whose text names the subject."""
    found: records.Rows = {}
    for model in records.tenant_models():
        if model in records.NOT_SUBJECT_DATA:
            continue
        fields = [f for f in records.text_fields(model) if not f.choices and f.name not in CODE_COLUMNS]
        if not fields:
            continue
        own = subject.linked.get(model, set())
        for batch in _batches(model, fields, subject.tenant.pk):
            pks = _hits(subject, [(pk, text) for pk, text in batch if pk not in own])
            if pks:
                found.setdefault(model, set()).update(pks)
    return found
