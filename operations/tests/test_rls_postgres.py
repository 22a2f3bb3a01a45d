"""Row-level security, connected as the application role (PostgreSQL only; under .ci/run
these run in the PostgreSQL pass)."""

from __future__ import annotations

import json

import psycopg
import pytest
from django.db import connection, transaction
from django.test import Client, RequestFactory

from ledger.models import Customer, Invoice
from operations.tests.conftest import connect_as, django_as, postgres_only
from operations.tests.factories import two_tenants
from paypilot.models import AuditEvent, Tenant
from paypilot.pg_roles import append_only_guards
from paypilot.rls import POLICY_NAME, rls_apply, rls_problems, tenant_tables
from paypilot.services import token_issue
from paypilot.tenancy import (
    TenantContextError,
    _tenant_from_admin_membership,
    current_tenant_id,
    set_current_tenant,
    tenant_context,
    tenant_for_row,
    tenant_task,
)

pytestmark = postgres_only

EXPECTED_AT_LEAST = {
    "paypilot_apitoken", "paypilot_auditevent", "ledger_customer", "ledger_invoice",
    "ledger_invoicetransition", "decisions_decisionrecord", "approvals_adminmembership",
}
INSUFFICIENT_PRIVILEGE = "42501"


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _owner_rows(table: str, column: str) -> dict[int | None, int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_q(column)}, count(*) FROM {_q(table)} GROUP BY 1")
        return dict(cursor.fetchall())


def _set_tenant(conn: psycopg.Connection, tenant_id: int | None) -> None:
    conn.execute("SELECT set_config('app.tenant_id', %s, true)", ["" if tenant_id is None else str(tenant_id)])


def test_every_tenant_table_has_row_security_enabled_and_forced(app_role):
    tables = {t.table for t in tenant_tables()}
    assert EXPECTED_AT_LEAST <= tables
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, p.qual, p.with_check "
            "FROM pg_class c LEFT JOIN pg_policies p ON p.tablename = c.relname AND p.policyname = %s "
            "WHERE c.relname = ANY(%s) AND c.relkind IN ('r', 'p')",  # 'p': PAYPILOT_PARTITIONING
            [POLICY_NAME, sorted(tables)],
        )
        rows = {r[0]: r[1:] for r in cursor.fetchall()}
    assert set(rows) == tables
    for table, (enabled, forced, qual, with_check) in rows.items():
        assert enabled and forced, table
        assert "current_setting('app.tenant_id'" in qual, table
        assert "current_setting('app.tenant_id'" in with_check, table
    assert rls_problems() == []


def test_the_policy_is_evaluated_once_per_statement_not_per_row(app_role, app_conn):
    """Both sides of the policy are InitPlans: the per-row filter compares the tenant column
    with a parameter, and neither current_setting() nor current_user is called per row."""
    a, _ = two_tenants()
    _set_tenant(app_conn, a.tenant.pk)
    for table in ("ledger_invoice", "reconciliation_providerrow", "paypilot_auditevent"):
        plan = "\n".join(row[0] for row in app_conn.execute(f"EXPLAIN (VERBOSE) SELECT * FROM {_q(table)}"))
        filters = [line for line in plan.splitlines() if "Filter:" in line]
        assert "InitPlan" in plan, plan
        assert filters and all("current_setting" not in line and "CURRENT_USER" not in line.upper()
                               for line in filters), plan
    # Same answers as before: the bound tenant's rows, and with none bound, nothing.
    assert app_conn.execute("SELECT DISTINCT tenant_id FROM ledger_invoice").fetchall() == [(a.tenant.pk,)]
    app_conn.rollback()
    assert app_conn.execute("SELECT count(*) FROM ledger_invoice").fetchone()[0] == 0
    app_conn.rollback()


def test_a_policy_of_an_earlier_version_is_replaced_by_rls_apply(app_role):
    """A database migrated under policy v2 (the predicate evaluated per row) gets the
    current policy from the next migrate's rls_apply, and rls_problems names it until then."""
    with connection.cursor() as cursor:
        cursor.execute(f'COMMENT ON POLICY "{POLICY_NAME}" ON ledger_invoice IS %s', ["paypilot rls v2 0"])
    assert any(p.startswith("ledger_invoice: policy") for p in rls_problems())
    assert rls_apply() == ["ledger_invoice"]
    assert rls_problems() == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT qual, with_check FROM pg_policies "
                       "WHERE tablename = 'ledger_invoice' AND policyname = %s", [POLICY_NAME])
        qual, with_check = cursor.fetchone()
    assert "(SELECT (NULLIF(current_setting('app.tenant_id'" in qual.replace("( SELECT", "(SELECT")
    assert qual == with_check


