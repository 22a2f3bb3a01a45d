"""The product end to end, connected as the application role (PostgreSQL only).

The owner-connected tests cannot notice code that forgets to bind a tenant: the row-level
security policies let the owner through. Here Django's connection is the non-owner
application role, as in production, and every queued task runs the way a qcluster worker
runs it: later, outside the request, with no tenant bound.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone
from django.utils.module_loading import import_string

from approvals.mailer import LINK_LEAD
from approvals.models import ApprovalRequest, EmailSend
from approvals.services import approval_approve, approval_expire_stale, approval_open
from approvals.tasks import approvals_tick
from approvals.tests.factories import DraftFactory, finance_user
from dunning import llm, retrieval
from dunning.llm import ChatReply
from dunning.models import Draft, LlmUsage
from dunning.prompting import NAME_MASK
from integrations import stripe_api
from integrations.models import WebhookEvent
from integrations.providers.stripe import sign
from integrations.services import credential_set
from integrations.tasks import process_event, sweep_webhook_events
from ledger.models import Invoice
from operations.tests.conftest import django_as, postgres_only
from paypilot.models import AuditEvent, Tenant
from paypilot.services import tenant_create
from paypilot.tenancy import tenant_context

pytestmark = postgres_only

FIXTURES = Path(__file__).resolve().parents[2] / "integrations" / "tests" / "fixtures" / "stripe"
STRIPE_SECRET = "whsec_app_role_flow_0123456789abcdef"
RECIPIENT = "billing@acmerobotics.io"  # the customer of the invoice_payment_failed fixture


class FakeChat:
    """The model seam: a draft that passes the output guard."""

    model = "gpt-4o-mini"

    def complete(self, *, system: str, user: str, max_tokens: int) -> ChatReply:
        text = json.dumps({
            "subject": "Your card has expired",
            "body": f"Hi {NAME_MASK},\n\nYour card expired. Please add a new one using the secure "
                    "link in this email.\n\nThanks",
            "diagnosis": "The card on file expired.",
        })
        return ChatReply(text=text, input_tokens=900, output_tokens=200)


class Queue:
    """django-q2's async_task replaced by a list, so each task runs later like on a worker."""

    def __init__(self) -> None:
        self.tasks: list[tuple[str, tuple[Any, ...]]] = []

    def __call__(self, func: str, *args: Any, **kwargs: Any) -> None:
        self.tasks.append((func, args))

    def run(self, name: str) -> list[Any]:
        """Run (outside any transaction, no tenant bound) and drop the queued `name` tasks."""
        due = [args for func, args in self.tasks if func == name]
        self.tasks = [(func, args) for func, args in self.tasks if func != name]
        return [import_string(name)(*args) for args in due]


@pytest.fixture
def queue(monkeypatch: pytest.MonkeyPatch) -> Queue:
    queued = Queue()
    monkeypatch.setattr("integrations.services.inbox.async_task", queued)
    monkeypatch.setattr("approvals.tasks.async_task", queued)
    monkeypatch.setattr("django_q.tasks.async_task", queued)  # approvals.services imports it per call
    return queued


@pytest.fixture
def product_settings(settings, monkeypatch, tmp_path):  # type: ignore[no-untyped-def]
    settings.PAYPILOT_DEFAULT_TENANT = "acme"
    settings.PAYPILOT_HOLDOUT_PCT = 0
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = [RECIPIENT]
    settings.PAYPILOT_HIGH_VALUE_ANNUAL = 0
    settings.PAYPILOT_SEND_FALLBACK_DIR = tmp_path / "send-fallback"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.REDIS_URL = ""
    # The LLM path on, through a fake client: its spend is metered in a tenant table.
    settings.PAYPILOT_LLM_DRAFT = True
    settings.OPENAI_API_KEY = "sk-test-key-not-real-000000"
    settings.PAYPILOT_LLM_BUDGET_USD = 100
    llm.reset_chat_client()
    retrieval.reset_retriever()
    monkeypatch.setattr(llm, "build_chat_client", FakeChat)
    monkeypatch.setattr(retrieval, "build_embedder", lambda: retrieval.HashingEmbedder())
    monkeypatch.setattr(stripe_api, "invoice_payment_error", lambda **kwargs: None)
    yield settings
    llm.reset_chat_client()
    retrieval.reset_retriever()


def _body(name: str) -> bytes:
    return json.dumps(json.loads((FIXTURES / f"{name}.json").read_text()), separators=(",", ":")).encode()


def _post(client: Client, url: str, body: bytes) -> Any:
    return client.post(url, data=body, content_type="application/json",
                       headers={"Stripe-Signature": sign(body=body, secret=STRIPE_SECRET)})


