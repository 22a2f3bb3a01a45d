"""Partitioning past one PostgreSQL (paypilot.partitioning, migration paypilot 0007).

PostgreSQL only. Each test migrates paypilot back to 0006 and forward to 0007 with
PAYPILOT_PARTITIONING on, so the real migration converts the real tables; the fixture then
migrates back (the reverse turns them into plain tables again) so later tests see the
schema they expect.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.test import Client
from django.utils import timezone
from django_q.models import Task

from integrations.models import WebhookEvent
from integrations.providers.stripe import sign
from integrations.services import credential_set
from operations.tests.conftest import connect_as, django_as, postgres_only
from paypilot.models import Tenant
from paypilot.partitioning import SPECS, buckets, ensure_months
from paypilot.pg_roles import app_role_apply, app_role_problems
from paypilot.rls import rls_apply, rls_problems
from paypilot.services import tenant_create
from paypilot.tenancy import tenant_for_row
from reconciliation.models import OrderRow, ProviderRow

pytestmark = postgres_only

ROLE = "pp_partition_app_test"
SECRET = "whsec_partitioning_0123456789abcdef"
FIXTURES = Path(__file__).resolve().parents[2] / "integrations" / "tests" / "fixtures" / "stripe"
INSUFFICIENT_PRIVILEGE = "42501"


def _migrate(target: str, *, settings: Any, on: bool) -> None:
    settings.PAYPILOT_PARTITIONING = on
    call_command("migrate", "paypilot", target, verbosity=0)


def _relkinds() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, relkind FROM pg_class WHERE relname = ANY(%s) "
                       "AND relnamespace = current_schema()::regnamespace", [[s.table for s in SPECS]])
        return dict(cursor.fetchall())


def _key_columns(table: str, constraint: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.attname FROM pg_constraint c, unnest(c.conkey) WITH ORDINALITY k(n, o) "
            "JOIN pg_attribute a ON a.attnum = k.n WHERE c.conname = %s AND a.attrelid = c.conrelid "
            "AND c.conrelid = to_regclass(%s) ORDER BY k.o", [constraint, table])
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def partitioned(transactional_db, settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
    _migrate("0006", settings=settings, on=True)
    _migrate("0007", settings=settings, on=True)
    try:
        yield
    finally:
        _migrate("0006", settings=settings, on=False)
        _migrate("0007", settings=settings, on=False)


def _post(client: Client, slug: str, body: bytes) -> Any:
    return client.post(f"/t/{slug}/webhooks/stripe", data=body, content_type="application/json",
                       headers={"Stripe-Signature": sign(body=body, secret=SECRET)})


def _stripe_body(event_id: str) -> bytes:
    data = json.loads((FIXTURES / "invoice_paid.json").read_text())
    data["id"] = event_id
    return json.dumps(data, separators=(",", ":")).encode()


def _order_row(tenant: Tenant, when: datetime) -> OrderRow:
    return OrderRow.objects.create(
        tenant=tenant, file_id=1, line=1, order_id=f"o-{uuid.uuid4().hex[:8]}", ordered_at=when,
        ordered_day=(when.date() - date(1970, 1, 1)).days, amount_minor=100, currency="EUR",
    )


def _home(table: str, pk: Any) -> tuple[str, int]:
    """The leaf partition holding the row and the row's tenant."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text, tenant_id FROM {table} WHERE id = %s", [pk])
        return cursor.fetchone()


def _in_bucket(leaf: str, tenant_id: int) -> bool:
    """PostgreSQL's own hash routing: the leaf's bucket is the one this tenant hashes to."""
    parent, remainder = leaf.rsplit("_b", 1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT satisfies_hash_partition(to_regclass(%s), %s, %s, %s::bigint)",
                       [parent, buckets(), int(remainder), tenant_id])
        return bool(cursor.fetchone()[0])


def test_with_the_setting_off_the_migration_changes_nothing(transactional_db, settings):
    before = _relkinds()
    _migrate("0006", settings=settings, on=False)
    _migrate("0007", settings=settings, on=False)
    assert _relkinds() == before and set(before.values()) == {"r"}
    assert _key_columns("integrations_webhookevent", "integrations_webhookevent_pkey") == ["id"]