def test_without_a_tenant_every_tenant_table_reads_empty_and_inserts_fail(app_role, app_conn):
    a, b = two_tenants()
    populated = 0
    for table in tenant_tables():
        owner_counts = _owner_rows(table.table, table.column)
        populated += bool(owner_counts)
        count = app_conn.execute(f"SELECT count(*) FROM {_q(table.table)}").fetchone()[0]
        assert count == 0, f"{table.table} shows {count} rows with no tenant set"
        app_conn.rollback()
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT row_to_json(t) FROM {_q(table.table)} t WHERE {_q(table.column)} = %s LIMIT 1",
                [a.tenant.pk],
            )
            row = cursor.fetchone()
        if row is None:
            continue
        with pytest.raises(psycopg.Error) as refused:
            app_conn.execute(
                f"INSERT INTO {_q(table.table)} SELECT * FROM json_populate_record(NULL::{_q(table.table)}, %s)",
                [json.dumps(row[0])],
            )
        assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE, table.table
        app_conn.rollback()
    assert populated >= len(EXPECTED_AT_LEAST)


def test_tenant_a_never_sees_or_touches_tenant_b(app_role, app_conn):
    a, b = two_tenants()
    guards = append_only_guards()
    for table in tenant_tables():
        owner_counts = _owner_rows(table.table, table.column)
        _set_tenant(app_conn, a.tenant.pk)
        seen = dict(
            app_conn.execute(
                f"SELECT {_q(table.column)}, count(*) FROM {_q(table.table)} GROUP BY 1"
            ).fetchall()
        )
        assert seen == ({a.tenant.pk: owner_counts[a.tenant.pk]} if a.tenant.pk in owner_counts else {})
        if not guards.get(table.table, {}).get("update") and not guards.get(table.table, {}).get("delete"):
            moved = app_conn.execute(
                f"UPDATE {_q(table.table)} SET {_q(table.column)} = {_q(table.column)} "
                f"WHERE {_q(table.column)} = %s", [b.tenant.pk],
            ).rowcount
            deleted = app_conn.execute(
                f"DELETE FROM {_q(table.table)} WHERE {_q(table.column)} = %s", [b.tenant.pk]
            ).rowcount
            assert (moved, deleted) == (0, 0), table.table
        app_conn.rollback()
    # Writing a row for B while bound to A is refused by WITH CHECK.
    _set_tenant(app_conn, a.tenant.pk)
    with pytest.raises(psycopg.Error) as refused:
        app_conn.execute(
            "UPDATE ledger_customer SET tenant_id = %s WHERE tenant_id = %s", [b.tenant.pk, a.tenant.pk]
        )
    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE
    app_conn.rollback()
    assert Customer.objects.filter(tenant=b.tenant).count() == 1  # owner view unchanged


def test_a_pooled_connection_reused_from_a_to_b_carries_nothing_over(app_role, app_conn):
    a, b = two_tenants()
    backend_pid = app_conn.info.backend_pid
    _set_tenant(app_conn, a.tenant.pk)
    assert app_conn.execute("SELECT DISTINCT tenant_id FROM ledger_invoice").fetchall() == [(a.tenant.pk,)]
    app_conn.commit()
    # Next transaction on the same server session: nothing bound, nothing visible.
    assert app_conn.execute("SELECT current_setting('app.tenant_id', true)").fetchone()[0] in ("", None)
    assert app_conn.execute("SELECT count(*) FROM ledger_invoice").fetchone()[0] == 0
    app_conn.commit()
    _set_tenant(app_conn, b.tenant.pk)
    assert app_conn.execute("SELECT DISTINCT tenant_id FROM ledger_invoice").fetchall() == [(b.tenant.pk,)]
    app_conn.rollback()
    assert app_conn.info.backend_pid == backend_pid

    # The same through Django's persistent connection and tenant_context().
    with django_as(app_role):
        with tenant_context(a.tenant):
            assert set(Invoice.objects.values_list("tenant_id", flat=True)) == {a.tenant.pk}
            driver_connection = connection.connection
        with transaction.atomic():
            assert Invoice.objects.count() == 0
            assert current_tenant_id() is None
        with tenant_context(b.tenant.pk):
            assert set(Invoice.objects.values_list("tenant_id", flat=True)) == {b.tenant.pk}
        assert connection.connection is driver_connection
        assert Invoice.objects.count() == 0  # autocommit: a fresh transaction, no tenant
        with pytest.raises(TenantContextError):
            set_current_tenant(a.tenant)


