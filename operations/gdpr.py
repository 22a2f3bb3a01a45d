"""GDPR access and erasure for one data subject (a customer of one tenant).

The subject's rows are everything reachable from their `ledger.Customer` rows through
foreign keys (invoices, transitions, drafts, approval requests, sends, edits... and any
table added later that points at one of those), the decision rows naming their invoices by
`invoice_ref`, rows one key away (a draft's decision record), and rows holding the salted
hash of their e-mail address instead of the address (`records.HASHED_EMAIL_COLUMNS`: the
orders of a shop export imported for reconciliation, whose order ids and payment references
then count as their identifiers). Rows elsewhere in the tenant that *mention* them (a raw
webhook body, a stored API response) are found by searching every text, JSON and binary
column for their name, e-mail, identifiers and free text.

Erasure keeps what the figures need and removes the person:
- columns with choices and code columns (`KEEP_COLUMNS`: currency, state, failure code...)
  and every number, date and boolean are kept, so reports do not change;
- identifiers (`*_id`, `*_ref`, `*_reference`, `*_key`, `external_id`) are replaced by their salted hash
  (`pii_hash`), consistently, so a hashed invoice id still joins its decision rows; so is
  every occurrence of one inside another string (a raw payload's `/v1/invoices/<id>/lines`,
  a `resource_key` of `invoice:<id>`, a reconciliation run's stored JSON and its breaks),
  matched between non-alphanumeric boundaries and never inside a decimal number (order
  `1001` leaves `1001.50` alone); in a text column holding JSON only string values are
  touched, so amounts stay, and a column holding the sha256 of such a text
  (`DIGEST_COLUMNS`) is recomputed so it still attests the stored bytes; the run's input
  digest is re-keyed (`REKEYED_COLUMNS`), so the next run of that date computes afresh;
- a hashed e-mail column (`customer_email_hash`) is emptied: the link to the person goes;
- every other text column of the subject's rows is emptied (names, e-mails, plans,
  payment-history notes, draft and approval copy, edit history, hosted invoice URLs);
- in rows that only mention them, each occurrence is replaced by "[erased]"; a raw payload
  (a binary column: the webhook inbox) keeps its structure and numbers but loses every
  free-text string.
The audit event (salted hash of the subject, counts) is written first, in the same
transaction, under `append_only_override("gdpr_erase")`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from io import TextIOBase
from typing import IO, Any

from django.db import connection, models

from ledger.models import Customer, Invoice
from operations import keyed_sql, records
from operations.gdpr_scan import find_mentions
from operations.matching import IdentifierMatcher, TermMatcher
from paypilot.db import append_only_override
from paypilot.models import Tenant
from paypilot.services import audit_record, pii_hash
from paypilot.tenancy import tenant_context

ERASED = "[erased]"
KEEP_COLUMNS = frozenset(
    {
        "currency", "locale", "provider", "failure_code", "cause", "rule_fired", "churn_risk",
        "action", "offer", "schedule_source", "rules_version", "gate", "reason", "error_code",
        "source", "status", "state", "arm", "outcome", "event_type", "kind", "model", "editor",
        "expected_currency", "received_currency",  # ledger inconsistencies: codes the figures need
    }
)
_IDENTIFIER = re.compile(r"(^external_id$|_id$|_ref$|_reference$|_key$|^key$)")
# column -> the text column it is the sha256 of (a reconciliation run's stored JSON)
DIGEST_COLUMNS = {"result_sha256": "result_json"}
# column -> the text column it keys: a stored result computed from rows the erasure changed is
# re-keyed, so the next run of the same inputs computes afresh from the erased rows instead of
# comparing its bytes (ordered by the new hashed ids) with the ones stored before.
REKEYED_COLUMNS = {"input_digest": "result_json"}
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
# A string in a raw payload that is an id, code, amount or URL rather than words.
_CODE_LIKE = re.compile(r"^[A-Za-z0-9_.:/+\-]{0,200}$")
MIN_TEXT_TERM = 8  # free text shorter than this is not searched for elsewhere (too common)


class SubjectNotFound(LookupError):
    pass


def subject_hash(tenant: Tenant, selector: str) -> str:
    """The audit log's name for a subject: salted, never the raw id or address."""
    return pii_hash(f"gdpr:{tenant.slug}:{selector.strip().lower()}")


