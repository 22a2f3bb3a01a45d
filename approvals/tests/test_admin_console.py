"""The console in the Django admin: queue, review, single and bulk decisions, edits,
tenant isolation."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core import mail
from django.urls import reverse

from approvals.models import AdminMembership, ApprovalRequest, DraftEdit
from approvals.tests.factories import FINANCE_GROUP, UserFactory, finance_group, finance_user
from ledger.models import Invoice
from paypilot.models import AuditEvent

QUEUE = reverse("admin:approvals_approvalrequest_changelist")


def _review(pk: int) -> str:
    return reverse("admin:approvals_approvalrequest_change", args=[pk])


@pytest.fixture
def logged_in(client, approver):  # type: ignore[no-untyped-def]
    client.force_login(approver)
    return client


def test_finance_group_holds_the_approve_permission(db):
    group = Group.objects.get(name=FINANCE_GROUP)  # made by the data migration, not the test
    codenames = set(group.permissions.values_list("codename", flat=True))
    assert {"approve_approvalrequest", "view_approvalrequest", "view_suppressedsend"} <= codenames


def test_queue_lists_pending_with_the_facts(logged_in, tenant, make_approval):
    pending = make_approval(tenant)
    response = logged_in.get(QUEUE)
    assert response.status_code == 200
    html = response.content.decode()
    invoice, customer = pending.invoice, pending.invoice.customer
    for fact in (customer.name, customer.email, "49.00 USD", "card_expired", "low", "template",
                 pending.subject):
        assert fact in html
    assert "Approve selected drafts" in html and "Reject selected drafts" in html
    assert invoice.external_invoice_id  # searchable below
    found = logged_in.get(QUEUE, {"q": invoice.external_invoice_id})
    assert pending.subject in found.content.decode()


def test_queue_defaults_to_pending_and_filters(logged_in, tenant, approver, make_approval):
    from approvals.services import approval_reject

    pending, rejected = make_approval(tenant), make_approval(tenant, subject="Rejected one")
    approval_reject(approval=rejected, user=approver)
    assert "Rejected one" not in logged_in.get(QUEUE).content.decode()
    assert "Rejected one" in logged_in.get(QUEUE, {"queue": "rejected"}).content.decode()
    assert "Rejected one" in logged_in.get(QUEUE, {"queue": "all"}).content.decode()
    llm_only = logged_in.get(QUEUE, {"source": "llm"}).content.decode()
    assert pending.subject not in llm_only


def test_review_page_shows_the_rendered_email(logged_in, tenant, make_approval, settings):
    settings.PAYPILOT_AI_DISCLOSURE = "Drafted with AI, reviewed by a person."
    approval = make_approval(tenant, source="llm")
    html = logged_in.get(_review(approval.pk)).content.decode()
    assert approval.subject in html
    assert "your last payment failed" in html
    assert settings.PAYPILOT_PUBLIC_BASE_URL.rstrip("/") + "/r/" in html
    assert "Drafted with AI, reviewed by a person." in html
    assert 'data-code="card_expired">Card expired<' in html and "LLM" in html
    # sending is off in tests: the button and the banner say the approval is a dry run
    assert "Approve (dry run: sending is off)" in html and 'id="pp-sending-off"' in html
    settings.PAYPILOT_SEND_EMAIL = True
    html = logged_in.get(_review(approval.pk)).content.decode()
    assert "Approve and send" in html and 'id="pp-sending-off"' not in html


def test_single_approve_sends_and_moves_to_next(logged_in, tenant, make_approval, sending_on):
    first, second = make_approval(tenant), make_approval(tenant)
    response = logged_in.post(reverse("admin:approvals_approvalrequest_approve", args=[first.pk]),
                              {"note": "looks right"})
    assert response.status_code == 302 and response["Location"] == _review(second.pk)
    first.refresh_from_db()
    assert first.status == "approved" and first.note == "looks right"
    assert len(mail.outbox) == 1
    assert Invoice.objects.get(pk=first.invoice_id).state == Invoice.State.MESSAGED


def test_single_reject(logged_in, tenant, make_approval, sending_on):
    approval = make_approval(tenant)
    response = logged_in.post(reverse("admin:approvals_approvalrequest_reject", args=[approval.pk]))
    assert response.status_code == 302 and response["Location"] == QUEUE
    approval.refresh_from_db()
    assert approval.status == "rejected" and mail.outbox == []


def test_approve_needs_post(logged_in, tenant, make_approval):
    approval = make_approval(tenant)
    assert logged_in.get(reverse("admin:approvals_approvalrequest_approve", args=[approval.pk])).status_code == 405


def test_bulk_approve_confirms_first(logged_in, tenant, make_approval, sending_on):
    approvals = [make_approval(tenant) for _ in range(3)]
    ids = [str(a.pk) for a in approvals[:2]]
    data = {"action": "approve_selected", "_selected_action": ids}
    page = logged_in.post(QUEUE, data)
    assert page.status_code == 200
    assert "Yes, approve 2 drafts" in page.content.decode()
    assert ApprovalRequest.objects.filter(status="pending").count() == 3 and mail.outbox == []

    done = logged_in.post(QUEUE, {**data, "post": "yes"})
    assert done.status_code == 302
    statuses = [ApprovalRequest.objects.get(pk=a.pk).status for a in approvals]
    assert statuses == ["approved", "approved", "pending"]
    assert len(mail.outbox) == 2
    assert AuditEvent.objects.filter(event="approvals.draft.approved").count() == 2


def test_bulk_reject(logged_in, tenant, make_approval, sending_on):
    approvals = [make_approval(tenant) for _ in range(2)]
    data = {"action": "reject_selected", "_selected_action": [str(a.pk) for a in approvals], "post": "yes"}
    logged_in.post(QUEUE, data)
    assert {ApprovalRequest.objects.get(pk=a.pk).status for a in approvals} == {"rejected"}
    assert mail.outbox == []


def test_viewer_without_approve_permission_gets_no_actions(client, tenant, make_approval):
    from django.contrib.auth.models import Permission

    viewer = UserFactory()
    viewer.user_permissions.add(Permission.objects.get(codename="view_approvalrequest"))
    AdminMembership.objects.create(user=viewer, tenant=tenant)
    client.force_login(viewer)
    approval = make_approval(tenant)
    assert "Approve selected drafts" not in client.get(QUEUE).content.decode()
    response = client.post(reverse("admin:approvals_approvalrequest_approve", args=[approval.pk]))
    assert response.status_code == 403
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_edit_then_approve(logged_in, tenant, make_approval, sending_on):
    approval = make_approval(tenant)
    url = reverse("admin:approvals_approvalrequest_edit", args=[approval.pk])
    assert approval.body in logged_in.get(url).content.decode()
    response = logged_in.post(url, {"subject": "Quick note about your payment",
                                    "body": "Hi, the card on file expired. Thanks!", "_approve": "1"})
    assert response.status_code == 302
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.edited
    assert DraftEdit.objects.filter(approval=approval).count() == 1
    assert mail.outbox[0].subject == "Quick note about your payment"


def test_edit_refused_by_guards_shows_reasons(logged_in, tenant, make_approval):
    approval = make_approval(tenant)
    url = reverse("admin:approvals_approvalrequest_edit", args=[approval.pk])
    response = logged_in.post(url, {"subject": "Pay", "body": "Go to http://evil.example now", "_approve": "1"})
    assert response.status_code == 200
    assert "link_host_not_allowed" in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == "pending" and not approval.edited


def test_high_value_second_approver_in_admin(client, tenant, approver, make_approval, sending_on, settings):
    settings.PAYPILOT_HIGH_VALUE_ANNUAL = 10  # 10.00 USD a year: everything is high value
    approval = make_approval(tenant)
    client.force_login(approver)
    url = reverse("admin:approvals_approvalrequest_approve", args=[approval.pk])
    client.post(url)
    client.post(url)  # the same person again: refused
    approval.refresh_from_db()
    assert approval.status == "pending" and mail.outbox == []
    client.force_login(finance_user(tenant=tenant))
    client.post(url)
    approval.refresh_from_db()
    assert approval.status == "approved" and len(mail.outbox) == 1


# --- tenant isolation ---------------------------------------------------------------------

def test_tenant_a_approver_cannot_see_or_approve_tenant_b(client, tenant, other_tenant, make_approval, sending_on):
    mine = make_approval(tenant, subject="Acme draft")
    theirs = make_approval(other_tenant, subject="Globex draft")
    client.force_login(finance_user(tenant=tenant))

    queue = client.get(QUEUE, {"queue": "all"}).content.decode()
    assert "Acme draft" in queue and "Globex draft" not in queue
    assert client.get(QUEUE, {"q": theirs.invoice.external_invoice_id}).content.decode().count("Globex draft") == 0

    for url in (
        _review(theirs.pk),
        reverse("admin:approvals_approvalrequest_edit", args=[theirs.pk]),
    ):
        assert client.get(url).status_code == 404
    for name in ("approve", "reject"):
        url = reverse(f"admin:approvals_approvalrequest_{name}", args=[theirs.pk])
        assert client.post(url).status_code == 404
    # A bulk action naming their id does nothing to it either.
    client.post(QUEUE, {"action": "approve_selected", "_selected_action": [str(theirs.pk)], "post": "yes"})
    theirs.refresh_from_db()
    assert theirs.status == "pending" and mail.outbox == []
    # Missing and foreign ids answer alike; the foreign attempt is audited.
    assert client.get(_review(999999)).status_code == 404
    assert AuditEvent.objects.filter(event="paypilot.admin.cross_tenant").exists()
    assert client.get(_review(mine.pk)).status_code == 200


def test_staff_without_membership_sees_nothing(client, tenant, make_approval):
    user = UserFactory()
    user.groups.add(finance_group())
    client.force_login(user)
    approval = make_approval(tenant)
    assert approval.subject not in client.get(QUEUE, {"queue": "all"}).content.decode()
    assert client.get(_review(approval.pk)).status_code == 404


def test_platform_admin_sees_every_tenant(client, tenant, other_tenant, make_approval):
    make_approval(tenant, subject="Acme draft")
    make_approval(other_tenant, subject="Globex draft")
    client.force_login(UserFactory(is_superuser=True))
    queue = client.get(QUEUE).content.decode()
    assert "Acme draft" in queue and "Globex draft" in queue


def test_membership_admin_is_platform_only(logged_in):
    assert logged_in.get(reverse("admin:approvals_adminmembership_changelist")).status_code == 403


def test_refusal_review_page(logged_in, tenant, other_tenant, make_approval, sending_on):
    from approvals.sending import send_approved

    refused = make_approval(tenant)
    send_approved(approval_id=refused.pk)  # pending: not_approved
    send_approved(approval_id=make_approval(other_tenant).pk)
    html = logged_in.get(reverse("admin:approvals_refusal_review")).content.decode()
    # words first, the code in the tooltip
    assert 'data-code="not_approved">Not approved<' in html and 'title="suppressed_sends"' in html
    assert "Sends stopped by a gate" in html and "suppressed_id=" not in html
    # links to the draft, its invoice and its customer
    assert f'href="{_review(refused.pk)}"' in html
    assert f'href="{reverse("admin:ledger_invoice_change", args=[refused.invoice_id])}"' in html
    assert f'href="{reverse("admin:ledger_customer_change", args=[refused.invoice.customer_id])}"' in html
    assert html.count("<td>acme</td>") == 1 and "globex" not in html
