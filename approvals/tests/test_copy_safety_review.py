"""The slot rule as approvers meet it: the review page's facts and the approvers' digest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core import mail
from django.urls import reverse

from approvals.digest import digest_send_due
from approvals.models import DigestPreference
from approvals.services import approval_open
from approvals.tests.factories import DraftFactory, finance_user
from dunning.services import draft_for_invoice
from ledger.tests.factories import CustomerFactory, InvoiceFactory

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 12, 2, 9, 20, tzinfo=UTC)


def test_review_page_facts_say_which_field_was_left_out_and_why(client, tenant):  # type: ignore[no-untyped-def]
    customer = CustomerFactory(tenant=tenant, name="javascript:alert(1)", plan="Acme Pro (annual)")
    invoice = InvoiceFactory(tenant=tenant, customer=customer, failure_code="card_expired")
    draft = draft_for_invoice(invoice=invoice)
    assert draft is not None
    approval = approval_open(draft=draft)
    client.force_login(finance_user(tenant=tenant))
    html = client.get(reverse("admin:approvals_approvalrequest_change", args=[approval.pk])).content.decode()
    facts = html[html.index('id="pp-dropped"'):]
    facts = facts[:facts.index("</td>")]
    assert "Customer name" in facts and 'data-code="url_or_scheme"' in facts and "looks like a link" in facts
    assert "Plan name" not in facts  # the legit plan was kept
    assert "your Acme Pro (annual) plan" in draft.body and draft.body.startswith("Hi there,")


def test_review_page_has_no_such_row_when_nothing_was_left_out(client, tenant):  # type: ignore[no-untyped-def]
    customer = CustomerFactory(tenant=tenant, name="José Müller-O'Brien", plan="Scale")
    draft = draft_for_invoice(invoice=InvoiceFactory(tenant=tenant, customer=customer, failure_code="card_expired"))
    assert draft is not None and draft.dropped_fields == []
    approval = approval_open(draft=draft)
    client.force_login(finance_user(tenant=tenant))
    html = client.get(reverse("admin:approvals_approvalrequest_change", args=[approval.pk])).content.decode()
    assert 'id="pp-dropped"' not in html and "José Müller-O&#x27;Brien" in html


@pytest.mark.parametrize(("subject", "reason"), [
    ("Pay now at javascript:alert(1)", "url_or_scheme"),
    ("Your card \u202egnp.exe expired", "control_character"),
    ("Your\u200b card expired", "control_character"),
    ('Your card "><img src=x onerror=alert(1)>', "markup"),
])
def test_digest_shows_a_neutral_line_for_a_hostile_subject(tenant, settings, subject, reason):  # type: ignore[no-untyped-def]
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["*"]
    user = finance_user(tenant=tenant, username="ines")
    user.email = "ines@acme.example"
    user.save()
    DigestPreference.objects.create(user=user, frequency=DigestPreference.Frequency.HOURLY)
    with time_machine.travel(NOW, tick=False):
        hostile = approval_open(draft=DraftFactory(tenant=tenant, invoice=InvoiceFactory(tenant=tenant),
                                                   subject=subject), now=NOW - timedelta(hours=2))
        approval_open(draft=DraftFactory(tenant=tenant, invoice=InvoiceFactory(tenant=tenant),
                                         subject="Your card on file has expired"), now=NOW - timedelta(hours=1))
        [result] = digest_send_due(now=NOW)
    assert result.outcome == "sent"
    [message] = mail.outbox
    html = message.alternatives[0][0]
    for part in (message.body, html):
        assert subject not in part
        assert "javascript" not in part and "\u202e" not in part and "\u200b" not in part and "onerror" not in part
        assert f"Draft #{hostile.pk} (subject not shown: {reason})" in part
        assert "Your card on file has expired" in part  # an ordinary subject is listed as it is
