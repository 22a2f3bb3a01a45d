"""The console at scale: filter choices from fixed tables, no COUNT or DISTINCT, deep pages
read over the ordering index, search on indexed prefixes."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from approvals.admin.console import ApprovalRequestAdmin
from approvals.models import ApprovalRequest
from decisions.rules import CHURN_RISKS, RULES
from dunning.catalogue import catalogue

QUEUE = reverse("admin:approvals_approvalrequest_changelist")
COUNT_OR_DISTINCT = re.compile(r"\bCOUNT\s*\(|\bDISTINCT\b", re.IGNORECASE)


@pytest.fixture
def logged_in(client, approver):  # type: ignore[no-untyped-def]
    client.force_login(approver)
    return client


def _choices(response, title: str) -> list[str]:  # type: ignore[no-untyped-def]
    [spec] = [s for s in response.context["cl"].filter_specs if s.title == title]
    return [value for value, _ in spec.lookup_choices]


def test_filter_choices_come_from_the_fixed_tables_not_the_rows(logged_in, tenant, make_approval):
    approval = make_approval(tenant)
    # A value only the rows know (say an old locale) is not offered; every rule and risk is,
    # although the one request has a single rule and risk.
    approval.draft.locale = "xx-OLD"
    approval.draft.save(update_fields=["locale"])
    response = logged_in.get(QUEUE)
    assert _choices(response, "locale") == catalogue().available_locales()
    assert _choices(response, "risk") == list(CHURN_RISKS)
    assert _choices(response, "rule fired") == sorted(RULES)
    assert _choices(response, "template or LLM") == ["template", "llm"]


@pytest.mark.parametrize("params", [{}, {"queue": "all"}, {"queue": "all", "p": 2}, {"risk": "low"},
                                    {"rule": "card_expired"}, {"locale": "en"}, {"source": "template"},
                                    {"high_value__exact": "0"}, {"queue": "all", "q": "in_"}])
def test_the_queue_never_counts_or_lists_distinct_values(logged_in, tenant, make_approval, params):
    for _ in range(3):
        make_approval(tenant)
    with CaptureQueriesContext(connection) as queries:
        response = logged_in.get(QUEUE, params)
    assert response.status_code == 200
    assert [q["sql"] for q in queries if COUNT_OR_DISTINCT.search(q["sql"])] == []


def test_deep_pages_return_the_right_rows_in_expiry_order(logged_in, tenant, make_approval, monkeypatch):
    monkeypatch.setattr(ApprovalRequestAdmin, "list_per_page", 3)
    approvals = [make_approval(tenant) for _ in range(8)]
    # Expiry order differs from creation order, with a tie broken by id.
    base = approvals[0].expires_at
    for i, approval in enumerate(approvals):
        approval.expires_at = base + timedelta(minutes=(7 - i) // 2)
        approval.save(update_fields=["expires_at"])
    expected = list(ApprovalRequest.objects.order_by("expires_at", "id").values_list("pk", flat=True))
    assert expected != [a.pk for a in approvals]

    pages = []
    for page in (1, 2, 3):
        cl = logged_in.get(QUEUE, {"queue": "all", "p": page}).context["cl"]
        pages.append([a.pk for a in cl.result_list])
    assert pages == [expected[0:3], expected[3:6], expected[6:8]]
    html = logged_in.get(QUEUE, {"queue": "all", "p": 2}).content.decode()
    assert "more than 6 approval requests (not counted)" in html


def test_search_matches_the_start_of_ids_emails_and_names(logged_in, tenant, make_approval):
    approval = make_approval(tenant)
    other = make_approval(tenant)
    invoice, customer = approval.invoice, approval.invoice.customer

    def found(term: str) -> set[int]:
        return {a.pk for a in logged_in.get(QUEUE, {"queue": "all", "q": term}).context["cl"].result_list}

    assert found(invoice.external_invoice_id) == {approval.pk}
    assert found(customer.email) == {approval.pk}
    assert found(customer.email[:5]) >= {approval.pk}
    assert found(customer.name) == {approval.pk}
    assert found(customer.external_id) == {approval.pk}
    assert found(customer.email[3:]) == set()  # the middle of an address: not a prefix
    assert other.pk not in found(invoice.external_invoice_id)
    assert "Search matches the start" in logged_in.get(QUEUE).content.decode()


def test_search_never_reaches_another_tenant(logged_in, tenant, other_tenant, make_approval):
    theirs = make_approval(other_tenant)
    cl = logged_in.get(QUEUE, {"queue": "all", "q": theirs.invoice.external_invoice_id}).context["cl"]
    assert list(cl.result_list) == []


def test_a_page_past_the_end_redirects_like_the_stock_admin(logged_in, tenant, make_approval):
    make_approval(tenant)
    response = logged_in.get(QUEUE, {"queue": "all", "p": 99})
    assert response.status_code == 302 and "e=1" in response["Location"]


@pytest.mark.parametrize("params", [{"source": "llm"}, {"queue": "all", "source": "llm"}])
def test_the_source_filter_reads_the_requests_own_column_not_the_draft(logged_in, tenant, make_approval, params):
    """`?source=llm` lists only the requests of LLM drafts, and its WHERE is the request's
    copy of the source (an index range), not a join from every request to its draft."""
    make_approval(tenant)  # a template draft's request
    llm = make_approval(tenant, source="llm")
    with CaptureQueriesContext(connection) as queries:
        cl = logged_in.get(QUEUE, params).context["cl"]
    assert [a.pk for a in cl.result_list] == [llm.pk]
    listing = [q["sql"] for q in queries if q["sql"].startswith('SELECT "approvals_approvalrequest"."id"')]
    window = [sql for sql in listing if ' AS "pk" FROM ' in sql]
    assert window and all(" JOIN " not in sql for sql in window)  # the page's ids: no join at all
    for sql in listing:  # the rows' query joins the draft for its columns, never to filter
        where = sql.split(" WHERE ", 1)[1]
        assert '"approvals_approvalrequest"."source" = ' in where and "dunning_draft" not in where
