"""Approval lifecycle services: open, approve, reject, edit, expire, high value."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from approvals.models import ApprovalRequest, DraftEdit
from approvals.services import (
    ApprovalError,
    approval_approve,
    approval_edit,
    approval_expire_stale,
    approval_open,
    approval_reject,
)
from approvals.tests.factories import DraftFactory, UserFactory, finance_user
from dunning.models import Draft
from ledger.tests.factories import CustomerFactory, InvoiceFactory
from paypilot.models import AuditEvent

Status = ApprovalRequest.Status


def test_open_is_idempotent_and_sets_expiry(tenant, settings):
    draft = DraftFactory(tenant=tenant)
    before = timezone.now()
    first = approval_open(draft=draft)
    assert approval_open(draft=draft).pk == first.pk
    assert ApprovalRequest.objects.count() == 1
    assert first.status == Status.PENDING
    assert (first.subject, first.body) == (draft.subject, draft.body)
    ttl = timedelta(hours=settings.PAYPILOT_APPROVAL_TTL_HOURS)
    assert before + ttl <= first.expires_at <= timezone.now() + ttl


def test_open_copies_each_drafts_source_onto_its_request(tenant):
    """The console's "template or LLM" filter reads the request's own copy of the source."""
    from approvals.services import approvals_open

    template = DraftFactory(tenant=tenant, source=Draft.Source.TEMPLATE)
    llm = DraftFactory(tenant=tenant, source=Draft.Source.LLM)
    single = DraftFactory(tenant=tenant, source=Draft.Source.LLM)

    approvals_open(drafts=[template, llm])
    approval_open(draft=single)

    stored = dict(ApprovalRequest.objects.values_list("draft_id", "source"))
    assert stored == {template.pk: "template", llm.pk: "llm", single.pk: "llm"}


def test_open_many_returns_existing_requests_and_creates_the_rest_in_order(tenant):
    from approvals.services import approvals_open

    drafts = [DraftFactory(tenant=tenant) for _ in range(3)]
    existing = approval_open(draft=drafts[1])

    opened = approvals_open(drafts=drafts)

    assert [a.draft_id for a in opened] == [d.pk for d in drafts]
    assert opened[1].pk == existing.pk
    assert ApprovalRequest.objects.count() == 3
    assert all(a.pk is not None and a.invoice_id == d.invoice_id for a, d in zip(opened, drafts, strict=True))


def test_open_many_when_another_worker_opened_one_meanwhile(tenant, monkeypatch):
    """The INSERT of the batch loses to a request opened between the read and the write:
    every draft still gets exactly one request, the winner's where there is one."""
    from approvals import services
    from approvals.services import approvals_open

    drafts = [DraftFactory(tenant=tenant) for _ in range(3)]
    read = services._invoices_with_customers
    raced: list[ApprovalRequest] = []

    def concurrent_open(missing):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(services, "_invoices_with_customers", read)  # only once
        raced.append(approval_open(draft=drafts[2]))  # the other worker commits first
        return read(missing)

    monkeypatch.setattr(services, "_invoices_with_customers", concurrent_open)
    opened = approvals_open(drafts=drafts)

    assert [a.draft_id for a in opened] == [d.pk for d in drafts]
    assert opened[2].pk == raced[0].pk
    assert ApprovalRequest.objects.count() == 3


def test_open_refuses_a_draft_without_invoice(tenant):
    draft = DraftFactory(tenant=tenant, invoice=None)
    with pytest.raises(ApprovalError) as caught:
        approval_open(draft=draft)
    assert caught.value.code == "draft_without_invoice"


def test_repeat_approve_is_a_noop_and_opposite_is_refused(tenant, approver, make_approval):
    approval = make_approval(tenant)
    assert approval_approve(approval=approval, user=approver) == "approved"
    assert approval_approve(approval=approval, user=approver) == "already_approved"
    with pytest.raises(ApprovalError) as caught:
        approval_reject(approval=approval, user=approver)
    assert caught.value.code == "not_pending"
    assert AuditEvent.objects.filter(event__startswith="approvals.draft.").count() == 1


