"""Finding every row about a customer or an invoice, from the app registry.

Nothing here names another app's models beyond the ledger's Customer and Invoice: rows are
reached through foreign keys (reverse relations, transitively), so a table another app adds
later is covered as soon as it points at an invoice, a draft, a send... A few rows refer to
an invoice by its external id instead of a key (`invoice_ref` in the decision audit); those
are matched by that column name.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from decimal import Decimal
from functools import cache
from typing import Any

from django.apps import apps
from django.db import models

from operations import keyed_sql
from operations.keyed_sql import chunked as chunked  # re-exported: callers chunk keys as the reads do
from paypilot.models import AuditEvent, Tenant

# Columns holding an invoice's external id where a foreign key would be expected.
INVOICE_REF_COLUMNS = ("invoice_ref",)
# Columns holding the salted hash (`pii_hash`) of a lower-cased e-mail address instead of the
# address: a shop export's orders in reconciliation. They tie a row to a data subject.
HASHED_EMAIL_COLUMNS = ("customer_email_hash",)
# Rows that are never reached through relations: the audit log holds ids and hashes only,
# tenants and users are not about the data subject.
NOT_SUBJECT_DATA: tuple[type[models.Model], ...] = (AuditEvent, Tenant)

Rows = dict[type[models.Model], set[Any]]

def is_tenant_model(model: type[models.Model]) -> bool:
    try:
        field = model._meta.get_field("tenant")
    except Exception:  # noqa: BLE001 - FieldDoesNotExist
        return False
    return isinstance(field, models.ForeignKey) and field.related_model is Tenant


def tenant_models() -> list[type[models.Model]]:
    return [
        m for m in apps.get_models()
        if is_tenant_model(m) and not m._meta.proxy and m._meta.managed
    ]


def _reverse_relations(model: type[models.Model]) -> list[tuple[type[models.Model], str]]:
    """(child model, field name) for every foreign key / one-to-one pointing at `model`."""
    found = []
    for rel in model._meta.related_objects:
        if rel.many_to_many or not rel.field.concrete:
            continue
        child = rel.related_model
        if not isinstance(child, type) or child in NOT_SUBJECT_DATA or child._meta.proxy:
            continue
        found.append((child, rel.field.name))
    return found


def closure(model: type[models.Model], pks: Iterable[Any]) -> Rows:
    """`model` rows `pks` plus every row that points at them, transitively."""
    rows: Rows = {}
    queue: list[tuple[type[models.Model], set[Any]]] = [(model, set(pks))]
    while queue:
        current, keys = queue.pop(0)
        new = keys - rows.get(current, set())
        if not new:
            continue
        rows.setdefault(current, set()).update(new)
        for child, field_name in _reverse_relations(current):
            child_keys = {pk for (pk,) in keyed_sql.keys_where(child, field_name, new)}
            if child_keys:
                queue.append((child, child_keys))
    return rows


def _tenant_rows_where(model: type[models.Model], column: str, values: set[str], tenant: Tenant | int) -> set[Any]:
    tenant_id = tenant.pk if isinstance(tenant, Tenant) else tenant
    where = keyed_sql.tenant_where(model)
    return {pk for (pk,) in keyed_sql.keys_where(model, column, values, where=where, params=[tenant_id])}


def by_invoice_ref(tenant: Tenant | int, external_ids: set[str]) -> Rows:
    """Tenant rows naming one of these invoices by external id instead of a key."""
    rows: Rows = {}
    if not external_ids:
        return rows
    for model in tenant_models():
        for column in INVOICE_REF_COLUMNS:
            if any(f.name == column for f in model._meta.concrete_fields):
                keys = _tenant_rows_where(model, column, external_ids, tenant)
                if keys:
                    rows.setdefault(model, set()).update(keys)
    return rows


def by_email_hash(tenant: Tenant | int, email_hashes: set[str]) -> Rows:
    """Tenant rows whose hashed e-mail column is one of `email_hashes`."""
    rows: Rows = {}
    if not email_hashes:
        return rows
    for model in tenant_models():
        for column in HASHED_EMAIL_COLUMNS:
            if any(f.name == column for f in model._meta.concrete_fields):
                keys = _tenant_rows_where(model, column, email_hashes, tenant)
                if keys:
                    rows.setdefault(model, set()).update(keys)
    return rows


def merge(*parts: Rows) -> Rows:
    merged: Rows = {}
    for part in parts:
        for model, keys in part.items():
            merged.setdefault(model, set()).update(keys)
    return merged


def delete_order(models_: Iterable[type[models.Model]]) -> list[type[models.Model]]:
    """Models ordered so that a row is deleted before the rows it points at."""
    pending = set(models_)
    ordered: list[type[models.Model]] = []
    while pending:
        # A model nobody else pending points at can go now.
        free = [
            m for m in pending
            if not any(
                f.related_model is m for other in pending if other is not m
                for f in other._meta.concrete_fields if f.is_relation
            )
        ]
        if not free:  # a cycle: fall back to a stable order, the database will say if it fails
            free = sorted(pending, key=lambda m: m._meta.label)
        for model in sorted(free, key=lambda m: m._meta.label):
            ordered.append(model)
            pending.discard(model)
    return ordered


@cache  # asked once per row of a long history
def text_fields(model: type[models.Model]) -> list[models.Field]:
    """Columns that can hold words: char/text/email/url, JSON and raw bytes."""
    kinds = (models.CharField, models.TextField, models.JSONField, models.BinaryField)
    return [f for f in model._meta.concrete_fields if isinstance(f, kinds) and not f.is_relation]


def jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(raw).decode()}
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def dump_iter(rows: Rows) -> Iterator[tuple[str, Iterator[dict[str, Any]]]]:
    """(model label, its rows as dicts) by label, each read a chunk of keys at a time."""
    for model in sorted(rows, key=lambda m: m._meta.label):
        # Every column by attribute name (`dumps_row` converts bytes and dates), without
        # building model instances.
        yield model._meta.label, keyed_sql.rows_by_pk(model, rows[model])


def json_default(value: Any) -> Any:
    converted = jsonable(value)
    if converted is value:
        raise TypeError(f"not JSON serialisable: {type(value).__name__}")
    return converted


def dumps_row(row: Any) -> str:
    return json.dumps(row, sort_keys=True, default=json_default, ensure_ascii=False)