@dataclass
class Subject:
    tenant: Tenant
    selector: str
    customers: list[Customer]
    linked: records.Rows = field(default_factory=dict)
    mentions: records.Rows = field(default_factory=dict)
    terms: list[str] = field(default_factory=list)  # matched case-insensitively, as substrings
    # Parts of a name find nothing on their own (another customer may share a first name);
    # they are removed only from rows already known to be about the subject.
    name_parts: list[str] = field(default_factory=list)
    identifiers: set[str] = field(default_factory=set)  # matched as whole tokens
    _hashes: dict[str, str] = field(default_factory=dict, repr=False)

    @cached_property  # read once subject_find has filled `identifiers`
    def identifier_matcher(self) -> IdentifierMatcher:
        """Any identifier as a whole token, found in one pass over a text however many
        identifiers a long history gives (see `operations.matching`)."""
        return IdentifierMatcher(self.identifiers)

    @cached_property  # read once subject_find has filled `terms`
    def term_matcher(self) -> TermMatcher:
        return TermMatcher(self.terms)

    @cached_property  # after subject_find: every term and name part (longest first), one pattern and lowered
    def words(self) -> tuple[re.Pattern[str], tuple[str, ...]]:
        words = [*self.terms, *self.name_parts]
        return re.compile("|".join(map(re.escape, words)) or "(?!)", re.IGNORECASE), tuple(w.lower() for w in words)

    def hashed(self, value: str) -> str:
        """`pii_hash(value)`, once per value: an invoice id recurs in a dozen rows."""
        if (known := self._hashes.get(value)) is None:
            known = self._hashes[value] = pii_hash(value)
        return known

    def hash_identifiers(self, text: str) -> str:
        return self.identifier_matcher.sub(text, self.hashed)

    @property
    def hash(self) -> str:
        return subject_hash(self.tenant, self.selector)

    def counts(self) -> dict[str, int]:
        both = records.merge(self.linked, self.mentions)
        return {model._meta.label: len(keys) for model, keys in sorted(both.items(), key=lambda i: i[0]._meta.label)}


def _forward_neighbours(rows: records.Rows) -> records.Rows:
    """Tenant rows one foreign key away from the subject's rows (a draft's decision)."""
    found: records.Rows = {}
    for model, keys in rows.items():
        for f in model._meta.concrete_fields:
            target = f.related_model if f.is_relation else None
            if (
                not isinstance(target, type) or target in (Customer, *records.NOT_SUBJECT_DATA)
                or not records.is_tenant_model(target)
            ):
                continue
            not_null = f"{connection.ops.quote_name(f.column)} IS NOT NULL"
            pks = {pk for (pk,) in keyed_sql.keys_where(model, "pk", keys, where=not_null, select=[f.attname])}
            if pks:
                found.setdefault(target, set()).update(pks)
    return found


