"""The Content-Security-Policy holds in a real browser: every page that needs scripts or
styles still works in Chromium, and Chromium reports no violation.

Playwright drives Debian's Chromium like the approvals browser test does; it is skipped
where Chromium is missing (CI installs it)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from approvals.services import approval_open
from approvals.tests.factories import PASSWORD, DraftFactory
from approvals.tests.test_browser import FLAGS, append_only_flushable, chromium_path  # noqa: F401
from paypilot.services import tenant_create

# Loads the policy refuses on purpose: ReDoc's footer logo from its CDN (nothing may leave).
REFUSED_ON_PURPOSE = ("'https://cdn.redoc.ly/",)

# (path, a selector that only appears once the page's scripts and styles have run)
PAGES = [
    ("/docs", ".swagger-ui .info .title"),  # Swagger UI renders itself from its bundle
    ("/redoc", ".api-info h1"),  # so does ReDoc
    ("/", "body"),
    ("/admin/", "#site-name"),
    ("/admin/ledger/invoice/report/", "#content"),
    ("/report/sample", "svg"),
    ("/ach-returns", "table"),
]


@pytest.mark.django_db(transaction=True)
def test_pages_work_under_the_csp_in_chromium(live_server, append_only_flushable, chromium_path,  # noqa: F811
                                              monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # see approvals/tests/test_browser.py
    tenant = tenant_create(slug="acme", name="Acme Ltd")
    approval = approval_open(draft=DraftFactory(tenant=tenant, subject="Your payment did not go through"))
    user = get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)
    violations: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, args=FLAGS, headless=True)
        try:
            page = browser.new_page()
            page.on("console", lambda msg: violations.append(f"{page.url}: {msg.text}")
                    if "Content Security Policy" in msg.text
                    and not any(refused in msg.text for refused in REFUSED_ON_PURPOSE) else None)
            page.goto(f"{live_server.url}/admin/login/")
            page.fill("#id_username", user.username)
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_url("**/admin/")
            review = f"/admin/approvals/approvalrequest/{approval.pk}/change/"
            for path, selector in [*PAGES, (review, "#pp-email")]:
                response = page.goto(f"{live_server.url}{path}")
                assert response is not None and response.status == 200, path
                assert response.headers["content-security-policy"].startswith("default-src 'self'")
                try:
                    page.wait_for_selector(selector, timeout=15_000)
                except Exception as exc:  # the violations say why a page did not render
                    raise AssertionError(f"{path}: {selector} never appeared; CSP reports: {violations}") from exc
            page.wait_for_timeout(300)  # let late stylesheets and images report
            assert violations == [], violations
            # The policy really is enforced: an inline script on a strict page is refused.
            page.goto(f"{live_server.url}/report/sample")
            page.evaluate("""() => { const s = document.createElement('script');
                                     s.textContent = 'window.pwned = 1'; document.body.append(s); }""")
            assert page.evaluate("() => window.pwned") is None
            page.wait_for_timeout(300)
            assert any("script-src" in v for v in violations), violations
        finally:
            browser.close()
