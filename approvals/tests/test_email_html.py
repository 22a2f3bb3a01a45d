"""The HTML part of the customer email: every failure code in every served locale, escaping,
branding validation, both parts judged by the send gates, and the review page's preview."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.core import mail
from django.core.exceptions import ValidationError

from approvals.admin.console import EMAIL_PREVIEW_CSP
from approvals.email_html import email_html_render
from approvals.mailer import LINK_LEAD, email_compose
from approvals.models import ApprovalRequest
from approvals.sending import send_approved
from approvals.services import approval_approve
from approvals.tests.factories import DraftFactory
from decisions.rules import FAILURE_CODES
from dunning.catalogue import FALLBACK_CODE, catalogue
from dunning.guards import guard_check
from ledger.tests.factories import CustomerFactory, InvoiceFactory
from paypilot.branding import DEFAULT_BRAND_COLOUR, brand_colour_validate, logo_url_validate
from paypilot.models import Tenant

LOCALES = catalogue().available_locales()
CODES = [*FAILURE_CODES, FALLBACK_CODE]
LOGO = "https://cdn.acme-brand.example/logo.png?v=2&size=2x"


class _Parts(HTMLParser):
    """What a mail client would find: links, images, visible text, the lang attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.images: list[str] = []
        self.tags: set[str] = set()
        self.text: list[str] = []
        self.lang = ""
        self.styles: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.tags.add(tag)
        if tag == "a":
            self.links.append(values.get("href") or "")
        if tag == "img":
            self.images.append(values.get("src") or "")
        if tag == "html":
            self.lang = values.get("lang") or ""
        if values.get("style"):
            self.styles.append(values["style"] or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parts_of(html: str) -> _Parts:
    parser = _Parts()
    parser.feed(html)
    parser.close()
    return parser


@pytest.fixture(autouse=True)
def _no_enqueue(monkeypatch):  # type: ignore[no-untyped-def]
    # Each test calls the send itself, to read its outcome.
    monkeypatch.setattr("approvals.services.send_enqueue", lambda **kwargs: None)


def _send(approval: ApprovalRequest, approver) -> str:  # type: ignore[no-untyped-def]
    approval_approve(approval=approval, user=approver)
    approval.refresh_from_db()
    return send_approved(approval_id=approval.pk).outcome


def _approval(tenant: Tenant, *, locale: str = "en", code: str = "card_expired",
              name: str = "Zoë O'Brien & Co", **draft: object) -> ApprovalRequest:
    from approvals.services import approval_open

    rendered = catalogue().render(locale=locale, failure_code=code, name=name, plan="Pro",
                                  business=tenant.email_name)
    customer = CustomerFactory(tenant=tenant, name=name, email="zoe@example.com")
    invoice = InvoiceFactory(tenant=tenant, customer=customer)
    fields = {"subject": rendered.subject, "body": rendered.body, "locale": locale, **draft}
    return approval_open(draft=DraftFactory(tenant=tenant, invoice=invoice, **fields))


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("code", CODES)
def test_every_failure_code_in_every_locale_leaves_multipart(tenant, approver, sending_on, locale, code):
    tenant.brand_colour, tenant.logo_url = "#0a7d4f", LOGO
    tenant.save()
    approval = _approval(tenant, locale=locale, code=code)
    assert _send(approval, approver) == "sent"
    [message] = mail.outbox
    # The text part is exactly what it was before there was an HTML part.
    text = message.body
    assert text.startswith(approval.body.rstrip()) and f"{LINK_LEAD}\n" in text
    link = text.split(f"{LINK_LEAD}\n")[1].split("\n")[0]
    [(html, mimetype)] = message.alternatives
    assert mimetype == "text/html"
    found = parts_of(html)
    # One button, a real <a href>, carrying exactly the link of the text part.
    assert found.links == [link] and "/r/" in link
    assert found.images == [LOGO]
    assert found.lang == locale
    assert not found.tags & {"style", "link", "meta", "script"}  # inline styles only
    assert "table" in found.tags
    visible = " ".join(" ".join(found.text).split())
    books = catalogue()
    assert books.text(locale, "email.button") in visible
    assert books.text(locale, "email.footer").split("{business}")[0].strip() in visible
    assert "Zoë O'Brien & Co" in visible  # the name reaches the reader as written ...
    assert "O&#x27;Brien &amp; Co" in html  # ... because it is written as escaped text
    assert any("#0a7d4f" in style for style in found.styles)
    # What the gates judged is what left: the whole message passes the output guard.
    assert guard_check(subject=message.subject, body=text, html_body=html, minted=link,
                       images=(LOGO,)).ok


def test_copy_is_data_never_markup(tenant, approver, sending_on):
    hostile = "Hello <b>there</b>,\n\n<img src=x onerror=alert(1)><script>alert(2)</script>\n\nThanks"
    approval = _approval(tenant, body=hostile, subject="Your <i>payment</i>")
    Tenant.objects.filter(pk=tenant.pk).update(display_name="<script>alert(3)</script> Acme")
    assert _send(approval, approver) == "sent"
    html = mail.outbox[0].alternatives[0][0]
    found = parts_of(html)
    assert "script" not in found.tags and "b" not in found.tags and "i" not in found.tags
    assert found.images == [] and len(found.links) == 1
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    # The display name carried markup: left out (the neutral phrase), never written as markup.
    assert "alert(3)" not in html and "The billing team" in html
    assert "<br>" in email_html_render(tenant=tenant, locale="en", subject="s", body="a\nb", link="https://x.example/r/t")


@pytest.mark.parametrize("display_name", ["Acme sk_live_4eC39HqLyjWDarjtT1zdp7dc", "pay-acme-now.example",
                                          "javascript:alert(1)", "Acme\u202egnp.exe"])
def test_an_unsafe_display_name_never_reaches_the_html_part(tenant, approver, sending_on, display_name):
    # The display name appears only in the HTML part (header and footer). It passes the same
    # slot rule as the copy (dunning.slots): an unsafe one is replaced by the neutral phrase,
    # so the email goes out without it rather than carrying it to the gates.
    Tenant.objects.filter(pk=tenant.pk).update(display_name=display_name)
    approval = _approval(tenant)
    assert _send(approval, approver) == "sent"
    html = mail.outbox[0].alternatives[0][0]
    assert display_name not in html and "The billing team" in html


def test_the_logo_is_allowed_as_the_image_only(tenant, approver, sending_on):
    tenant.logo_url = LOGO
    tenant.save()
    # The logo's host typed into the copy is still a foreign link.
    approval = _approval(tenant, body="Hello,\n\nsee https://cdn.acme-brand.example/logo.png?v=2&size=2x\n\nThanks")
    assert _send(approval, approver) == "suppressed"
    assert approval.suppressed.get().reason == "link_host_not_allowed"
    # And an image other than the logo in the HTML part is refused by the guard.
    html = email_html_render(tenant=tenant, locale="en", subject="s", body="b", link="https://x.example/r/t")
    assert not guard_check(subject="s", body="b", html_body=html.replace(LOGO.replace("&", "&amp;"),
                                                                         "https://evil.example/p.gif"),
                           images=(LOGO,)).ok


@pytest.mark.parametrize("value", [
    "javascript:alert(1)", "data:image/png;base64,AAAA", "http://cdn.example/logo.png",
    "//cdn.example/logo.png", "https://user:pw@cdn.example/logo.png", "https://cdn.example/a\"onerror=x.png",
    "https://cdn.example/logo .png", "https:/cdn.example/logo.png", "HTTPS://cdn.example/x.png", "https://localhost/x.png",
    "https://cdn.exаmple/x.png",  # a Cyrillic a
])
def test_logo_url_must_be_plain_https(tenant, value):
    with pytest.raises(ValidationError) as error:
        logo_url_validate(value)
    assert error.value.code == "logo_url_invalid"
    tenant.logo_url = value
    with pytest.raises(ValidationError):
        tenant.full_clean()
    # Stored around the form anyway: the email simply has no logo.
    Tenant.objects.filter(pk=tenant.pk).update(logo_url=value)
    tenant.refresh_from_db()
    html = email_html_render(tenant=tenant, locale="en", subject="s", body="b", link="https://x.example/r/t")
    assert parts_of(html).images == []


@pytest.mark.parametrize("value", ["red", "#fff", "#12ab3", "#12ab34;background:url(https://e.example/x)",
                                   "#12ab34 ", "#gggggg"])
def test_brand_colour_must_be_rrggbb(tenant, value):
    with pytest.raises(ValidationError):
        brand_colour_validate(value)
    # Held around the form (in memory: PostgreSQL's varchar(7) refuses the longer ones).
    tenant.brand_colour = value
    html = email_html_render(tenant=tenant, locale="en", subject="s", body="b", link="https://x.example/r/t")
    assert "url(" not in html and DEFAULT_BRAND_COLOUR in html


def test_button_text_contrasts_with_the_brand_colour(tenant):
    for colour, text in (("#ffe066", "#111111"), ("#1f4b99", "#ffffff")):
        tenant.brand_colour = colour
        html = email_html_render(tenant=tenant, locale="en", subject="s", body="b", link="https://x.example/r/t")
        assert f"color:{text};text-decoration:none" in html


def test_disclosure_in_both_parts_for_model_copy_only(tenant, approver, sending_on):
    sending_on.PAYPILOT_AI_DISCLOSURE = "This message was drafted with the help of AI."
    llm = email_compose(approval=_approval(tenant, source="llm"))
    template = email_compose(approval=_approval(tenant))
    assert "drafted with the help of AI" in llm.full_body and 'id="pp-disclosure"' in llm.html_body
    assert "drafted with the help of AI" not in template.full_body + template.html_body


def test_a_locale_not_served_renders_english(tenant):
    html = email_html_render(tenant=tenant, locale="xx", subject="s", body="b", link="https://x.example/r/t")
    assert parts_of(html).lang == "en" and catalogue().text("en", "email.button") in html


def test_review_page_shows_both_parts_and_the_sandboxed_preview(client, tenant, approver):
    approval = _approval(tenant)
    client.force_login(approver)
    page = client.get(f"/admin/approvals/approvalrequest/{approval.pk}/change/")
    assert page.status_code == 200
    content = page.content.decode()
    preview_url = f"/admin/approvals/approvalrequest/{approval.pk}/email.html"
    assert '<iframe id="pp-html" class="pp-html-frame" sandbox="" referrerpolicy="no-referrer"' in content
    assert f'src="{preview_url}"' in content and 'id="pp-body"' in content
    assert page["Content-Security-Policy"].startswith("default-src 'self'")  # the page's own policy holds
    preview = client.get(preview_url)
    assert preview.status_code == 200 and preview["Content-Type"].startswith("text/html")
    assert preview["Content-Security-Policy"] == EMAIL_PREVIEW_CSP
    assert "script-src" not in EMAIL_PREVIEW_CSP and EMAIL_PREVIEW_CSP.endswith("sandbox")
    assert preview["X-Frame-Options"] == "SAMEORIGIN" and "no-store" in preview["Cache-Control"]
    assert len(parts_of(preview.content.decode()).links) == 1


def test_preview_of_another_tenants_draft_is_404(client, tenant, approver):
    other = Tenant.objects.create(slug="globex", name="Globex")
    approval = _approval(other)
    client.force_login(approver)
    assert client.get(f"/admin/approvals/approvalrequest/{approval.pk}/email.html").status_code == 404


def test_branding_is_set_in_the_tenant_admin_validated_and_audited(client, tenant):
    from django.contrib.auth.models import User

    from paypilot.models import AuditEvent

    root = User.objects.create_superuser("root", "root@example.com", "pw-root-123456")
    client.force_login(root)
    url = f"/admin/paypilot/tenant/{tenant.pk}/change/"
    form = {"slug": tenant.slug, "name": tenant.name, "display_name": "Acme", "brand_colour": "red",
            "logo_url": "javascript:alert(1)"}
    refused = client.post(url, form)
    assert refused.status_code == 200  # the form again, with its errors
    errors = refused.context["adminform"].form.errors
    assert set(errors) == {"brand_colour", "logo_url"}
    tenant.refresh_from_db()
    assert (tenant.display_name, tenant.brand_colour, tenant.logo_url) == ("", "", "")
    assert client.post(url, {**form, "brand_colour": "#0a7d4f", "logo_url": LOGO}).status_code == 302
    tenant.refresh_from_db()
    assert (tenant.display_name, tenant.brand_colour, tenant.logo_url) == ("Acme", "#0a7d4f", LOGO)
    event = AuditEvent.objects.get(event="paypilot.tenant.branding_changed")
    assert event.detail == {"fields": ["brand_colour", "display_name", "logo_url"]} and event.actor == f"user:{root.pk}"