def _free_text(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if len(value.strip()) >= MIN_TEXT_TERM and not _CODE_LIKE.match(value) else []
    if isinstance(value, dict):
        return [t for v in value.values() for t in _free_text(v)]
    if isinstance(value, list):
        return [t for v in value for t in _free_text(v)]
    return []


@cache  # asked for every row of a long history: keyed by the model (a field's own hash is slow Python)
def _roles(model: type[models.Model]) -> tuple[tuple[models.Field, str], ...]:
    """(column, keep | hash | erase) for each text column of `model`."""
    return tuple((f, _column_role(f)) for f in records.text_fields(model))


def _column_role(f: models.Field) -> str:
    """keep | hash | erase for one text column of the subject's own rows."""
    if f.name in records.HASHED_EMAIL_COLUMNS:
        return "erase"  # a pseudonym that re-identifies them to anyone holding the salt
    if f.choices or f.name in KEEP_COLUMNS or f.name.endswith("_hash"):
        return "keep"
    if isinstance(f, models.CharField) and _IDENTIFIER.search(f.name):
        return "hash"
    return "erase"


def _collect_terms(subject: Subject) -> None:
    terms: set[str] = set()
    identifiers: set[str] = set()
    for customer in subject.customers:
        for value in (customer.name, customer.email):
            if value:
                terms.add(value)
    for model, keys in subject.linked.items():
        # Only the columns that give terms are read (not a draft's copy or a stored body).
        roles = [(f, role) for f, role in _roles(model) if role == "hash" or (role == "erase" and model is Customer)]
        if not roles:
            continue
        origins: dict[str, set[str]] = {}
        for row in keyed_sql.rows_by_pk(model, keys, [f.attname for f, _ in roles]):
            for f, role in roles:
                value = row[f.attname]
                if role == "hash" and isinstance(value, str) and len(value) >= 4:
                    origins.setdefault(f.attname, set()).add(value)
                elif role == "erase" and model is Customer:
                    # Only the person's own free text (plan, history notes) is searched for:
                    # draft and approval copy is mostly shared template text.
                    terms.update(_free_text(value))
        for column, values in origins.items():
            identifiers |= values - _shared(subject, model, column, values)
    subject.terms = sorted(terms, key=len, reverse=True)
    parts = {p for c in subject.customers for p in c.name.split() if len(p) >= 2}
    subject.name_parts = sorted(parts - terms, key=len, reverse=True)
    subject.identifiers = identifiers


def _shared(subject: Subject, model: type[models.Model], column: str, values: set[str]) -> set[str]:
    """The values that other rows of the same table hold in the same column: a marker every
    demo transition carries (`event_ref = demo_history`) or an id two customers share is not
    the subject's identifier, and hashing it would rewrite other people's rows."""
    own = subject.linked.get(model, set())
    # The tenant is checked here, not in SQL: given `tenant_id = %s` too, both planners walk
    # the tenant's whole index instead of the column's (a second a column at a million rows).
    tenant = "tenant" if records.is_tenant_model(model) else "pk"
    ours = subject.tenant.pk if tenant == "tenant" else None
    rows = keyed_sql.keys_where(model, column, values, select=["pk", column, tenant])
    return {value for pk, value, owner in rows if pk not in own and (ours is None or owner == ours)}


def _email_name_parts(email: str) -> list[str]:
    """`first.last@...` -> [first, last]: a bank line or remittance text naming someone known
    only by an orders export's e-mail usually spells that name. Only a local part of two or
    more alphabetic words counts (`billing@`, `jd1984@` give nothing)."""
    words = re.split(r"[._\-]", email.split("@", 1)[0])
    if len(words) < 2 or not all(w.isalpha() and len(w) >= 3 for w in words):
        return []
    return words


def subject_find(*, tenant: Tenant, customer_id: str | None = None, email: str | None = None) -> Subject:
    """Everything about one data subject of `tenant`. Raises SubjectNotFound."""
    if bool(customer_id) == bool(email):
        raise ValueError("give exactly one of customer_id and email")
    selector = customer_id or email or ""
    qs = Customer.objects.filter(tenant=tenant)
    customers = list(qs.filter(external_id=customer_id) if customer_id else qs.filter(email__iexact=email))
    if customer_id and not customers:
        raise SubjectNotFound("no customer of this tenant matches")
    emails = {e.strip().lower() for e in [email or "", *(c.email or "" for c in customers)] if e and e.strip()}
    by_email = records.by_email_hash(tenant, {pii_hash(e) for e in emails})
    if not customers and not by_email:
        raise SubjectNotFound("no customer or order of this tenant matches")
    subject = Subject(tenant=tenant, selector=selector, customers=customers)
    linked = records.closure(Customer, [c.pk for c in customers]) if customers else {}
    own_invoices = linked.get(Invoice, set())
    invoice_ids = {ref for (ref,) in keyed_sql.keys_where(Invoice, "pk", own_invoices, select=["external_invoice_id"])}
    linked = records.merge(linked, records.by_invoice_ref(tenant, invoice_ids))
    # Rows found by hashed e-mail bring no neighbours: the imported file an order row points
    # at holds everybody's orders and is not about the subject.
    subject.linked = records.merge(linked, _forward_neighbours(linked), by_email)
    _collect_terms(subject)
    subject.terms = sorted(set(subject.terms) | emails, key=len, reverse=True)
    parts = set(subject.name_parts) | {p for e in emails for p in _email_name_parts(e)}
    subject.name_parts = sorted(parts - set(subject.terms), key=len, reverse=True)
    subject.mentions = find_mentions(subject)
    return subject


def subject_export(*, subject: Subject, stream: IO[str] | TextIOBase, actor: str = "system") -> int:
    """Write the subject's records to `stream` as one JSON document, a row per line, read a
    chunk of keys at a time (never the whole document in memory); the access is audited
    first. Returns the number of rows written."""
    with tenant_context(subject.tenant):
        audit_record(
            event="operations.gdpr.exported", tenant=subject.tenant, actor=actor,
            detail={"subject_hash": subject.hash, "counts": subject.counts()},
        )
        written = 0
        stream.write("{\n")
        for section, rows in (("mentions", subject.mentions), ("records", subject.linked)):
            stream.write(f'  "{section}": {{')
            for m, (label, items) in enumerate(records.dump_iter(rows)):
                stream.write(f'{"," if m else ""}\n    {json.dumps(label)}: [')
                for n, item in enumerate(items):
                    stream.write(f'{"," if n else ""}\n      {records.dumps_row(item)}')
                    written += 1
                stream.write("\n    ]")
            stream.write("\n  },\n")
        subject_doc = {"subject_hash": subject.hash, "tenant": subject.tenant.slug}
        stream.write(f'  "subject": {records.dumps_row(subject_doc)}\n}}\n')
        return written


def _redact_plain(text: str, subject: Subject) -> str:
    return subject.hash_identifiers(subject.words[0].sub(ERASED, text))


def _redact_text(text: str, subject: Subject) -> str:
    """A text column; when it holds JSON (a stored run), only inside its string values, so
    numbers and layout (the bytes a digest attests) stay as they are."""
    if text[:1] in "{[":
        try:
            json.loads(text)
        except ValueError:
            pass
        else:
            return _JSON_STRING.sub(lambda m: _redact_plain(m.group(0), subject), text)
    return _redact_plain(text, subject)


def _redact_json(value: Any, subject: Subject, *, payload: bool) -> Any:
    """Strings naming the subject go; in a raw payload every free-text string goes too."""
    if isinstance(value, dict):  # an id can be a key too (metadata keyed by customer)
        return {subject.hash_identifiers(k): _redact_json(v, subject, payload=payload) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_json(v, subject, payload=payload) for v in value]
    if isinstance(value, str):
        if value in subject.identifiers:
            return subject.hashed(value)
        lowered = value.lower()
        if any(word in lowered for word in subject.words[1]):
            return ERASED
        if payload and value and not _CODE_LIKE.match(value):
            return ERASED
        return subject.hash_identifiers(value)  # an id inside a URL or a derived key
    return value


def _redact_payload(raw: bytes, subject: Subject) -> bytes:
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return _redact_text(text, subject).encode()
    return json.dumps(_redact_json(parsed, subject, payload=True), separators=(",", ":")).encode()


def _erased_value(f: models.Field, value: Any) -> Any:
    if isinstance(f, models.JSONField):
        return [] if isinstance(value, list) else {}
    if isinstance(f, models.BinaryField):
        return b""
    return ""


def _own_row_changes(model: type[models.Model], row: dict[str, Any], subject: Subject) -> dict[str, Any]:
    changes = {}
    for f, role in _roles(model):
        value = row[f.attname]
        if role == "hash" and value:
            changes[f.attname] = subject.hashed(value)
        elif role == "erase" and value not in ("", b"", {}, [], None):
            changes[f.attname] = _erased_value(f, value)
    return changes


def _mention_changes(model: type[models.Model], row: dict[str, Any], subject: Subject) -> dict[str, Any]:
    changes = {}
    for f in records.text_fields(model):
        value = row[f.attname]
        if value is None:
            continue
        if isinstance(f, models.BinaryField):
            new: Any = _redact_payload(bytes(value), subject)
            changed = new != bytes(value)
        elif isinstance(f, models.JSONField):
            new = _redact_json(value, subject, payload=False)
            changed = new != value
        else:
            new = subject.hashed(value) if value in subject.identifiers else _redact_text(value, subject)
            changed = new != value
        if changed:
            changes[f.attname] = new
    _refresh_digests(model, changes)
    return changes


def _refresh_digests(model: type[models.Model], changes: dict[str, Any]) -> None:
    names = {f.attname for f in model._meta.concrete_fields}
    for digest, source in DIGEST_COLUMNS.items():
        if digest in names and source in changes:
            changes[digest] = hashlib.sha256(str(changes[source]).encode()).hexdigest()
    for key, source in REKEYED_COLUMNS.items():
        if key in names and source in changes and key not in changes:
            changes[key] = hashlib.sha256(f"gdpr_erase:{changes[source]}".encode()).hexdigest()


@dataclass
class ErasureReport:
    subject_hash: str
    changed: dict[str, int]  # model label -> rows changed
    dry_run: bool


def _planned(subject: Subject) -> Iterator[tuple[type[models.Model], list[tuple[Any, dict[str, Any]]]]]:
    """(model, [(pk, changes)]) a chunk of rows at a time: the subject's own rows, then the
    rows mentioning them. Each row's changes depend on that row and the subject alone."""
    for rows, changes_of in (
        (subject.linked, lambda model, row: _own_row_changes(model, row, subject)),
        (subject.mentions, lambda model, row: _mention_changes(model, row, subject)),
    ):
        for model in sorted(rows, key=lambda m: m._meta.label):
            names = [f.attname for f in records.text_fields(model)]
            for chunk in records.chunked(sorted(rows[model])):
                batch = []
                for row in keyed_sql.rows_by_pk(model, chunk, names):
                    changes = changes_of(model, row)
                    if changes:
                        batch.append((row["pk"], changes))
                yield model, batch


def _apply(model: type[models.Model], batch: list[tuple[Any, dict[str, Any]]]) -> None:
    """One statement per chunk of rows (per row on SQLite) for each set of changed columns,
    not one ORM update per row."""
    by_columns: dict[tuple[str, ...], list[tuple[Any, dict[str, Any]]]] = {}
    for pk, changes in batch:
        by_columns.setdefault(tuple(sorted(changes)), []).append((pk, changes))
    for columns, rows in by_columns.items():
        # Concrete columns only: the changes name fields read by `values()`.
        fields = [field for name in columns if isinstance(field := model._meta.get_field(name), models.Field)]
        keyed_sql.update_by_pk(model, fields, [(pk, [changes[f.attname] for f in fields]) for pk, changes in rows])


def subject_erase(*, subject: Subject, dry_run: bool = False, actor: str = "system") -> ErasureReport:
    """Remove the subject's name, e-mail and free text everywhere; keep amounts and states.

    Writes the audit event first, then changes rows a chunk at a time, all in one
    transaction (an erasure is all or nothing). A dry run computes the same report and
    changes nothing (no audit event either)."""
    changed: dict[str, int] = {}
    if dry_run:
        for model, batch in _planned(subject):
            if batch:
                changed[model._meta.label] = changed.get(model._meta.label, 0) + len(batch)
        return ErasureReport(subject_hash=subject.hash, changed=dict(sorted(changed.items())), dry_run=True)
    with tenant_context(subject.tenant), append_only_override("gdpr_erase"):
        # The audit event comes first and counts the rows found about the subject (the
        # command prints the rows actually changed): an append-only row is never revised.
        audit_record(
            event="operations.gdpr.erased", tenant=subject.tenant, actor=actor,
            detail={"subject_hash": subject.hash, "counts": subject.counts(), "operation": "gdpr_erase"},
        )
        for model, batch in _planned(subject):
            if batch:
                _apply(model, batch)
                changed[model._meta.label] = changed.get(model._meta.label, 0) + len(batch)
    return ErasureReport(subject_hash=subject.hash, changed=dict(sorted(changed.items())), dry_run=False)
