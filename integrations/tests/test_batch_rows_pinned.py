"""The drain writes the rows it only writes (audit events, transitions, decisions, drafts,
approval requests) from plain dicts (`paypilot.bulk.values_insert`), not model instances
(issue 32). Pinned here: every such row is stored column by column as the per-object path
(`Model(**values)` through `rows_insert`) stores the same values, and a delivery builds no
instance of those models, on SQLite and on PostgreSQL."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from django.db import models, transaction
from django.db.models.signals import post_init

from approvals.models import ApprovalRequest
from decisions import selectors
from decisions import services as decision_services
from decisions.models import DecisionRecord
from decisions.rules import NO_EMAIL_ACTION
from decisions.tests.rule_users import staff_user
from dunning.models import Draft
from integrations.handoff import OUTCOME_DRAFT_OPENED, OUTCOME_NO_EMAIL
from integrations.models import WebhookEvent
from integrations.services import processing, webhook_event_process
from integrations.tests.test_processing_batch import failed, store
from ledger.models import Customer, Invoice, InvoiceTransition
from paypilot import bulk
from paypilot.models import AuditEvent, Tenant
from paypilot.services import rows_insert

pytestmark = pytest.mark.django_db

ONLY_WRITTEN = (AuditEvent, InvoiceTransition, DecisionRecord, Draft, ApprovalRequest)
# Every module that writes the drain's rows through values_insert, by its own name.
WRITERS = ("paypilot.services", "ledger.services.payments", "decisions.services", "dunning.services",
           "approvals.services")


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(processing, "_processed_here", {})
    selectors.rule_table_cache_clear()
    yield
    selectors.rule_table_cache_clear()


def _quiet_card_expired(tenant: Tenant) -> None:
    """An active tenant rule version that writes no email for expired cards (audited as
    `dunning.draft.skipped`), so the batch has both kinds of decision."""
    version = decision_services.rule_version_create(tenant=tenant, user_id=None, note="pinned")
    version.rows.filter(failure_code="card_expired").update(action=NO_EMAIL_ACTION)
    for name in ("alice", "bob"):
        decision_services.rule_version_approve(version=version, user=staff_user(tenant=tenant, username=name))
    selectors.rule_table_cache_clear()


def _deliveries(n: int) -> list[dict[str, Any]]:
    """Failures of distinct invoices: every third an expired card (no email), the rest
    declined for insufficient funds at amounts on both sides of the high-value line."""
    out = []
    for i in range(n):
        payload = failed(i)
        invoice = payload["data"]["object"]
        invoice["amount_due"] = 149900 if i % 2 else 9900
        if i % 3:
            error = invoice["payments"]["data"][0]["payment"]["payment_intent"]["last_payment_error"]
            error.update(code="card_declined", decline_code="insufficient_funds", message="Insufficient funds.")
        out.append(payload)
    return out


def _auto_dates(model: type[models.Model]) -> set[str]:
    return {f.attname for f in model._meta.concrete_fields
            if isinstance(f, models.DateField) and (f.auto_now or f.auto_now_add)}  # type: ignore[attr-defined]


def _stored(model: type[models.Model], ids: Sequence[int]) -> list[dict[str, Any]]:
    """The rows of `ids`, in that order, every column but the id and the auto_now ones."""
    skip = {"id", *_auto_dates(model)}
    rows = {row["id"]: row for row in model._default_manager.filter(pk__in=ids).values()}
    return [{k: v for k, v in rows[pk].items() if k not in skip} for pk in ids]


def _per_object(model: type[models.Model], values: list[dict[str, Any]], replaces: list[int]) -> list[dict[str, Any]]:
    """The same values written the old way (instances through `rows_insert`), read back,
    then rolled back. The drain's own requests are removed first inside the savepoint (one
    request per draft)."""
    sid = transaction.savepoint()
    try:
        if model is ApprovalRequest:
            ApprovalRequest.objects.filter(pk__in=replaces).delete()
        instances = [model(**row) for row in copy.deepcopy(values)]
        rows_insert(instances)
        return _stored(model, [row.pk for row in instances])
    finally:
        transaction.savepoint_rollback(sid)


def test_the_drains_rows_equal_the_per_object_path_column_by_column(stripe_tenant, settings, monkeypatch) -> None:
    settings.PAYPILOT_HIGH_VALUE_ANNUAL = 5000  # major units: some requests high value, some not
    _quiet_card_expired(stripe_tenant)
    calls: list[tuple[type[models.Model], list[dict[str, Any]], list[int]]] = []
    real = bulk.values_insert

    def recording(model: type[models.Model], rows: Sequence[dict[str, Any]]) -> list[int]:
        snapshot = copy.deepcopy(list(rows))  # the services add "id" to their dicts afterwards
        ids = real(model, rows)
        calls.append((model, snapshot, ids))
        return ids

    for module in WRITERS:
        monkeypatch.setattr(f"{module}.values_insert", recording)
    ids = store(stripe_tenant, _deliveries(12))
    assert webhook_event_process(event_id=ids[0]) == "processed"

    outcomes = Counter(WebhookEvent.objects.values_list("outcome", flat=True))
    assert outcomes == {OUTCOME_DRAFT_OPENED: 8, OUTCOME_NO_EMAIL: 4}
    written = Counter(model for model, _, _ in calls)
    assert set(written) == set(ONLY_WRITTEN)
    assert sum(len(got) for model, _, got in calls if model is Draft) == 8
    assert set(ApprovalRequest.objects.values_list("high_value", flat=True)) == {True, False}
    assert AuditEvent.objects.filter(event="dunning.draft.skipped").count() == 4
    for model, values, got in calls:
        drained = _stored(model, got)
        assert drained == _per_object(model, values, got), model.__name__
        for stamp in _auto_dates(model):  # set by the insert, as save() sets them
            assert not model._default_manager.filter(pk__in=got, **{stamp: None}).exists(), model.__name__
    # and the rows hang together as the per-object path linked them
    for approval in ApprovalRequest.objects.select_related("draft__decision", "invoice__customer"):
        draft, decision = approval.draft, approval.draft.decision
        assert decision is not None
        assert (approval.invoice_id, approval.tenant_id) == (draft.invoice_id, draft.tenant_id)
        assert (approval.subject, approval.body, approval.source) == (draft.subject, draft.body, draft.source)
        assert approval.annual_value_minor == decision.annual_value_at_risk_minor
        assert decision.invoice_ref == approval.invoice.external_invoice_id
        created = AuditEvent.objects.get(event="dunning.draft.created", detail__draft=draft.pk)
        assert created.detail == {"draft": draft.pk, "decision": draft.decision_id, "invoice": draft.invoice_id,
                                  "rule_fired": decision.rule_fired, "source": "template",
                                  "fallback_used": False, "locale": draft.locale}


def test_a_delivery_builds_no_instance_of_the_rows_it_only_writes(stripe_tenant) -> None:
    built: Counter[type[models.Model]] = Counter()

    def count(sender: type[models.Model], **kwargs: Any) -> None:
        built[sender] += 1

    ids = store(stripe_tenant, [failed(i) for i in range(20)])
    post_init.connect(count, weak=False)
    try:
        assert webhook_event_process(event_id=ids[0]) == "processed"
    finally:
        post_init.disconnect(count)

    assert WebhookEvent.objects.filter(status="processed").count() == 20
    assert ApprovalRequest.objects.count() == Draft.objects.count() == 20
    assert {model.__name__: built[model] for model in ONLY_WRITTEN} == dict.fromkeys(
        (model.__name__ for model in ONLY_WRITTEN), 0)
    # What is left is read or handed on: the events, their customers and invoices (the
    # pipeline reads them), plus the tenant and its credential once per batch.
    assert (built[WebhookEvent], built[Customer], built[Invoice]) == (20, 20, 20)
    assert sum(built.values()) <= 3 * 20 + 5, built
