"""Browser test: a finance user approves a draft through the real admin pages in Chromium.

Playwright drives Debian's Chromium (/usr/bin/chromium, installed by .ci/run) against
pytest-django's live server. Run with `--screenshots` to save the console to docs/.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.core.management.color import no_style
from django.db import connection

from approvals.models import ApprovalRequest
from approvals.services import approval_open
from approvals.tests.factories import PASSWORD, DraftFactory, finance_group, finance_user
from ledger.models import Invoice
from ledger.tests.factories import CustomerFactory, InvoiceFactory
from paypilot.db import OVERRIDE_TABLE, append_only_override
from paypilot.services import tenant_create

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
DOCS = Path(django_settings.BASE_DIR) / "docs"


@pytest.fixture
def chromium_path() -> str:
    if shutil.which(CHROMIUM) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing; CI installs it with apt")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    return CHROMIUM


@pytest.fixture
def append_only_flushable(transactional_db):  # type: ignore[no-untyped-def]
    """Empty every table under the named override before pytest-django's teardown flush.

    On SQLite that flush is a DELETE per table, which the append-only triggers refuse (on
    PostgreSQL it is a TRUNCATE, which row triggers do not see). This fixture's teardown runs
    first: it deletes everything while the override row exists, so the flush finds empty
    tables."""
    yield
    if connection.vendor != "sqlite":
        return
    tables = [t for t in connection.introspection.django_table_names(only_existing=True, include_views=False)
              if t != OVERRIDE_TABLE]
    with append_only_override("retention_purge"):
        with connection.cursor() as cursor:
            for sql in connection.ops.sql_flush(no_style(), tables):
                cursor.execute(sql)


@pytest.fixture
def queue(append_only_flushable, settings):  # type: ignore[no-untyped-def]
    finance_group()  # an earlier transactional test's flush may have emptied it
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["*"]
    settings.PAYPILOT_HIGH_VALUE_ANNUAL = 0
    settings.PAYPILOT_AI_DISCLOSURE = ""
    tenant = tenant_create(slug="acme", name="Acme Ltd")
    people = [("Ada Lovelace", "ada@example.com", 4900, "USD"), ("Grace Hopper", "grace@example.com", 129000, "JPY"),
              ("Alan Turing", "alan@example.com", 2500, "EUR")]
    approvals = []
    for name, email, amount, currency in people:
        customer = CustomerFactory(tenant=tenant, name=name, email=email, currency=currency)
        invoice = InvoiceFactory(tenant=tenant, customer=customer, amount_minor=amount, currency=currency)
        approvals.append(approval_open(draft=DraftFactory(
            tenant=tenant, invoice=invoice, subject=f"{name.split()[0]}, your payment did not go through",
        )))
    other = tenant_create(slug="globex", name="Globex Corp")
    approval_open(draft=DraftFactory(tenant=other, subject="Globex secret draft"))
    return tenant, approvals


@pytest.mark.django_db(transaction=True)
def test_finance_user_approves_a_draft_in_chromium(live_server, queue, chromium_path, monkeypatch, request):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls below are
    # plain synchronous ones, so Django's async-safety check is switched off for this test.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    tenant, approvals = queue
    user = finance_user(tenant=tenant, username="fiona")
    first = approvals[0]

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{live_server.url}/admin/login/?next=/admin/approvals/approvalrequest/")
            page.fill("#id_username", user.username)
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_url("**/admin/approvals/approvalrequest/")
            html = page.inner_text("#content")
            assert "Ada Lovelace" in html and "49.00 USD" in html and "129,000 JPY" in html
            assert "Globex secret draft" not in html  # another tenant's queue

            page.click(f"a.pp-review[href$='/{first.pk}/change/']")
            page.wait_for_selector("#pp-email")
            body = page.inner_text("#pp-body")
            assert first.body.splitlines()[0] in body and "/r/" in body
            if request.config.getoption("--screenshots"):
                page.screenshot(path=str(DOCS / "approvals-review.png"), full_page=True)

            page.fill("input[name=note]", "checked against the invoice")
            page.click("#pp-approve")
            # The console moves on to the next pending draft.
            page.wait_for_selector("#pp-email")
            assert "approved" in page.inner_text(".messagelist")
            assert approvals[1].subject in page.inner_text("#pp-subject")
        finally:
            browser.close()

    first.refresh_from_db()
    assert first.status == ApprovalRequest.Status.APPROVED
    assert first.decided_by_id == user.pk and first.note == "checked against the invoice"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ada@example.com"]
    assert Invoice.objects.get(pk=first.invoice_id).state == Invoice.State.MESSAGED
    assert Invoice.objects.filter(state=Invoice.State.MESSAGED).count() == 1


# A finance user's morning: (name, email, amount, currency, failure code, risk, high value).
WORKSPACE_PEOPLE = [
    ("Ada Lovelace", "ada@example.com", 4900, "USD", "card_expired", "low", False),
    ("Grace Hopper", "grace@example.com", 129000, "JPY", "insufficient_funds", "medium", False),
    ("Alan Turing", "alan@example.com", 2500, "EUR", "issuer_do_not_retry", "high", False),
    ("Katherine Johnson", "katherine@example.com", 189900, "USD", "generic_decline", "medium", True),
    ("Edsger Dijkstra", "edsger@example.com", 7900, "EUR", "card_details_invalid", "low", False),
    ("Barbara Liskov", "barbara@example.com", 12900, "GBP", "direct_debit_not_retried", "high", False),
    ("Donald Knuth", "donald@example.com", 3100, "USD", "insufficient_funds", "low", False),
    ("Margaret Hamilton", "margaret@example.com", 45000, "USD", "card_expired", "medium", False),
    ("Tim Berners-Lee", "tim@example.com", 9900, "GBP", "generic_decline", "low", False),
    ("Radia Perlman", "radia@example.com", 15900, "EUR", "insufficient_funds", "high", False),
]


def _long_lived_ids(*tables: str, start: int = 123456) -> None:
    """Move the tables' id sequences on, as years of use would (a five- and six-digit id
    once pushed the approval list 2 px past its box)."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in tables:
            if connection.vendor == "postgresql":
                cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [table, start])
            else:
                cursor.execute("DELETE FROM sqlite_sequence WHERE name = %s", [table])
                cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, start])


