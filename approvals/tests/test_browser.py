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
            if request.config.getoption("--screenshots"):
                page.screenshot(path=str(DOCS / "approvals-console.png"), full_page=True)

            page.click(f"text={first.subject}")
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