def test_update_and_delete_on_append_only_tables_fail_with_42501(app_role, app_conn):
    a, _ = two_tenants()
    guards = append_only_guards()
    assert {"paypilot_auditevent", "ledger_invoicetransition", "decisions_decisionrecord",
            "integrations_webhookevent"} <= set(guards)
    for table in [t for t, g in guards.items() if g["columns"]]:  # fires only on a real row
        _set_tenant(app_conn, a.tenant.pk)
        assert app_conn.execute(f"SELECT count(*) FROM {_q(table)}").fetchone()[0] > 0, table
        app_conn.rollback()
    for table, guard in guards.items():
        statements = []
        if guard["update"]:
            statements.append(f"UPDATE {_q(table)} SET id = id")
        for column in guard["columns"]:
            statements.append(f"UPDATE {_q(table)} SET {_q(column)} = {_q(column)} || 'x'")
        if guard["delete"]:
            statements.append(f"DELETE FROM {_q(table)}")
        for sql in statements:
            _set_tenant(app_conn, a.tenant.pk)
            with pytest.raises(psycopg.Error) as refused:
                app_conn.execute(sql)
            assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE, sql
            app_conn.rollback()
    # The override marker cannot be written by the application role.
    with pytest.raises(psycopg.Error) as refused:
        app_conn.execute("INSERT INTO paypilot_appendonlyoverride (operation, created_at) VALUES ('gdpr_erase', now())")
    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE


def test_application_role_attributes(app_role):
    conn = connect_as(app_role)
    try:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert row == (False, False, False, False)
        with pytest.raises(psycopg.Error):
            conn.execute("ALTER TABLE ledger_invoice DISABLE ROW LEVEL SECURITY")
    finally:
        conn.close()


def test_request_path_binds_the_tenant_under_the_application_role(app_role):
    a, b = two_tenants()
    token_a = token_issue(tenant=a.tenant, role="tenant_admin").plaintext
    owner_prefixes_a = set(a.tenant.tokens.values_list("prefix", flat=True))
    audit_before = AuditEvent.objects.filter(tenant__isnull=True).count()
    with django_as(app_role):
        client = Client()
        listed = client.get("/tokens", HTTP_AUTHORIZATION=f"Bearer {token_a}")
        assert listed.status_code == 200, listed.content
        assert {t["prefix"] for t in listed.json()["tokens"]} == owner_prefixes_a
        bad = client.get("/tokens", HTTP_AUTHORIZATION="Bearer pp_0123456789_nope")
        assert bad.status_code == 401
    # The rejection's platform audit row (no tenant) was written by the application role.
    assert AuditEvent.objects.filter(tenant__isnull=True).count() == audit_before + 1


def test_tasks_and_admin_users_get_their_tenant(app_role):
    a, b = two_tenants()
    invoice_b = b.invoices[0]

    @tenant_task(Invoice)
    def amount_of(invoice_id: int) -> int:
        return Invoice.objects.get(pk=invoice_id).amount_minor

    staff_a = a.tenant.admin_members.get().user
    with django_as(app_role):
        assert amount_of(invoice_b.pk) == invoice_b.amount_minor
        with transaction.atomic():
            assert not Invoice.objects.filter(pk=invoice_b.pk).exists()
            request = RequestFactory().get("/admin/")
            request.user = staff_a
            assert _tenant_from_admin_membership(request, {}) == a.tenant.pk
            assert Tenant.objects.count() >= 2  # the tenant list itself is not tenant data


@pytest.mark.django_db
def test_row_tenant_lookup_answers_from_the_unique_index():
    """paypilot_row_tenant compares in the column's own type: with sequential scans
    disabled for the transaction, the lookup still scans nothing (a column cast to text
    would have to). A value that is not of the column's type finds no row."""
    a, b = two_tenants()
    invoice = b.invoices[0]
    seq_scans = "SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_xact_user_tables WHERE relid = %s::regclass"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(seq_scans, [Invoice._meta.db_table])
        before = cursor.fetchone()[0]
        assert tenant_for_row(Invoice, invoice.pk) == b.tenant.pk
        assert tenant_for_row(Invoice, str(invoice.pk)) == b.tenant.pk
        assert tenant_for_row(Invoice, "not-a-number") is None
        assert tenant_for_row(Invoice, 10**30) is None  # beyond bigint
        cursor.execute(seq_scans, [Invoice._meta.db_table])
        assert cursor.fetchone()[0] == before