def test_approving_after_expiry_expires_it(tenant, approver, make_approval):
    approval = make_approval(tenant)
    with pytest.raises(ApprovalError) as caught:
        approval_approve(approval=approval, user=approver, now=approval.expires_at + timedelta(seconds=1))
    assert caught.value.code == "approval_expired"
    approval.refresh_from_db()
    assert approval.status == Status.EXPIRED
    assert AuditEvent.objects.filter(event="approvals.draft.expired").count() == 1
    assert mail.outbox == []


def test_expire_stale_only_touches_overdue_pending(tenant, approver, make_approval):
    overdue, fresh, decided = make_approval(tenant), make_approval(tenant), make_approval(tenant)
    approval_reject(approval=decided, user=approver)
    ApprovalRequest.objects.filter(pk__in=[overdue.pk, decided.pk]).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    assert approval_expire_stale() == 1
    assert approval_expire_stale() == 0
    statuses = {a.pk: ApprovalRequest.objects.get(pk=a.pk).status for a in (overdue, fresh, decided)}
    assert statuses == {overdue.pk: "expired", fresh.pk: "pending", decided.pk: "rejected"}


def test_user_without_permission_or_of_other_tenant_is_refused(tenant, other_tenant, make_approval):
    approval = make_approval(tenant)
    stranger = finance_user(tenant=other_tenant)
    plain_staff = UserFactory()
    for user in (stranger, plain_staff):
        with pytest.raises(ApprovalError) as caught:
            approval_approve(approval=approval, user=user)
        assert caught.value.code == "forbidden"
    approval.refresh_from_db()
    assert approval.status == Status.PENDING


def test_platform_admin_may_decide_anywhere(tenant, make_approval, sending_on):
    admin = UserFactory(is_superuser=True)
    assert approval_approve(approval=make_approval(tenant), user=admin) == "approved"


@pytest.fixture
def high_value(settings, sending_on):  # type: ignore[no-untyped-def]
    settings.PAYPILOT_HIGH_VALUE_ANNUAL = 1000  # major units


def _high_value_approval(tenant):  # type: ignore[no-untyped-def]
    customer = CustomerFactory(tenant=tenant, mrr_minor=10_000)  # 100.00/month -> 1,200/year
    invoice = InvoiceFactory(tenant=tenant, customer=customer, amount_minor=10_000)
    return approval_open(draft=DraftFactory(tenant=tenant, invoice=invoice, decision=None))


def test_high_value_needs_two_different_approvers(tenant, approver, high_value):
    approval = _high_value_approval(tenant)
    assert approval.high_value and approval.annual_value_minor == 120_000
    assert approval_approve(approval=approval, user=approver) == "first_approval"
    assert approval.status == Status.PENDING and mail.outbox == []
    with pytest.raises(ApprovalError) as caught:
        approval_approve(approval=approval, user=approver)
    assert caught.value.code == "second_approver_required"
    second = finance_user(tenant=tenant)
    assert approval_approve(approval=approval, user=second) == "approved"
    assert approval.decided_by_id == second.pk and approval.first_approver_id == approver.pk
    assert len(mail.outbox) == 1
    events = list(
        AuditEvent.objects.filter(event__startswith="approvals.draft.").order_by("id")
        .values_list("event", flat=True)
    )
    assert events == ["approvals.draft.first_approval", "approvals.draft.approved"]


def test_below_threshold_needs_one(tenant, approver, high_value):
    invoice = InvoiceFactory(tenant=tenant, customer=CustomerFactory(tenant=tenant, mrr_minor=5_000))
    approval = approval_open(draft=DraftFactory(tenant=tenant, invoice=invoice, decision=None))
    assert not approval.high_value
    assert approval_approve(approval=approval, user=approver) == "approved"


