"""Rows read and changed by long key lists in plain SQL read and change exactly as the ORM would."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from integrations.models import WebhookEvent
from ledger.models import Customer, Invoice
from operations import keyed_sql
from operations.tests.factories import person, populate_tenant
from paypilot.db import append_only_override
from paypilot.services import tenant_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def populated():
    tenant = tenant_create(slug="keyed", name="Keyed")
    return populate_tenant(tenant, person("keyed"), invoices=5)


def test_rows_read_as_values_gives_them(populated) -> None:
    """Dates, JSON and bytes come back converted as `values()` converts them, in key order,
    across chunk boundaries."""
    for model in (Customer, Invoice, WebhookEvent):
        keys = list(model.objects.values_list("pk", flat=True))
        assert keys, model
        expected = list(model.objects.filter(pk__in=keys).order_by("pk").values())
        got = []
        for size in (1, 2, len(keys)):
            chunks = keyed_sql.chunked(sorted(keys), size)
            got = [row for chunk in chunks for row in keyed_sql.rows_by_pk(model, chunk)]
            assert got == expected, (model, size)
        named = list(keyed_sql.rows_by_pk(model, set(keys), ["tenant_id"]))
        assert named == list(model.objects.filter(pk__in=keys).order_by("pk").values("pk", "tenant_id"))


def test_keys_where_matches_any_column_and_condition(populated) -> None:
    ids = [i.external_invoice_id for i in populated.invoices]
    found = {pk for (pk,) in keyed_sql.keys_where(Invoice, "external_invoice_id", ids)}
    assert found == {i.pk for i in populated.invoices}
    where = keyed_sql.tenant_where(Invoice)
    assert not list(keyed_sql.keys_where(Invoice, "external_invoice_id", ids, where=where, params=[-1]))
    assert list(keyed_sql.keys_where(Invoice, "external_invoice_id", [])) == []


def test_update_sets_text_json_and_bytes_per_row(populated) -> None:
    customer = populated.customer
    events = list(WebhookEvent.objects.filter(tenant=populated.tenant).order_by("pk")[:2])
    assert events
    fields = [Customer._meta.get_field(n) for n in ("name", "payment_history")]
    keyed_sql.update_by_pk(Customer, fields, [(customer.pk, ["", [{"status": "failed"}]])])
    customer.refresh_from_db()
    assert (customer.name, customer.payment_history) == ("", [{"status": "failed"}])
    body = WebhookEvent._meta.get_field("body")
    with append_only_override("gdpr_erase"):  # a stored body changes only under erasure
        keyed_sql.update_by_pk(WebhookEvent, [body], [(e.pk, [f'{{"n":{n}}}'.encode()]) for n, e in enumerate(events)])
    assert [bytes(e.body) for e in WebhookEvent.objects.filter(pk__in=[e.pk for e in events]).order_by("pk")] == [
        f'{{"n":{n}}}'.encode() for n in range(len(events))
    ]


def test_update_refuses_a_value_too_long_for_its_column(populated) -> None:
    """The set-based update casts to text, not to varchar(n): an over-long value is refused as
    an assignment refuses it (on PostgreSQL), never cut short in silence."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite does not enforce a varchar length")
    field = Customer._meta.get_field("external_id")
    with pytest.raises(DatabaseError), transaction.atomic():
        keyed_sql.update_by_pk(Customer, [field], [(populated.customer.pk, ["x" * (field.max_length + 5)])])
    populated.customer.refresh_from_db()
    assert populated.customer.external_id == person("keyed").external_id
