"""manage.py demo_setup: creates the demo tenant, customers, admin and token once."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import override_settings

from ledger.demo import DEMO_CUSTOMERS_CSV, demo_customers, payment_history_parse
from ledger.models import Customer
from paypilot.models import ApiToken, AuditEvent, Tenant
from paypilot.services import token_parse, token_verify


def _run() -> str:
    out = StringIO()
    call_command("demo_setup", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
@override_settings(PAYPILOT_DEMO_TENANT="demo-x")
def test_first_run_creates_everything_and_prints_secrets_once() -> None:
    first = _run()
    tenant = Tenant.objects.get(slug="demo-x")
    assert Customer.objects.filter(tenant=tenant).count() == 6
    acme = Customer.objects.get(tenant=tenant, external_id="cust_001")
    assert (acme.name, acme.mrr_minor, acme.currency, acme.plan) == ("Acme Robotics", 149900, "USD", "Scale")
    assert acme.payment_history[-1] == {"date": "2026-06-15", "status": "failed", "failure_code": "card_expired"}

    password = re.search(r"password \(shown once\): (\S+)", first)[1]
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.check_password(password)
    plaintext = re.search(r"token \(shown once\): (\S+)", first)[1]
    prefix, secret = token_parse(plaintext)
    token = ApiToken.objects.get(prefix=prefix)
    assert token.tenant == tenant and token.role == "integrator" and token_verify(token=token, secret=secret)

    counts = (Tenant.objects.count(), Customer.objects.count(), ApiToken.objects.count(),
              get_user_model().objects.count(), AuditEvent.objects.count())
    second = _run()
    assert counts == (Tenant.objects.count(), Customer.objects.count(), ApiToken.objects.count(),
                      get_user_model().objects.count(), AuditEvent.objects.count())
    assert password not in second and plaintext not in second and secret not in second
    assert "shown once" not in second
    assert prefix in second  # the prefix is public and helps find the token


def test_history_parser_expands_ranges() -> None:
    entries = payment_history_parse("2026-02-20..2026-05-20 ok x4;2026-06-20 failed generic_decline")
    assert [e["date"] for e in entries] == ["2026-02-20", "2026-03-20", "2026-04-20", "2026-05-20", "2026-06-20"]
    assert entries[-1]["failure_code"] == "generic_decline"
    with pytest.raises(ValueError):
        payment_history_parse("yesterday fine")


def test_fixture_is_a_copy_of_the_facts_file() -> None:
    facts = DEMO_CUSTOMERS_CSV.parents[3] / "shared" / "facts" / "demo_customers.csv"
    if not facts.is_file():
        pytest.skip("shared/facts not beside the checkout")
    assert DEMO_CUSTOMERS_CSV.read_text() == facts.read_text()
    assert len(demo_customers()) == 6


@pytest.mark.django_db
@override_settings(PAYPILOT_DEMO_TENANT="demo-x", PAYPILOT_HOLDOUT_PCT=20)
def test_first_run_plays_the_story_and_writes_history_in_both_arms_once() -> None:
    from approvals.models import ApprovalRequest
    from integrations.models import ProviderCredential, WebhookEvent
    from ledger.models import Invoice, InvoiceTransition, PaidBeforeFailure

    _run()
    tenant = Tenant.objects.get(slug="demo-x")
    assert set(ProviderCredential.objects.filter(tenant=tenant).values_list("provider", flat=True)) == {
        "stripe", "recharge", "chargebee"}
    # The story: signed Stripe deliveries through the webhook service, processed by the workers.
    events = WebhookEvent.objects.filter(tenant=tenant)
    assert events.count() == 8 and not events.exclude(status="processed").exists()
    story = Invoice.objects.filter(tenant=tenant, provider="stripe")
    assert story.filter(state="churned").count() == 1
    assert PaidBeforeFailure.objects.filter(tenant=tenant, external_invoice_id="in_demo_pixel_0610").exists()
    assert not story.filter(external_invoice_id="in_demo_pixel_0610").exists()
    pending = ApprovalRequest.objects.filter(tenant=tenant, status="pending")
    assert pending.count() >= 3
    assert {c for c in story.values_list("currency", flat=True)} >= {"USD", "EUR", "GBP"}
    # History: a few hundred past invoices in both arms, with sends, clicks and outcomes.
    history = Invoice.objects.filter(tenant=tenant, provider="demo")
    assert history.count() >= 300
    assert history.filter(arm="holdout").count() >= 30 and history.filter(arm="treatment").count() >= 30
    assert not history.filter(arm="holdout", first_messaged_at__isnull=False).exists()
    assert {"recovered", "churned", "exhausted", "messaged", "clicked"} <= set(history.values_list("state", flat=True))
    assert InvoiceTransition.objects.filter(invoice__in=history, to_state="messaged").exists()

    counts = (events.count(), Invoice.objects.count(), ApprovalRequest.objects.count(),
              InvoiceTransition.objects.count())
    second = _run()
    assert counts == (events.count(), Invoice.objects.count(), ApprovalRequest.objects.count(),
                      InvoiceTransition.objects.count())
    assert "0 new signed deliveries, 8 already received" in second
