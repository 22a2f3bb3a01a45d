"""Transition rows refuse UPDATE and DELETE at the database (run on SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from ledger.models import InvoiceTransition
from paypilot.db import append_only_override

pytestmark = pytest.mark.django_db


@pytest.fixture
def transition(record_failure) -> InvoiceTransition:  # type: ignore[no-untyped-def]
    return InvoiceTransition.objects.get(invoice=record_failure().invoice)


def test_orm_update_is_refused(transition) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DatabaseError), transaction.atomic():
        InvoiceTransition.objects.filter(pk=transition.pk).update(to_state="recovered")
    transition.refresh_from_db()
    assert transition.to_state == "failed"


def test_raw_update_and_delete_are_refused(transition) -> None:  # type: ignore[no-untyped-def]
    for sql in ('UPDATE "ledger_invoicetransition" SET cause = %s WHERE id = %s',
                'DELETE FROM "ledger_invoicetransition" WHERE id = %s'):
        params = ["forged", transition.pk] if sql.startswith("UPDATE") else [transition.pk]
        with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    assert InvoiceTransition.objects.filter(pk=transition.pk, cause="payment_failed").exists()


def test_orm_delete_is_refused(transition) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DatabaseError), transaction.atomic():
        InvoiceTransition.objects.filter(pk=transition.pk).delete()
    assert InvoiceTransition.objects.filter(pk=transition.pk).exists()


def test_named_override_is_the_one_way_past(transition) -> None:  # type: ignore[no-untyped-def]
    with append_only_override("gdpr_erase"):
        InvoiceTransition.objects.filter(pk=transition.pk).update(event_ref="")
    transition.refresh_from_db()
    assert transition.event_ref == ""