def test_tables_are_partitioned_and_rows_land_in_their_partitions(partitioned):
    assert set(_relkinds().values()) == {"p"}
    # Keys widened by the partition columns; the idempotency key already leads with the tenant.
    assert _key_columns("integrations_webhookevent", "integrations_webhookevent_pkey") == ["id", "tenant_id"]
    assert _key_columns("integrations_webhookevent", "integrations_webhook_unique_key") == [
        "tenant_id", "provider", "event_key"]
    assert _key_columns("reconciliation_orderrow", "reconciliation_orderrow_pkey") == [
        "id", "tenant_id", "ordered_at"]
    a = tenant_create(slug="acme", name="Acme")
    b = tenant_create(slug="globex", name="Globex")
    now = timezone.now()
    for tenant in (a, b):
        row = _order_row(tenant, now)
        leaf, tenant_id = _home("reconciliation_orderrow", row.pk)
        assert leaf.startswith(f"reconciliation_orderrow_m{now:%Y%m}_b") and _in_bucket(leaf, tenant_id)
        event = WebhookEvent.objects.create(tenant=tenant, provider="stripe", event_key=f"evt_{tenant.slug}",
                                            event_type="invoice.paid", body=b"{}")
        leaf, tenant_id = _home("integrations_webhookevent", event.pk)
        assert leaf.startswith("integrations_webhookevent_b") and _in_bucket(leaf, tenant_id)
        with pytest.raises(DatabaseError), transaction.atomic():  # the body is still append-only
            WebhookEvent.objects.filter(pk=event.pk).update(body=b"changed")
    task = Task.objects.create(id=uuid.uuid4().hex, name="t", func="f", started=now, stopped=now,
                               success=True, attempt_count=1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text FROM django_q_task WHERE id = %s", [task.pk])
        assert cursor.fetchone()[0] == f"django_q_task_m{now:%Y%m}"
    # A month with no partition goes to DEFAULT, and moves out when its partition is made.
    old = _order_row(a, datetime(2024, 3, 15, tzinfo=UTC))
    assert _home("reconciliation_orderrow", old.pk)[0] == "reconciliation_orderrow_default"
    created = ensure_months(0, today=date(2024, 3, 1))
    assert "reconciliation_orderrow_m202403" in created
    leaf, tenant_id = _home("reconciliation_orderrow", old.pk)
    assert leaf.startswith("reconciliation_orderrow_m202403_b") and _in_bucket(leaf, tenant_id)
    assert OrderRow.objects.filter(tenant=a).count() == 2  # moved, not copied
    # The ids keep coming from a sequence carried over from the old table.
    assert _order_row(b, now).pk > old.pk


def test_a_duplicate_webhook_event_is_still_refused(partitioned):
    tenant = tenant_create(slug="acme", name="Acme")
    WebhookEvent.objects.create(tenant=tenant, provider="stripe", event_key="evt_1", event_type="x", body=b"{}")
    with pytest.raises(IntegrityError), transaction.atomic():
        WebhookEvent.objects.create(tenant=tenant, provider="stripe", event_key="evt_1", event_type="x", body=b"{}")
    assert WebhookEvent.objects.count() == 1


def test_partitions_ensure_is_idempotent(partitioned):
    out = io.StringIO()
    call_command("partitions_ensure", "--months", "5", stdout=out)
    first = out.getvalue()
    # The migration made this month and 3 ahead; months 4 and 5 ahead on each of 4 tables.
    assert "partitions created: 8" in first, first
    again = io.StringIO()
    call_command("partitions_ensure", "--months", "5", stdout=again)
    assert again.getvalue().strip() == "partitions created: 0"


def test_row_level_security_still_isolates_tenants_as_the_application_role(partitioned, monkeypatch):
    monkeypatch.setattr("integrations.services.inbox.async_task", lambda *args, **kwargs: None)
    a = tenant_create(slug="acme", name="Acme")
    b = tenant_create(slug="globex", name="Globex")
    for tenant in (a, b):
        credential_set(tenant=tenant, provider="stripe", secret=SECRET)
        ProviderRow.objects.create(
            tenant=tenant, file_id=1, line=1, transaction_id=f"txn_{tenant.slug}", created_at=timezone.now(),
            created_day=1, type="charge", amount_minor=100, fee_minor=3, net_minor=97, currency="EUR")
    rls_apply()
    app_role_apply(role=ROLE)
    assert rls_problems() == [] and app_role_problems(role=ROLE) == []

    with django_as(ROLE):
        client = Client()
        # The real webhook path: ON CONFLICT against the partitioned table's unique key.
        first = _post(client, "acme", _stripe_body("evt_partitioned_1"))
        assert first.status_code == 200 and first.json()["duplicate"] is False, first.content
        again = _post(client, "acme", _stripe_body("evt_partitioned_1"))
        assert (again.json()["duplicate"], again.json()["event"]) == (True, first.json()["event"])
        elsewhere = _post(client, "globex", _stripe_body("evt_partitioned_1"))  # another tenant's key space
        assert elsewhere.json()["duplicate"] is False
        # A worker finds an event's tenant by id alone: the lookup function accepts the
        # widened primary key's leading column.
        assert tenant_for_row(WebhookEvent, first.json()["event"]) == a.pk

    conn = connect_as(ROLE)
    try:
        conn.execute("SELECT set_config('app.tenant_id', %s, true)", [str(a.pk)])
        for table in ("integrations_webhookevent", "reconciliation_providerrow"):
            seen = {row[0] for row in conn.execute(f"SELECT tenant_id FROM {table}")}
            assert seen == {a.pk}, table
        with pytest.raises(psycopg.Error) as refused:  # WITH CHECK: no row for another tenant
            conn.execute("INSERT INTO reconciliation_providerrow (tenant_id, file_id, line, transaction_id, "
                         "created_at, created_day, type, amount_minor, fee_minor, net_minor, currency, charge_id, "
                         "order_reference, payout_id) VALUES (%s, 1, 1, 't', now(), 1, 'charge', 1, 0, 1, "
                         "'EUR', '', '', '')", [b.pk])
        assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE
        conn.rollback()
        with pytest.raises(psycopg.Error) as direct:  # a partition is no way around the policy
            conn.execute("SELECT * FROM integrations_webhookevent_b0")
        assert direct.value.sqlstate == INSUFFICIENT_PRIVILEGE
    finally:
        conn.close()


def test_the_reverse_migration_restores_plain_tables_with_their_rows(partitioned, settings):
    tenant = tenant_create(slug="acme", name="Acme")
    event = WebhookEvent.objects.create(tenant=tenant, provider="stripe", event_key="evt_1", event_type="x",
                                        body=b"{}")
    _migrate("0006", settings=settings, on=False)
    assert set(_relkinds().values()) == {"r"}
    assert _key_columns("integrations_webhookevent", "integrations_webhookevent_pkey") == ["id"]
    assert _key_columns("reconciliation_bankrow", "reconciliation_bankrow_pkey") == ["id"]
    assert WebhookEvent.objects.get(pk=event.pk).event_key == "evt_1"
    later = WebhookEvent.objects.create(tenant=tenant, provider="stripe", event_key="evt_2", event_type="x",
                                        body=b"{}")
    assert later.pk > event.pk