def test_webhook_to_sent_email_and_periodic_jobs_as_the_application_role(app_role, queue, product_settings):
    # As the owner (a release / operator step): the tenant, its Stripe secret, an approver.
    tenant = tenant_create(slug="acme", name="Acme Ltd")
    other = tenant_create(slug="globex", name="Globex Corp")
    credential_set(tenant=tenant, provider="stripe", secret=STRIPE_SECRET)
    approver = finance_user(tenant=tenant)
    # Work the periodic jobs must find in both tenants: pending approvals past their expiry,
    # long ago (for approval_expire_stale) and just now (for the tick).
    now = timezone.now()
    stale = []
    for age in (timedelta(hours=2), timedelta(minutes=1)):
        for owner in (tenant, other):
            approval = approval_open(draft=DraftFactory(tenant=owner))
            ApprovalRequest.objects.filter(pk=approval.pk).update(expires_at=now - age)
            stale.append(approval.pk)
    mail.outbox = []

    with django_as(app_role):
        client = Client()
        # 1. The delivery, through the default-tenant route, then a redelivery through the
        #    tenant's own route (answered from the stored row).
        body = _body("invoice_payment_failed")
        received = _post(client, "/webhooks/stripe", body)
        assert received.status_code == 200, received.content
        assert received.json()["duplicate"] is False
        event_id = received.json()["event"]
        again = _post(client, "/t/acme/webhooks/stripe", body)
        assert (again.status_code, again.json()["duplicate"], again.json()["event"]) == (200, True, event_id)

        # 2. The worker processes it with no tenant bound: ledger, dunning draft, approval.
        assert queue.run("integrations.tasks.process_event") == ["processed"]
        assert process_event(event_id) == "processed"  # a rerun is a no-op
        with tenant_context(tenant):
            event = WebhookEvent.objects.get(pk=event_id)
            assert event.outcome == "draft_opened"
            invoice = Invoice.objects.get(external_invoice_id="in_1RzQ4xAcmeRobotics")
            draft = Draft.objects.get(invoice=invoice)
            assert draft.source == "llm"
            assert LlmUsage.objects.filter(tenant=tenant).count() == 1
            approval = ApprovalRequest.objects.get(draft=draft)
            assert approval.status == ApprovalRequest.Status.PENDING
            # 3. A finance user approves (the admin binds their tenant the same way).
            assert approval_approve(approval=approval, user=approver) == "approved"

        # 4. The send task, on a worker: exactly one email, the invoice messaged.
        assert queue.run("approvals.tasks.send_approval") == ["sent"]
        assert len(mail.outbox) == 1 and mail.outbox[0].to == [RECIPIENT]
        with tenant_context(tenant):
            assert Invoice.objects.get(pk=invoice.pk).state == Invoice.State.MESSAGED
            assert EmailSend.objects.get(approval=approval).status == EmailSend.Status.SENT

        # 5. The customer clicks the recovery link: no candidate page is allowlisted, so the
        #    click is recorded, each refused candidate audited, and no redirect is given.
        product_settings.PAYPILOT_LINK_ALLOWED_HOSTS = ["pay.acme.example"]
        link = mail.outbox[0].body.split(LINK_LEAD, 1)[1].split()[0]
        clicked = client.get("/r/" + link.rsplit("/", 1)[1])
        assert clicked.status_code == 200 and not clicked.has_header("Location"), clicked.content
        with tenant_context(tenant):
            assert Invoice.objects.get(pk=invoice.pk).state == Invoice.State.CLICKED
            assert AuditEvent.objects.filter(event="integrations.link.refused").count() == 1

        # 6. The periodic jobs see every tenant's rows.
        paid = _post(client, "/t/acme/webhooks/stripe", _body("invoice_paid"))
        assert paid.status_code == 200, paid.content
        queue.tasks.clear()  # the enqueue was "lost": the sweeper must find the event
        product_settings.PAYPILOT_SWEEP_AFTER_MINUTES = 0
        assert sweep_webhook_events() == 1
        assert queue.run("integrations.tasks.process_event") == ["processed"]

        assert approval_expire_stale(now=now - timedelta(hours=1)) == 2  # tenant_id=None: all
        ticked = approvals_tick()
        assert ticked["expired"] == 2, ticked
        assert queue.tasks == []
        assert len(mail.outbox) == 1

    assert Tenant.objects.count() == 2
    assert set(ApprovalRequest.objects.filter(pk__in=stale).values_list("status", flat=True)) == {
        ApprovalRequest.Status.EXPIRED}
