"""paypilot.fields: identifier columns compare and sort byte by byte on both databases
(COLLATE "C" on PostgreSQL, whatever locale the server was initialised with)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from operations.tests.conftest import postgres_only
from paypilot.fields import IdentifierCharField, IdentifierTextField
from paypilot.models import Tenant
from reconciliation.models import ProviderRow
from reconciliation.tests.factories import load, txn

pytestmark = pytest.mark.django_db

IDENTIFIER_FIELDS = (IdentifierCharField, IdentifierTextField)


def _identifier_columns() -> list[tuple[str, str]]:
    return sorted((model._meta.db_table, field.column) for model in apps.get_models()
                  for field in model._meta.concrete_fields if isinstance(field, IDENTIFIER_FIELDS))


def _collations() -> dict[tuple[str, str], str | None]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name, column_name, collation_name FROM information_schema.columns "
                       "WHERE table_schema = current_schema()")
        return {(table, column): collation for table, column, collation in cursor.fetchall()}


def test_the_imported_rows_identifiers_are_identifier_fields() -> None:
    columns = _identifier_columns()
    for expected in [("reconciliation_providerrow", "transaction_id"), ("reconciliation_providerrow", "charge_id"),
                     ("reconciliation_providerrow", "payout_id"), ("reconciliation_orderrow", "order_id"),
                     ("reconciliation_orderrow", "payment_reference"), ("reconciliation_bankrow", "remittance"),
                     ("reconciliation_disputerow", "dispute_id")]:
        assert expected in columns


@postgres_only
def test_identifier_columns_are_byte_ordered_on_postgresql() -> None:
    collations = _collations()
    assert {column: collations[column] for column in _identifier_columns()} == {
        column: "C" for column in _identifier_columns()}
    assert collations[("reconciliation_providerrow", "currency")] is None  # the database default


def test_a_sort_on_an_identifier_is_byte_order(tenant: Tenant) -> None:
    ids = ["txn_b", "txn_B", "txn_a", "txn_Ä", "txn_A", "txn__", "txn_10", "txn_9", "txn_ä"]
    load(tenant, "provider", [txn(i, "charge", 100) for i in ids])

    stored = list(ProviderRow.objects.filter(tenant=tenant).order_by("transaction_id")
                  .values_list("transaction_id", flat=True))

    assert stored == sorted(ids, key=lambda text: text.encode())


@postgres_only
def test_the_migration_moves_the_columns_both_ways_on_postgresql() -> None:
    loader = MigrationLoader(connection)
    before = loader.project_state(("reconciliation", "0004_bulk_rows_without_per_row_keys"))
    after = loader.project_state(("reconciliation", "0005_identifier_byte_order"))
    operation = loader.get_migration("reconciliation", "0005_identifier_byte_order").operations[0]
    with connection.schema_editor(atomic=False) as editor:
        operation.database_backwards("reconciliation", editor, after, before)
    assert _collations()[("reconciliation_orderrow", "order_id")] is None
    with connection.schema_editor(atomic=False) as editor:
        operation.database_forwards("reconciliation", editor, before, after)
    assert _collations()[("reconciliation_orderrow", "order_id")] == "C"
