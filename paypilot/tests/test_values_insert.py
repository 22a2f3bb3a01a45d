"""paypilot.bulk.values_insert: rows given as plain dicts are stored as the same values
saved through model instances are, ids in order, on both databases and on both of its
paths (the JSON document on PostgreSQL, multi-row VALUES elsewhere or as the fallback)."""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any, cast

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dunning.models import Draft
from ledger.models import Invoice, InvoiceTransition
from ledger.tests.factories import InvoiceFactory
from paypilot.bulk import values_insert
from paypilot.models import AuditEvent, Tenant

pytestmark = pytest.mark.django_db


def _stored(model: type[Any], ids: list[int], skip: tuple[str, ...] = ("created_at",)) -> list[dict[str, Any]]:
    rows = {row["id"]: row for row in model.objects.filter(pk__in=ids).values()}
    return [{k: v for k, v in rows[pk].items() if k not in ("id", *skip)} for pk in ids]


def test_rows_are_stored_as_saved_instances_store_them_with_ids_in_order(tenant: Tenant) -> None:
    # More rows than one SQLite statement binds (999 parameters / 4 columns): several batches.
    rows = [{"event": f"test.values.{i}", "tenant_id": tenant.pk, "actor": "tester",
             "detail": {"n": i, "nested": {"text": "Zürich \"q\" 東京", "list": [1, 2.5, None, True]}}}
            for i in range(600)]
    before = timezone.now()
    ids = values_insert(AuditEvent, rows)
    assert len(ids) == 600 and ids == sorted(ids) and len(set(ids)) == 600
    saved = []
    for row in rows[:3]:
        instance = AuditEvent(**row)
        instance.save(force_insert=True)
        saved.append(instance.pk)
    assert _stored(AuditEvent, ids[:3]) == _stored(AuditEvent, saved)
    assert [row["detail"]["n"] for row in _stored(AuditEvent, ids)] == list(range(600))
    # auto_now_add: one time for the call, set by the insert
    stamps = set(AuditEvent.objects.filter(pk__in=ids).values_list("created_at", flat=True))
    assert len(stamps) == 1 and before <= stamps.pop() <= timezone.now()


def test_missing_keys_take_the_field_defaults_and_auto_now_add_is_always_now(tenant: Tenant) -> None:
    long_ago = dt.datetime(2001, 1, 1, tzinfo=dt.UTC)
    [pk] = values_insert(AuditEvent, [{"event": "test.values.default", "tenant_id": tenant.pk,
                                       "created_at": long_ago}])
    row = AuditEvent.objects.get(pk=pk)
    assert (row.actor, row.detail) == ("", {})
    assert row.created_at > long_ago  # as save() does: auto_now_add overrides a given value
    invoice = cast(Invoice, InvoiceFactory(tenant=tenant))
    [draft] = values_insert(Draft, [{"tenant_id": tenant.pk, "invoice_id": invoice.pk, "subject": "s", "body": "b",
                                     "locale": "en", "source": "template"}])
    stored = Draft.objects.get(pk=draft)
    assert (stored.dropped_fields, stored.guard_verdict, stored.fallback_used, stored.decision_id) == \
        ([], {}, False, None)


def test_a_key_that_is_no_column_is_refused_before_anything_is_written(tenant: Tenant) -> None:
    with pytest.raises(ValueError, match="no such column"):
        values_insert(AuditEvent, [{"event": "x", "tenant_id": tenant.pk, "tenant": tenant}])
    with pytest.raises(ValueError, match="no such column"):
        values_insert(AuditEvent, [{"event": "x", "tenant_id": tenant.pk}, {"evnet": "typo", "tenant_id": tenant.pk}])
    assert not AuditEvent.objects.filter(event="x").exists()
    with CaptureQueriesContext(connection) as queries:
        assert values_insert(AuditEvent, []) == []
    assert len(queries) == 0


def test_a_value_the_document_does_not_carry_is_prepared_by_its_field(tenant: Tenant) -> None:
    """A naive datetime (Django warns and reads it in the current time zone): the VALUES
    path with each field's preparation, stored as save() stores it."""
    invoice = cast(Invoice, InvoiceFactory(tenant=tenant))
    naive = dt.datetime(2026, 3, 1, 12, 30)
    values = {"tenant_id": tenant.pk, "invoice_id": invoice.pk, "from_state": "", "to_state": "failed",
              "cause": "payment_failed", "event_ref": "stripe:evt_naive", "occurred_at": naive}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ids = values_insert(InvoiceTransition, [values, {**values, "event_ref": "stripe:evt_2"}])
        instance = InvoiceTransition(**values)
        instance.save(force_insert=True)
    assert _stored(InvoiceTransition, ids[:1]) == _stored(InvoiceTransition, [instance.pk])
    assert InvoiceTransition.objects.get(pk=ids[1]).occurred_at == timezone.make_aware(naive)