@pytest.fixture
def morning(append_only_flushable, settings):  # type: ignore[no-untyped-def]
    """Ten drafts waiting (one high value, one expiring within the hour, one for an invoice
    paid since: withdrawn), a dry-run refusal this week; sending switched off. Ids are those
    of a long-lived tenant (six digits): the console must still fit its screen."""
    from datetime import timedelta

    from django.utils import timezone

    from decisions.tests.factories import DecisionRecordFactory
    from ledger.services import invoice_transition

    _long_lived_ids("approvals_approvalrequest", "dunning_draft", "ledger_invoice")
    finance_group()
    settings.PAYPILOT_SEND_EMAIL = False
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["*"]
    settings.PAYPILOT_HIGH_VALUE_ANNUAL = 1000
    settings.PAYPILOT_AI_DISCLOSURE = ""
    tenant = tenant_create(slug="acme", name="Acme Ltd")
    approvals = []
    for number, (name, email, amount, currency, code, risk, high) in enumerate(WORKSPACE_PEOPLE):
        customer = CustomerFactory(tenant=tenant, name=name, email=email, currency=currency,
                                   mrr_minor=amount if high else 0)
        invoice = InvoiceFactory(tenant=tenant, customer=customer, amount_minor=amount, currency=currency,
                                 failure_code=code, external_invoice_id=f"in_1Q{number:03d}ACME")
        decision = DecisionRecordFactory(tenant=tenant, invoice_ref=invoice.external_invoice_id,
                                         failure_code=code, rule_fired=code, churn_risk=risk)
        approvals.append(approval_open(draft=DraftFactory(
            tenant=tenant, invoice=invoice, decision=decision,
            subject=f"{name.split()[0]}, your payment did not go through",
        )))
    now = timezone.now()
    for offset, approval in enumerate(approvals):  # waiting between 1 and 40 hours
        ApprovalRequest.objects.filter(pk=approval.pk).update(
            requested_at=now - timedelta(hours=40 - 4 * offset),
            expires_at=now + timedelta(hours=32 + 4 * offset))
    ApprovalRequest.objects.filter(pk=approvals[1].pk).update(expires_at=now + timedelta(minutes=50))
    invoice_transition(invoice=approvals[8].invoice, to=Invoice.State.RECOVERED, cause="test")  # paid since
    return tenant, approvals


