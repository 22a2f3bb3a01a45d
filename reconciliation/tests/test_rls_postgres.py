"""Row-level security on the reconciliation tables, as the application role (PostgreSQL only):
a tenant never sees another's files, rows, layouts, contracts, runs or breaks, and imports
and runs work under the policies (temporary tables, unnest inserts)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import psycopg
import pytest
from django.db import connection
from django.test import Client

from paypilot.pg_roles import app_role_apply
from paypilot.rls import rls_apply, rls_problems, tenant_tables
from paypilot.services import tenant_create, token_issue
from reconciliation.models import Run
from reconciliation.services.imports import file_import
from reconciliation.services.runs import run_create
from reconciliation.services.sample import sample_load

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="row-level security is PostgreSQL only")
ROLE = "pp_rec_app_test"
EXPORTS = Path(__file__).resolve().parents[1] / "sample" / "exports"


def _connect(role: str) -> psycopg.Connection:
    s = connection.settings_dict
    return psycopg.connect(host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, dbname=s["NAME"], user=role)


@contextmanager
def django_as(role: str) -> Iterator[None]:
    previous = connection.settings_dict["USER"]
    connection.close()
    connection.settings_dict["USER"] = role
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["USER"] = previous


@pytest.fixture
def two(transactional_db):  # type: ignore[no-untyped-def]
    a, _ = sample_load(actor="test")
    b = tenant_create(slug="bravo", name="Bravo")
    rls_apply()
    app_role_apply(role=ROLE)
    return a, b


def test_every_reconciliation_table_is_under_the_policy(two) -> None:
    tables = {t.table for t in tenant_tables() if t.table.startswith("reconciliation_")}
    assert tables == {"reconciliation_importfile", "reconciliation_layout", "reconciliation_orderrow",
                      "reconciliation_providerrow", "reconciliation_bankrow", "reconciliation_disputerow",
                      "reconciliation_contractversion", "reconciliation_run", "reconciliation_break",
                      "reconciliation_contractproposal"}
    assert rls_problems() == []


def test_the_app_role_sees_only_the_bound_tenants_rows(two) -> None:
    a, b = two
    with _connect(ROLE) as conn:
        for table in ("reconciliation_importfile", "reconciliation_orderrow", "reconciliation_run",
                      "reconciliation_break", "reconciliation_contractversion"):
            conn.execute("SELECT set_config('app.tenant_id', %s, true)", [str(b.pk)])
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
            conn.rollback()
            conn.execute("SELECT set_config('app.tenant_id', %s, true)", [str(a.pk)])
            own = conn.execute(f"SELECT count(*), count(*) FILTER (WHERE tenant_id <> %s) FROM {table}",
                               [a.pk]).fetchone()
            assert own[0] > 0 and own[1] == 0, table
            conn.rollback()
        conn.execute("SELECT set_config('app.tenant_id', %s, true)", [str(b.pk)])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE reconciliation_break SET status = 'resolved'")
            conn.execute("INSERT INTO reconciliation_run (tenant_id, as_of, input_digest, result_json, "
                         "result_sha256, breaks_count, actor, created_at) VALUES (%s, '2026-11-16', 'x', '{}', 'x', "
                         "0, 'x', now())", [a.pk])


def test_imports_and_runs_work_as_the_app_role_and_stay_in_their_tenant(two) -> None:
    a, b = two
    token = token_issue(tenant=b, role="viewer").plaintext  # as the owner: token set-up is not under test
    with django_as(ROLE):
        batch = file_import(tenant=b, kind="provider", filename="r.csv",
                            data=(EXPORTS / "stripe_payout_reconciliation.csv").read_bytes(), actor="test")
        run, created = run_create(tenant=b, as_of=date(2026, 11, 16), actor="test")
        assert batch.rows == 14 and created
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        own = client.get("/recon/review", {"as_of": "2026-11-16"})
        assert own.status_code == 200 and own["X-Recon-Run"] == str(run.pk)
    sample_run = Run.objects.get(tenant=a)
    assert sample_run.pk != run.pk
    # Bravo's review holds only Bravo's captures: no order of the sample tenant leaks in.
    assert '"NW-1005"' in sample_run.result_json and '"NW-1005"' not in own.content.decode()
