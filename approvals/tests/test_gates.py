"""One test per send gate: the refusal, its gate and its reason code, and nothing sent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from approvals import gates
from approvals.models import ApprovalRequest, EmailSend, SuppressedSend
from approvals.sending import send_approved
from approvals.services import approval_approve, approval_expire_stale
from ledger.models import Invoice
from ledger.tests.factories import CustomerFactory, InvoiceFactory
from paypilot.services import tenant_set_status


def _refused(approval: ApprovalRequest, reason: str, *, dry_run: bool = False) -> SuppressedSend:
    result = send_approved(approval_id=approval.pk)
    assert result.outcome == ("dry_run" if dry_run else "suppressed")
    assert result.reason == reason
    row = SuppressedSend.objects.filter(approval=approval).latest("id")
    assert (row.gate, row.reason, row.dry_run) == (gates.REASON_GATES[reason], reason, dry_run)
    assert mail.outbox == []
    assert not EmailSend.objects.filter(approval=approval).exists()
    assert Invoice.objects.get(pk=approval.invoice_id).state == Invoice.State.FAILED
    return row


@pytest.fixture
def approved(tenant, approver, make_approval, sending_on, monkeypatch):  # type: ignore[no-untyped-def]
    """An approved draft whose send has not run yet; each test changes one thing, then sends."""

    def _make(**draft_fields):  # type: ignore[no-untyped-def]
        approval = make_approval(tenant, **draft_fields)
        with monkeypatch.context() as patch:
            patch.setattr("approvals.services.send_enqueue", lambda **kwargs: None)
            approval_approve(approval=approval, user=approver)
        approval.refresh_from_db()
        return approval

    return _make


def test_gate_order_is_the_documented_one():
    assert [g.reason for g in gates.SEND_GATES] == [
        "tenant_inactive", "invoice_closed", "holdout_arm", "not_approved", "approval_expired",
        "sending_disabled", "no_recipient", "recipient_not_allowlisted", "max_touches_reached",
        "cooldown_active", "link_scheme_not_allowed", "link_host_not_allowed", "secret_shaped_text",
        "output_guard_refused",
    ]
    assert len(gates.REASON_GATES) == len(gates.SEND_GATES)


def test_tenant_inactive(tenant, approved):
    approval = approved()
    tenant_set_status(tenant=tenant, status="suspended")
    _refused(approval, "tenant_inactive")


def test_invoice_closed(approved):
    approval = approved()
    Invoice.objects.filter(pk=approval.invoice_id).update(state=Invoice.State.RECOVERED)
    result = send_approved(approval_id=approval.pk)
    assert (result.outcome, result.reason) == ("suppressed", "invoice_closed")
    assert mail.outbox == []


def test_holdout_arm(approved):
    approval = approved()
    Invoice.objects.filter(pk=approval.invoice_id).update(arm=Invoice.Arm.HOLDOUT)
    _refused(approval, "holdout_arm")


def test_not_approved_pending(tenant, make_approval, sending_on):
    _refused(make_approval(tenant), "not_approved")


def test_not_approved_rejected(tenant, approver, make_approval, sending_on):
    from approvals.services import approval_reject

    approval = make_approval(tenant)
    approval_reject(approval=approval, user=approver)
    _refused(approval, "not_approved")


def test_approval_expired_request(tenant, make_approval, sending_on):
    approval = make_approval(tenant)
    approval_expire_stale(now=approval.expires_at + timedelta(seconds=1))
    _refused(approval, "approval_expired")


def test_approval_too_old_to_send(approved, settings):
    approval = approved()
    ApprovalRequest.objects.filter(pk=approval.pk).update(
        decided_at=timezone.now() - timedelta(hours=settings.PAYPILOT_APPROVAL_TTL_HOURS + 1)
    )
    approval.refresh_from_db()
    result = send_approved(approval_id=approval.pk)
    assert (result.outcome, result.reason) == ("suppressed", "approval_expired")


def test_sending_disabled_is_a_dry_run(tenant, approver, make_approval, sending_on, settings):
    settings.PAYPILOT_SEND_EMAIL = False
    approval = make_approval(tenant)
    approval_approve(approval=approval, user=approver)  # the send task runs inline (sync)
    row = SuppressedSend.objects.get(approval=approval)
    assert (row.gate, row.reason, row.dry_run) == ("sending_enabled", "sending_disabled", True)
    assert mail.outbox == []
    assert Invoice.objects.get(pk=approval.invoice_id).state == Invoice.State.FAILED
    # Running the task again does not send or add a second row.
    assert send_approved(approval_id=approval.pk).outcome == "already_done"
    assert SuppressedSend.objects.filter(approval=approval).count() == 1


def test_no_recipient(tenant, approved):
    customer = CustomerFactory(tenant=tenant, email="")
    approval = approved(invoice=InvoiceFactory(tenant=tenant, customer=customer))
    _refused(approval, "no_recipient")


def test_recipient_not_allowlisted(approved, settings):
    approval = approved()
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["someone-else@example.com"]
    _refused(approval, "recipient_not_allowlisted")


def test_empty_allowlist_means_nobody(approved, settings):
    approval = approved()
    settings.PAYPILOT_ALLOWED_RECIPIENTS = []
    _refused(approval, "recipient_not_allowlisted")


@pytest.mark.parametrize(
    ("allowlist", "address", "allowed"),
    [
        ([], "a@example.com", False),
        (["*"], "a@example.com", True),
        (["A@Example.com"], "a@example.com", True),
        (["@example.com"], "a@example.com", True),
        (["@example.com"], "a@example.com.evil.net", False),
        (["b@example.com"], "a@example.com", False),
    ],
)
def test_allowlist_syntax(allowlist, address, allowed):
    assert gates.recipient_allowlisted(address, allowlist) is allowed


def _sent_before(approval: ApprovalRequest, *, hours_ago: float, invoice=None, customer=None):  # type: ignore[no-untyped-def]
    """A real earlier send row for the same invoice (another, older approval)."""
    from approvals.services import approval_open
    from approvals.tests.factories import DraftFactory

    other = approval_open(draft=DraftFactory(tenant=approval.tenant, invoice=invoice or approval.invoice))
    return EmailSend.objects.create(
        tenant=approval.tenant, approval=other, draft=other.draft, invoice=other.invoice,
        customer=customer or other.invoice.customer, recipient_hash="x",
        status=EmailSend.Status.BOUNCED, sent_at=timezone.now() - timedelta(hours=hours_ago),
    )


def test_max_touches_counts_sent_and_bounced(approved, settings):
    approval = approved()
    settings.PAYPILOT_MAX_TOUCHES = 2
    for hours in (100, 200):
        _sent_before(approval, hours_ago=hours)
    _refused(approval, "max_touches_reached")


def test_cooldown_per_invoice(approved):
    approval = approved()
    _sent_before(approval, hours_ago=2)
    _refused(approval, "cooldown_active")


def test_cooldown_per_customer(tenant, approved):
    approval = approved()
    other_invoice = InvoiceFactory(tenant=tenant, customer=approval.invoice.customer)
    _sent_before(approval, hours_ago=2, invoice=other_invoice)
    _refused(approval, "cooldown_active")


def test_dry_runs_do_not_start_a_cooldown(tenant, approver, make_approval, sending_on, settings):
    settings.PAYPILOT_SEND_EMAIL = False
    first = make_approval(tenant)
    approval_approve(approval=first, user=approver)  # dry run
    settings.PAYPILOT_SEND_EMAIL = True
    second = make_approval(tenant, invoice=first.invoice)
    approval_approve(approval=second, user=approver)
    assert len(mail.outbox) == 1


def test_link_host_not_allowed(approved):
    approval = approved(body="Pay now at http://evil.example/pay please.")
    _refused(approval, "link_host_not_allowed")


@pytest.mark.parametrize("body", [
    "Pay now: javascript:alert(document.cookie)",
    "Pay now: &#106;avascript&colon;alert(1)",
    "Pay now: data:text/html;base64,PHNjcmlwdD4=",
    "Pay now: //evil.example/pay",
])
def test_link_scheme_not_allowed(approved, body):
    _refused(approved(body=body), "link_scheme_not_allowed")


def test_only_the_minted_link_to_our_host(approved, settings):
    # Another /r/ link on our own host (an older email's, another invoice's) is not the one
    # minted for this send.
    approval = approved(body=f"Pay with {settings.PAYPILOT_PUBLIC_BASE_URL}/r/eyJpIjoxfQ:1old:AbCdEf today.")
    _refused(approval, "link_host_not_allowed")


def test_link_host_refused_in_disclosure_too(approved, settings):
    approval = approved(source="llm")
    settings.PAYPILOT_AI_DISCLOSURE = "Written with help from https://ai.example.net"
    _refused(approval, "link_host_not_allowed")


def test_secret_shaped_text(approved):
    approval = approved(body="Use key sk_live_4eC39HqLyjWDarjtT1zdp7dc to pay.")
    _refused(approval, "secret_shaped_text")


def test_output_guard(approved):
    approval = approved(body="Hello {first_name}, your payment failed.")
    _refused(approval, "output_guard_refused")


def test_output_guard_card_digits(approved):
    approval = approved(body="The card 4242 4242 4242 4242 was declined.")
    _refused(approval, "output_guard_refused")


def test_all_gates_pass_sends(approved):
    approval = approved()
    assert send_approved(approval_id=approval.pk).outcome == "sent"
    assert len(mail.outbox) == 1
