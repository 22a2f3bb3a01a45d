"""Webhooks for a suspended or deactivated tenant, and `tenants resume --draft-open`.

Signed deliveries through the real endpoint and the real pipeline (dunning, approvals):
a suspended tenant's closing events are applied, its failures recorded and never drafted,
its pending approvals still expire and no email leaves; a deactivated tenant gets 410 and
nothing is stored.
"""

from __future__ import annotations

import time
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core import mail
from django.core.management import call_command

from approvals.models import ApprovalRequest
from approvals.sending import send_approved
from approvals.services import approval_approve, approval_expire_stale
from decisions.models import DecisionRecord
from dunning.models import Draft
from integrations.models import WebhookEvent
from integrations.tests.conftest import load_fixture
from ledger.models import Invoice
from paypilot.models import AuditEvent, Tenant
from paypilot.services import tenant_set_status

pytestmark = pytest.mark.django_db


def _suspend(tenant: Tenant) -> None:
    tenant_set_status(tenant=tenant, status=Tenant.Status.SUSPENDED)


def _nothing_drafted() -> bool:
    return not (Draft.objects.exists() or ApprovalRequest.objects.exists() or DecisionRecord.objects.exists())


def _resume(*flags: str) -> str:
    out = StringIO()
    call_command("tenants", "resume", "acme", *flags, stdout=out)
    return out.getvalue()


# --- Stripe -------------------------------------------------------------------------------

def test_stripe_paid_for_a_suspended_tenant_recovers_the_invoice(stripe_tenant, post_stripe):
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    _suspend(stripe_tenant)

    response = post_stripe(load_fixture("stripe", "invoice_paid"))

    assert response.status_code == 200 and response.json()["duplicate"] is False
    invoice = Invoice.objects.get()
    assert invoice.state == "recovered" and invoice.recovered_minor == 149900
    paid = WebhookEvent.objects.get(event_type="invoice.paid")
    assert paid.status == "processed"


def test_stripe_failure_for_a_suspended_tenant_is_recorded_and_drafts_nothing(stripe_tenant, post_stripe):
    _suspend(stripe_tenant)

    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"))

    assert response.status_code == 200
    event = WebhookEvent.objects.get()
    assert (event.status, event.outcome) == ("processed", "recorded_tenant_inactive")
    invoice = Invoice.objects.get()
    assert (invoice.state, invoice.arm, invoice.amount_minor) == ("failed", "treatment", 149900)
    assert _nothing_drafted()


def test_stripe_cancellation_and_uncollectible_apply_while_suspended(stripe_tenant, post_stripe):
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    _suspend(stripe_tenant)
    post_stripe(load_fixture("stripe", "invoice_marked_uncollectible"))
    assert Invoice.objects.get().state == "exhausted"


def test_stripe_subscription_deleted_churns_while_suspended(stripe_tenant, post_stripe):
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    _suspend(stripe_tenant)
    post_stripe(load_fixture("stripe", "customer_subscription_deleted"))
    assert Invoice.objects.get().state == "churned"


def test_suspended_tenant_still_needs_a_valid_signature(stripe_tenant, post_stripe):
    _suspend(stripe_tenant)
    response = post_stripe(load_fixture("stripe", "invoice_payment_failed"), secret="whsec_wrong")
    assert response.status_code == 400 and response.json()["error"] == "signature_mismatch"
    assert not WebhookEvent.objects.exists()


def test_pending_approval_expires_as_before_while_suspended(stripe_tenant, post_stripe):
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    _suspend(stripe_tenant)
    approval = ApprovalRequest.objects.get()

    assert approval_expire_stale(now=approval.expires_at + timedelta(seconds=1)) == 1
    approval.refresh_from_db()
    assert approval.status == "expired"


def test_no_email_leaves_for_a_suspended_tenant(settings, stripe_tenant, post_stripe, django_user_model,
                                                monkeypatch):
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["billing@acmerobotics.io"]
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    approval = ApprovalRequest.objects.get()
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-x-long-enough-1")
    with monkeypatch.context() as patch:  # approved, its send not run yet
        patch.setattr("approvals.services.send_enqueue", lambda **kwargs: None)
        assert approval_approve(approval=approval, user=admin) == "approved"
    _suspend(stripe_tenant)

    result = send_approved(approval_id=approval.pk)

    assert (result.outcome, result.reason) == ("suppressed", "tenant_inactive")
    assert mail.outbox == []


def test_deactivated_tenant_gets_410_and_nothing_is_stored(stripe_tenant, post_stripe):
    tenant_set_status(tenant=stripe_tenant, status=Tenant.Status.DEACTIVATED)
    before = AuditEvent.objects.count()

    for name in ("invoice_payment_failed", "invoice_paid"):
        response = post_stripe(load_fixture("stripe", name))
        assert response.status_code == 410
        body = response.json()
        refusal_id = body.pop("refusal_id")  # every refusal carries one (paypilot.refusals)
        assert body == {"error": "tenant_deactivated",
                        "detail": "this tenant is closed and accepts no more webhooks"}
        assert AuditEvent.objects.get(detail__refusal_id=refusal_id).event == "paypilot.request.refused"
    assert not WebhookEvent.objects.exists() and not Invoice.objects.exists()
    # Nothing else is written: only the two refusals' own audit rows.
    assert AuditEvent.objects.exclude(event="paypilot.request.refused").count() == before