def test_decision_figure_wins_for_annual_value(tenant, high_value):
    approval = approval_open(draft=DraftFactory(tenant=tenant, decision__annual_value_at_risk_minor=500_000))
    assert approval.annual_value_minor == 500_000 and approval.high_value


def test_high_value_rejection_needs_one(tenant, approver, high_value):
    approval = _high_value_approval(tenant)
    assert approval_reject(approval=approval, user=approver) == "rejected"


def test_edit_is_recorded_and_used(tenant, approver, make_approval, sending_on):
    approval = make_approval(tenant)
    original = approval.body
    edit = approval_edit(approval=approval, user=approver, subject="A gentle reminder",
                         body="Hello, the payment did not go through. Thanks.")
    assert isinstance(edit, DraftEdit)
    assert (edit.subject_before, edit.body_before) == (approval.draft.subject, original)
    assert edit.editor == f"user:{approver.pk}"
    approval.refresh_from_db()
    assert approval.edited and approval.subject == "A gentle reminder"
    approval.draft.refresh_from_db()
    assert approval.draft.body == original  # the pipeline's draft is untouched
    assert approval_edit(approval=approval, user=approver, subject="A gentle reminder",
                         body="Hello, the payment did not go through. Thanks.") is None
    approval_approve(approval=approval, user=approver)
    assert mail.outbox[0].subject == "A gentle reminder"
    assert mail.outbox[0].body.startswith("Hello, the payment did not go through.")
    event = AuditEvent.objects.get(event="approvals.draft.approved")
    assert event.detail["edited"] is True
    assert AuditEvent.objects.filter(event="approvals.draft.edited").count() == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("Pay at https://evil.example/now", "link_host_not_allowed"),
        ("Your key is sk_live_4eC39HqLyjWDarjtT1zdp7dc", "secret_shaped_token"),
        ("Card 4242 4242 4242 4242 failed", "card_like_digits"),
        ("Hello {name}, pay up", "leftover_placeholder"),
        ("   ", "empty_copy"),
    ],
)
def test_edit_reruns_the_guards(tenant, approver, make_approval, body, reason):
    approval = make_approval(tenant)
    with pytest.raises(ApprovalError) as caught:
        approval_edit(approval=approval, user=approver, subject="Subject", body=body)
    assert caught.value.code == "guard_refused" and reason in caught.value.reasons
    approval.refresh_from_db()
    assert not approval.edited and not DraftEdit.objects.exists()


def test_edit_clears_a_first_high_value_approval(tenant, approver, high_value):
    approval = _high_value_approval(tenant)
    approval_approve(approval=approval, user=approver)
    second = finance_user(tenant=tenant)
    approval_edit(approval=approval, user=second, subject="Changed", body="Changed body text.")
    # The first approver said yes to other words: the editor's approval is now the first.
    assert approval_approve(approval=approval, user=second) == "first_approval"
    assert approval_approve(approval=approval, user=approver) == "approved"


def test_edit_of_decided_request_is_refused(tenant, approver, make_approval):
    approval = make_approval(tenant)
    approval_reject(approval=approval, user=approver)
    with pytest.raises(ApprovalError) as caught:
        approval_edit(approval=approval, user=approver, subject="S", body="Body text.")
    assert caught.value.code == "not_pending"


def test_redis_broker_enqueues_only_on_commit(tenant, approver, make_approval, settings, monkeypatch,
                                              django_capture_on_commit_callbacks):
    queued: list[int] = []
    monkeypatch.setattr("django_q.tasks.async_task", lambda func, approval_id: queued.append(approval_id))
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": "redis://127.0.0.1:6379/0", "sync": False}
    approval = make_approval(tenant)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        approval_approve(approval=approval, user=approver)
        assert queued == []  # nothing pushed while the transaction is open
    assert len(callbacks) == 1 and queued == [approval.pk]
