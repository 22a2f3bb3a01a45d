"""paypilot.db.foreign_key_index_drop: the tables the webhook drain writes keep no lone tenant
(or invoice) index, and lost none of their triggers on the way (Django's AlterField would
have rebuilt them on SQLite, triggers and all)."""

from __future__ import annotations

import pytest
from django.db import connection

from approvals.models import ApprovalRequest
from decisions.models import DecisionRecord
from dunning.models import Draft
from integrations.models import WebhookEvent
from ledger.models import Customer, Invoice
from paypilot.models import AuditEvent

pytestmark = pytest.mark.django_db

DROPPED = {
    ApprovalRequest: ["tenant_id", "invoice_id"],
    DecisionRecord: ["tenant_id"],
    Draft: ["tenant_id"],
    WebhookEvent: ["tenant_id"],
    Customer: ["tenant_id"],
    Invoice: ["tenant_id"],
    AuditEvent: ["tenant_id"],
}


def _indexes(table: str) -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    return {name: info["columns"] for name, info in found.items()
            if (info["index"] or info["unique"]) and not info["primary_key"] and not info["foreign_key"]}


def _triggers(table: str) -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [table])
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
                           [table])
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.parametrize("model", list(DROPPED), ids=lambda m: m.__name__)
def test_no_lone_index_on_the_dropped_keys_and_a_composite_leads_with_each(model) -> None:  # type: ignore[no-untyped-def]
    indexes = _indexes(model._meta.db_table)
    for column in DROPPED[model]:
        assert [column] not in indexes.values(), indexes
        assert any(columns[0] == column and len(columns) > 1 for columns in indexes.values()), indexes


def test_the_tables_kept_their_triggers(tenant) -> None:  # type: ignore[no-untyped-def]
    AuditEvent.objects.create(tenant=tenant, event="test.triggers", actor="tester")
    assert any("append_only" in name or "no_update" in name for name in _triggers(AuditEvent._meta.db_table))
    assert any("rollup" in name for name in _triggers(Invoice._meta.db_table))
    with pytest.raises(Exception, match="append-only"):
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {AuditEvent._meta.db_table} SET actor = 'x'")
