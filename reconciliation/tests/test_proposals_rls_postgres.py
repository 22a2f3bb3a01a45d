"""Contract proposals under row-level security, as the application role (PostgreSQL only): a
proposal is read, checked and confirmed inside its tenant, and another tenant never sees it."""

from __future__ import annotations

from datetime import date

import psycopg
import pytest
from django.db import connection

from paypilot.pg_roles import app_role_apply
from paypilot.rls import rls_apply
from paypilot.services import tenant_create
from reconciliation.models import ContractProposal, ContractVersion
from reconciliation.services.contracts import ContractRefused
from reconciliation.services.proposals import contract_proposal_confirm, contract_proposal_create
from reconciliation.tests.test_rls_postgres import _connect, django_as

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="row-level security is PostgreSQL only")
ROLE = "pp_rec_prop_app_test"
PRICING = b"Cards: 2.9% + 30\xc2\xa2 per successful card charge\nChargeback fee: $15.00\nPayouts: T+2\n"


def test_propose_and_confirm_work_as_the_app_role_and_stay_in_their_tenant(transactional_db) -> None:
    a = tenant_create(slug="alpha", name="Alpha")
    b = tenant_create(slug="bravo", name="Bravo")
    rls_apply()
    app_role_apply(role=ROLE)
    with django_as(ROLE):
        proposal = contract_proposal_create(tenant=a, document=PRICING, filename="p.txt", actor="t")
        assert proposal.confirmable
        with pytest.raises(ContractRefused) as refused:
            contract_proposal_confirm(tenant=b, proposal_id=proposal.pk, effective_from=date(2026, 10, 1), actor="t")
        assert refused.value.reason == "proposal_not_found"
        version = contract_proposal_confirm(tenant=a, proposal_id=proposal.pk, effective_from=date(2026, 10, 1),
                                            actor="t")
        assert version.tenant_id == a.pk
    assert ContractProposal.objects.get().status == "confirmed" and ContractVersion.objects.get().tenant_id == a.pk
    with _connect(ROLE) as conn:
        conn.execute("SELECT set_config('app.tenant_id', %s, true)", [str(b.pk)])
        assert conn.execute("SELECT count(*) FROM reconciliation_contractproposal").fetchone()[0] == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE reconciliation_contractproposal SET confirmable = true")
            conn.execute("INSERT INTO reconciliation_contractproposal (tenant_id, filename, sha256, document_format, "
                         "document_text, source, currency, terms, confirmable, status, actor, created_at, "
                         "confirmed_by) VALUES (%s, 'x', 'x', 'text', 'x', 'rules', 'USD', '{}', true, 'pending', "
                         "'x', now(), '')", [a.pk])
