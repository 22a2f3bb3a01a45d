"""Decision, outcome and refusal rows refuse UPDATE and DELETE at the database itself."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from decisions.models import DecisionOutcome, DecisionRecord, DecisionRefusal
from decisions.services import now_ms
from decisions.tests.factories import DecisionOutcomeFactory, DecisionRecordFactory
from paypilot.db import append_only_override

pytestmark = pytest.mark.django_db


def _rows(tenant):  # type: ignore[no-untyped-def]
    return [
        DecisionRecordFactory(tenant=tenant),
        DecisionOutcomeFactory(tenant=tenant),
        DecisionRefusal.objects.create(tenant=tenant, gate="size", reason="body_too_large", created_at=now_ms()),
    ]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_update_is_refused_by_the_database(tenant, index):  # type: ignore[no-untyped-def]
    row = _rows(tenant)[index]
    table = row._meta.db_table
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f'UPDATE "{table}" SET tenant_id = tenant_id WHERE id = %s', [row.pk])


@pytest.mark.parametrize("index", [0, 1, 2])
def test_delete_is_refused_by_the_database(tenant, index):  # type: ignore[no-untyped-def]
    row = _rows(tenant)[index]
    with pytest.raises(DatabaseError), transaction.atomic():
        type(row).objects.filter(pk=row.pk).delete()
    assert type(row).objects.filter(pk=row.pk).exists()


def test_orm_save_of_an_existing_row_is_refused(tenant):  # type: ignore[no-untyped-def]
    record = DecisionRecordFactory(tenant=tenant)
    record.rule_fired = "default"
    with pytest.raises(DatabaseError), transaction.atomic():
        record.save()
    assert DecisionRecord.objects.get(pk=record.pk).rule_fired == "card_expired"


def test_named_override_is_the_one_way_past(tenant):  # type: ignore[no-untyped-def]
    outcome = DecisionOutcomeFactory(tenant=tenant)
    with append_only_override("gdpr_erase"):
        DecisionOutcome.objects.filter(pk=outcome.pk).delete()
    assert not DecisionOutcome.objects.filter(pk=outcome.pk).exists()
