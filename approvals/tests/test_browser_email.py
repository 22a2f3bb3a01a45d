"""Browser test: the review page shows the HTML part in a sandboxed iframe beside the text
part, under the admin's CSP, and the draft is approved from it (Debian's Chromium through
Playwright, as test_browser.py). Run with `--screenshots` to save the review page and the
HTML email to docs/."""

from __future__ import annotations

import pytest
from django.core import mail

from approvals.admin.console import EMAIL_PREVIEW_CSP
from approvals.models import ApprovalRequest
from approvals.services import approval_open
from approvals.tests.factories import PASSWORD, DraftFactory, finance_user
from approvals.tests.test_browser import DOCS, FLAGS, append_only_flushable, chromium_path, queue  # noqa: F401
from dunning.catalogue import catalogue
from ledger.tests.factories import CustomerFactory, InvoiceFactory

LOGO = "https://brand.acme.example/logo.svg"
# The tenant's logo, served by Playwright in place of the network (tests run offline).
LOGO_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" width="168" height="48" viewBox="0 0 168 48">'
            b'<rect width="48" height="48" rx="10" fill="#0a7d4f"/><path d="M12 34 L24 12 L36 34 Z" fill="#fff"/>'
            b'<text x="58" y="32" font-family="Arial" font-size="22" font-weight="bold" fill="#16324f">'
            b'Acme</text></svg>')


@pytest.mark.django_db(transaction=True)
def test_review_shows_sandboxed_html_beside_text_and_approves(live_server, queue, chromium_path,  # noqa: F811
                                                              monkeypatch, request):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # see test_browser.py
    tenant, _ = queue
    tenant.display_name, tenant.brand_colour, tenant.logo_url = "Acme Ltd", "#0a7d4f", LOGO
    tenant.save()
    copy = catalogue().render(locale="en", failure_code="card_expired", name="Zoë O'Brien", plan="Pro",
                              business="Acme Ltd")
    customer = CustomerFactory(tenant=tenant, name="Zoë O'Brien", email="zoe@example.com")
    approval = approval_open(draft=DraftFactory(
        tenant=tenant, invoice=InvoiceFactory(tenant=tenant, customer=customer, amount_minor=4900, currency="USD"),
        subject=copy.subject, body=copy.body, locale="en",
    ))
    user = finance_user(tenant=tenant, username="fiona")
    violations: list[str] = []
    logo_requests: list[str] = []

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, args=FLAGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})

            def serve_logo(route):  # type: ignore[no-untyped-def]
                logo_requests.append(route.request.url)
                route.fulfill(status=200, content_type="image/svg+xml", body=LOGO_SVG)

            context.route(LOGO, serve_logo)
            page = context.new_page()
            page.on("console", lambda msg: violations.append(msg.text)
                    if "Content Security Policy" in msg.text else None)
            page.goto(f"{live_server.url}/admin/login/?next=/admin/")
            page.fill("#id_username", user.username)
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_url("**/admin/")

            review = f"{live_server.url}/admin/approvals/approvalrequest/{approval.pk}/change/"
            page.goto(review)
            frame_element = page.wait_for_selector("#pp-html")
            assert frame_element.get_attribute("sandbox") == ""  # no allow-scripts, no allow-same-origin
            frame = frame_element.content_frame()
            assert frame is not None
            frame.wait_for_selector("a")
            button = frame.query_selector("a")
            assert button is not None
            assert button.inner_text().strip() == catalogue().text("en", "email.button")
            href = button.get_attribute("href") or ""
            assert "/r/" in href and len(frame.query_selector_all("a")) == 1
            assert "Zoë O'Brien" in frame.inner_text("body") and "Acme Ltd" in frame.inner_text("body")
            frame.wait_for_function("() => document.images[0] && document.images[0].complete")
            assert frame.evaluate("() => document.images[0].naturalWidth") > 0  # the logo loaded
            assert logo_requests == [LOGO]
            # Beside the text part: side by side, the text part to the right.
            text_box = page.locator("#pp-body").bounding_box()
            frame_box = frame_element.bounding_box()
            assert text_box is not None and frame_box is not None
            assert frame_box["x"] + frame_box["width"] <= text_box["x"] and text_box["y"] < frame_box["y"] + 200
            assert "Update your payment details here:" in page.inner_text("#pp-body")
            # No script of the frame's document runs: one added to it stays inert (sandbox and
            # the preview's own policy both forbid it; DevTools' evaluate itself bypasses both).
            frame.evaluate("""() => { const s = document.createElement('script');
                                      s.textContent = 'window.pwned = 1'; document.body.append(s); }""")
            page.wait_for_timeout(100)
            assert frame.evaluate("() => window.pwned") is None
            if request.config.getoption("--screenshots"):
                page.screenshot(path=str(DOCS / "approvals-review-html.png"), full_page=True)
                email_page = context.new_page()
                email_page.set_viewport_size({"width": 680, "height": 400})
                preview = f"{live_server.url}/admin/approvals/approvalrequest/{approval.pk}/email.html"
                response = email_page.goto(preview)
                assert response is not None and response.headers["content-security-policy"] == EMAIL_PREVIEW_CSP
                email_page.wait_for_function("() => document.images[0] && document.images[0].complete")
                email_page.screenshot(path=str(DOCS / "approvals-email.png"), full_page=True)
                email_page.close()

            page.fill("input[name=note]", "html checked")
            page.click("#pp-approve")
            page.wait_for_selector(".messagelist")
            assert "approved" in page.inner_text(".messagelist")
            page.wait_for_timeout(200)
            assert violations == [], violations
        finally:
            browser.close()

    approval.refresh_from_db()
    assert approval.status == ApprovalRequest.Status.APPROVED and approval.note == "html checked"
    [message] = [m for m in mail.outbox if m.to == ["zoe@example.com"]]
    html, mimetype = message.alternatives[0]
    assert mimetype == "text/html" and "O&#x27;Brien" in html and LOGO in html
