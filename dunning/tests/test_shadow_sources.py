"""The shadow replay's lookups that dunning registers (decisions imports no dunning model)."""

from __future__ import annotations

import pytest

from decisions.models import DecisionRecord
from dunning.apps import _draft_invoice_currency, _draft_stored

pytestmark = pytest.mark.django_db


def _subquery_sql(expression) -> str:  # type: ignore[no-untyped-def]
    sql = str(DecisionRecord.objects.annotate(looked_up=expression).query)
    return sql.split('FROM "dunning_draft"', 1)[1]


def test_draft_currency_lookup_has_no_order_by() -> None:
    # With ORDER BY pk and LIMIT 1, PostgreSQL walked every draft's primary key per decision
    # row (over 18 minutes at 1M decisions) instead of the decision_id index.
    assert "ORDER BY" not in _subquery_sql(_draft_invoice_currency())
    assert '"decision_id"' in _subquery_sql(_draft_invoice_currency())


def test_draft_stored_lookup_reads_by_decision() -> None:
    assert '"decision_id"' in _subquery_sql(_draft_stored())
