"""Audit events refuse UPDATE and DELETE at the database (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from paypilot.db import append_only_override
from paypilot.models import AuditEvent
from paypilot.services import audit_record

pytestmark = pytest.mark.django_db


def _event() -> AuditEvent:
    return audit_record(event="paypilot.test.appended", detail={"reason": "test"})


def test_orm_update_is_refused(tenant):
    event = _event()
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(event="tampered")
    event.refresh_from_db()
    assert event.event == "paypilot.test.appended"


def test_raw_sql_update_and_delete_are_refused(tenant):
    event = _event()
    for sql in (
        "UPDATE paypilot_auditevent SET actor = 'x' WHERE id = %s",
        "DELETE FROM paypilot_auditevent WHERE id = %s",
    ):
        with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [event.pk])
    assert AuditEvent.objects.filter(pk=event.pk, actor="system").exists()


def test_orm_delete_is_refused(tenant):
    event = _event()
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_named_override_allows_the_change_and_leaves_no_marker(tenant):
    event = _event()
    with append_only_override("gdpr_erase"):
        AuditEvent.objects.filter(pk=event.pk).update(actor="erased")
    event.refresh_from_db()
    assert event.actor == "erased"
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(actor="again")


def test_unknown_override_name_is_refused(tenant):
    with pytest.raises(ValueError):
        with append_only_override("anything_goes"):
            pass


def test_audit_detail_drops_keys_outside_the_allowlist(tenant):
    event = audit_record(event="paypilot.test.pii", detail={"reason": "x", "email": "a@b.c"})
    assert event.detail == {"reason": "x"}