@pytest.mark.django_db(transaction=True)
def test_finance_user_starts_at_home_follows_a_figure_and_approves(live_server, morning, chromium_path,
                                                                    monkeypatch, request):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    tenant, approvals = morning
    user = finance_user(tenant=tenant, username="fiona")
    shots = request.config.getoption("--screenshots")
    chosen = approvals[0]

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{live_server.url}/admin/login/?next=/admin/")
            page.fill("#id_username", user.username)
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_selector("#pp-home")
            assert page.inner_text("#pp-fig-pending") == "9"  # the paid one has left the queue
            assert page.inner_text("#pp-fig-expiring") == "1"
            assert "Sending is switched off" in page.inner_text("#pp-sending-off")
            assert page.evaluate("document.documentElement.scrollWidth") <= 1400  # nothing off-screen
            if shots:
                page.screenshot(path=str(DOCS / "approvals-home.png"), full_page=True)

            page.click("#pp-fig-pending")  # a figure leads to the list behind it
            page.wait_for_selector("#result_list")
            rows = page.locator("#result_list tbody tr")
            assert rows.count() == 9
            queue = page.inner_text("#result_list")
            assert "Ada Lovelace" in queue and "49.00 USD" in queue and "Card expired" in queue
            assert "Tim Berners-Lee" not in queue  # paid since: withdrawn
            assert "issuer_do_not_retry" not in queue  # codes only in tooltips
            assert page.evaluate("document.documentElement.scrollWidth") <= 1400
            # every column inside its box: the table does not scroll sideways
            fit = page.evaluate("(() => { const r = document.querySelector('#changelist .results');"
                                " return [r.scrollWidth, r.clientWidth, [...document.querySelectorAll("
                                "'#result_list thead th')].map(h => Math.round(h.getBoundingClientRect().width))];"
                                " })()")
            assert fit[0] <= fit[1], fit
            heights = page.evaluate(
                "[...document.querySelectorAll('#result_list tbody tr')].map(r => r.getBoundingClientRect().height)")
            assert max(heights) < 45, heights  # compact rows
            assert page.locator("#pp-sending-off").count() == 1
            if shots:
                page.screenshot(path=str(DOCS / "approvals-console.png"), full_page=True)

            page.click(f"a.pp-review[href$='/{chosen.pk}/change/']")
            page.wait_for_selector("#pp-email")
            assert "Sending is switched off" in page.inner_text("#pp-sending-off")
            assert chosen.subject in page.inner_text("#pp-subject")
            assert "/r/" in page.inner_text("#pp-body")
            frame = page.locator("iframe")
            if frame.count():  # the HTML part as it will leave (the emails branch), beside the text
                assert frame.first.get_attribute("sandbox") is not None
                assert "your last payment failed" in frame.first.content_frame.locator("body").inner_text()
            if shots:
                page.screenshot(path=str(DOCS / "approvals-review.png"), full_page=True)
            assert page.get_attribute("#pp-approve", "value") == "Approve (dry run: sending is off)"
            page.click("#pp-approve")
            page.wait_for_selector(".messagelist")
            assert "approved" in page.inner_text(".messagelist")
        finally:
            browser.close()

    chosen.refresh_from_db()
    assert chosen.status == ApprovalRequest.Status.APPROVED and chosen.decided_by_id == user.pk
    assert mail.outbox == []  # sending is off: recorded as a dry run, as the banner said
    assert chosen.suppressed.get().reason == "sending_disabled"