def test_event_stored_while_suspended_then_processed_after_deactivation_drafts_nothing(
    settings, stripe_tenant, post_stripe, monkeypatch
):
    from integrations.services import inbox

    monkeypatch.setattr(inbox, "enqueue_processing", lambda event_id, **kwargs: None)  # the worker is late
    _suspend(stripe_tenant)
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    tenant_set_status(tenant=stripe_tenant, status=Tenant.Status.DEACTIVATED)

    from integrations.services import webhook_event_process

    assert webhook_event_process(event_id=WebhookEvent.objects.get().pk) == "processed"
    assert Invoice.objects.get().state == "failed" and _nothing_drafted()


# --- resume -------------------------------------------------------------------------------

def test_resume_drafts_nothing_retroactively(stripe_tenant, post_stripe):
    _suspend(stripe_tenant)
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))

    assert "acme: active" in _resume()
    assert _nothing_drafted()
    assert WebhookEvent.objects.get().outcome == "recorded_tenant_inactive"


def test_resume_draft_open_drafts_open_failures_through_the_pipeline_once(stripe_tenant, post_stripe, post_recharge):
    from integrations.services import credential_set
    from integrations.tests.conftest import RECHARGE_SECRET

    credential_set(tenant=stripe_tenant, provider="recharge", secret=RECHARGE_SECRET, default_currency="USD")
    _suspend(stripe_tenant)
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))  # stays open
    post_recharge(load_fixture("recharge", "charge_failed_card_expired"), topic="charge/failed")
    post_recharge(load_fixture("recharge", "charge_paid"), topic="charge/paid")  # closed meanwhile
    assert _nothing_drafted()

    out = _resume("--draft-open")

    assert "acme: active" in out and "drafts opened: 1" in out
    draft = Draft.objects.get()
    assert draft.invoice.external_invoice_id == "in_1RzQ4xAcmeRobotics"
    assert ApprovalRequest.objects.get().status == "pending"  # still needs a person
    assert DecisionRecord.objects.count() == 1
    outcomes = dict(WebhookEvent.objects.values_list("event_type", "outcome"))
    assert outcomes["invoice.payment_failed"] == "draft_opened_on_resume"
    assert outcomes["charge/failed"] == "noop_closed_before_resume"
    audit = AuditEvent.objects.get(event="integrations.webhook.drafted_on_resume")
    assert audit.actor == "cli" and audit.detail["count"] == 1

    assert "drafts opened: 0" in _resume("--draft-open")  # a second run drafts nothing twice
    assert Draft.objects.count() == 1


def test_resume_of_a_deactivated_tenant_is_refused(stripe_tenant):
    from django.core.management.base import CommandError

    tenant_set_status(tenant=stripe_tenant, status=Tenant.Status.DEACTIVATED)
    with pytest.raises(CommandError, match="deactivated"):
        _resume("--draft-open")


# --- Recharge and Chargebee ---------------------------------------------------------------

def test_recharge_suspended_failure_recorded_then_paid_recovers(recharge_tenant, post_recharge):
    _suspend(recharge_tenant)

    assert post_recharge(load_fixture("recharge", "charge_failed_card_expired"),
                         topic="charge/failed").status_code == 200
    assert WebhookEvent.objects.get().outcome == "recorded_tenant_inactive"
    assert Invoice.objects.get().state == "failed" and _nothing_drafted()

    assert post_recharge(load_fixture("recharge", "charge_paid"), topic="charge/paid").status_code == 200
    assert Invoice.objects.get().state == "recovered"


def _fresh(name: str) -> dict[str, Any]:
    payload = load_fixture("chargebee", name)
    payload["occurred_at"] = int(time.time())
    return payload


def test_chargebee_suspended_failure_recorded_then_paid_recovers(tenant, post_chargebee):
    _suspend(tenant)

    assert post_chargebee(_fresh("payment_failed")).status_code == 200
    assert WebhookEvent.objects.get().outcome == "recorded_tenant_inactive"
    assert Invoice.objects.get().state == "failed" and _nothing_drafted()

    assert post_chargebee(_fresh("payment_succeeded")).status_code == 200
    assert Invoice.objects.get().state == "recovered"


def test_chargebee_deactivated_is_410(tenant, post_chargebee):
    tenant_set_status(tenant=tenant, status=Tenant.Status.DEACTIVATED)
    response = post_chargebee(_fresh("payment_failed"))
    assert response.status_code == 410 and response.json()["error"] == "tenant_deactivated"
    assert not WebhookEvent.objects.exists()


def test_suspension_is_seen_at_processing_time(stripe_tenant, post_stripe):
    """The status is read when the event is applied, not cached from the delivery."""
    post_stripe(load_fixture("stripe", "invoice_payment_failed"))
    assert Draft.objects.count() == 1
    _suspend(stripe_tenant)
    second = load_fixture("stripe", "invoice_payment_failed")
    second["id"] = "evt_second_attempt"
    second["data"]["object"]["attempt_count"] = 2
    post_stripe(second)
    assert Draft.objects.count() == 1
    assert WebhookEvent.objects.get(event_key="evt_second_attempt").outcome == "recorded_tenant_inactive"
