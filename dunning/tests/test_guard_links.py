"""The output guard's link table: every scheme and spelling it must refuse, in the text part
and in an HTML part, and the copy it must still pass (issue 18)."""

from __future__ import annotations

import pytest

from dunning.guards import (
    HTML_ACTIVE_CONTENT,
    LINK_HOST_NOT_ALLOWED,
    LINK_SCHEME_NOT_ALLOWED,
    guard_check,
)

MINTED = "https://paypilot.example/r/eyJpIjo0Mn0:1tXyZa:AbCdEfGhIjKl"

SCHEME, HOST, ACTIVE = LINK_SCHEME_NOT_ALLOWED, LINK_HOST_NOT_ALLOWED, HTML_ACTIVE_CONTENT


@pytest.fixture(autouse=True)
def _minted_host(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PAYPILOT_PUBLIC_BASE_URL = "https://paypilot.example"
    settings.PAYPILOT_LINK_ALLOWED_HOSTS = []


# (case name, text part, reason the guard must give)
TEXT_REFUSED = [
    ("javascript raw", "Pay: javascript:alert(1)", SCHEME),
    ("javascript mixed case", "Pay: JaVaScRiPt:alert(1)", SCHEME),
    ("javascript tab inside", "Pay: java\tscript:alert(1)", SCHEME),
    ("javascript newline inside", "Pay: java\nscript:alert(1)", SCHEME),
    ("javascript NUL inside", "Pay: java\x00script:alert(1)", SCHEME),
    ("javascript leading controls", "\x01\x02 javascript:alert(1)", SCHEME),
    ("javascript zero-width inside", "java\u200bscript:alert(1)", SCHEME),
    ("javascript soft hyphen inside", "java\u00adscript:alert(1)", SCHEME),
    ("javascript space before colon", "javascript :alert(1)", SCHEME),
    ("javascript decimal entity", "&#106;avascript:alert(1)", SCHEME),
    ("javascript padded entity", "&#0000106;avascript:alert(1)", SCHEME),
    ("javascript hex entity", "&#x6A;avascript:alert(1)", SCHEME),
    ("javascript &colon;", "javascript&colon;alert(1)", SCHEME),
    ("javascript &#58;", "javascript&#58;alert(1)", SCHEME),
    ("javascript &Tab; inside", "java&Tab;script:alert(1)", SCHEME),
    ("javascript double-encoded", "&amp;#106;avascript:alert(1)", SCHEME),
    ("javascript percent-encoded letter", "%6Aavascript:alert(1)", SCHEME),
    ("javascript percent-encoded colon", "javascript%3Aalert(1)", SCHEME),
    ("javascript fullwidth", "\uff4a\uff41\uff56\uff41\uff53\uff43\uff52\uff49\uff50\uff54\uff1aalert(1)", SCHEME),
    ("vbscript", "vbscript:msgbox(1)", SCHEME),
    ("vbscript upper", "VBSCRIPT:msgbox(1)", SCHEME),
    ("data html", "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", SCHEME),
    ("data bare", "data:,alert(1)", SCHEME),
    ("data upper", "DATA:text/html,<b>x</b>", SCHEME),
    ("data entity", "da&#116;a:text/html,x", SCHEME),
    ("data space after colon", "data: text/html,x", SCHEME),
    ("file triple slash", "file:///etc/passwd", SCHEME),
    ("file host", "file://fileserver/share/invoice.pdf", SCHEME),
    ("file backslashes", "FILE:\\\\server\\share", SCHEME),
    ("blob", "blob:https://evil.example/1234", SCHEME),
    ("ftp to the minted host", "ftp://paypilot.example/r/x", SCHEME),
    ("protocol-relative", "Pay at //evil.example/pay", SCHEME),
    ("protocol-relative ip", "Pay at //10.0.0.1/pay", SCHEME),
    ("protocol-relative backslashes", "Pay at \\\\evil.example\\pay", SCHEME),
    ("protocol-relative slash backslash", "Pay at /\\evil.example/pay", SCHEME),
    ("protocol-relative percent-encoded", "Pay at %2F%2Fevil.example", SCHEME),
    ("other host", "Pay at https://evil.example/r/x", HOST),
    ("minted host as a subdomain", "https://paypilot.example.evil.example/r/x", HOST),
    ("minted host as user-info", "https://paypilot.example@evil.example/r/x", HOST),
    ("homograph cyrillic a", "https://p\u0430ypilot.example/r/x", HOST),
    ("homograph cyrillic a bare", "p\u0430ypilot.example/r/x", HOST),
    ("homograph greek omicron", "https://paypil\u03bft.example/r/x", HOST),
    ("homograph digit one", "https://paypi1ot.example/r/x", HOST),
    ("homograph fullwidth host", "https://\uff50\uff41\uff59\uff50\uff49\uff4c\uff4f\uff54.example/r/x", HOST),
    ("homograph ideographic dot", "paypilot\u3002example/r/x", HOST),
    ("homograph cyrillic tld", "https://paypilot.\u0435xample/r/x", HOST),
    ("punycode host", "https://xn--pypilot-7fg.example/r/x", HOST),
    ("host percent-encoded", "https://paypilot%2Eexample/r/x", HOST),
    ("host behind entity dot", "evil&#46;example/pay", HOST),
    ("host with trailing dot", "https://paypilot.example./r/x", HOST),
]


@pytest.mark.parametrize(("body", "reason"), [c[1:] for c in TEXT_REFUSED], ids=[c[0] for c in TEXT_REFUSED])
def test_text_part_refuses(body: str, reason: str) -> None:
    verdict = guard_check(subject="About your payment", body=f"Hello,\n{body}\nThanks")
    assert not verdict.ok
    assert reason in verdict.reasons


@pytest.mark.parametrize(("body", "reason"), [c[1:] for c in TEXT_REFUSED], ids=[c[0] for c in TEXT_REFUSED])
def test_html_part_refuses_the_same_text(body: str, reason: str) -> None:
    # The text part is clean; the same string only in the HTML part's text still refuses.
    verdict = guard_check(subject="s", body="Hello", html_body=f"<p>Hello,</p><p>{body}</p>")
    assert not verdict.ok
    assert reason in verdict.reasons


# (case name, HTML part, reason)
HTML_REFUSED = [
    ("href javascript", '<a href="javascript:alert(1)">Pay</a>', SCHEME),
    ("href javascript entity", '<a href="&#106;avascript:alert(1)">Pay</a>', SCHEME),
    ("href javascript entity no semicolon", '<a href="&#106avascript&#58alert(1)">Pay</a>', SCHEME),
    ("href javascript hex tab", '<a href="jav&#x09;ascript:alert(1)">Pay</a>', SCHEME),
    ("href javascript newline", '<a href="jav&#10;ascript:alert(1)">Pay</a>', SCHEME),
    ("href javascript leading space", '<a href="  javascript:alert(1)">Pay</a>', SCHEME),
    ("href javascript unquoted", "<a href=javascript:alert(1)>Pay</a>", SCHEME),
    ("href javascript uppercase attr", '<A HREF="JAVASCRIPT:alert(1)">Pay</A>', SCHEME),
    ("href vbscript", "<a href='vbscript:msgbox(1)'>Pay</a>", SCHEME),
    ("href data", '<a href="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;">Pay</a>', SCHEME),
    ("href file", '<a href="file:///C:/invoice.pdf">Pay</a>', SCHEME),
    ("href protocol-relative", '<a href="//evil.example/pay">Pay</a>', SCHEME),
    ("href protocol-relative entities", '<a href="&#x2F;&#x2F;evil.example/pay">Pay</a>', SCHEME),
    ("href relative path", '<a href="/r/eyJpIjo0Mn0">Pay</a>', SCHEME),
    ("href ftp minted host", '<a href="ftp://paypilot.example/r/x">Pay</a>', SCHEME),
    ("href other host", '<a href="https://evil.example/r/x">Pay</a>', SCHEME),
    ("href homograph", '<a href="https://p&#x430;ypilot.example/r/x">Pay</a>', SCHEME),
    ("href minted link with zero-width", f'<a href="{MINTED}&#8203;">Pay</a>', SCHEME),
    ("img from another host", '<img src="https://evil.example/pixel.gif">', SCHEME),
    ("srcset from another host", '<img srcset="https://evil.example/a.png 1x, https://evil.example/b.png 2x">', SCHEME),
    ("svg xlink", '<svg><a xlink:href="javascript:alert(1)"><text>Pay</text></a></svg>', SCHEME),
    ("css url javascript", '<div style="background:url(javascript:alert(1))">x</div>', SCHEME),
    ("css url other host", "<div style=\"background-image: url('https://evil.example/x.png')\">x</div>", SCHEME),
    ("scheme in a title", f'<a title="javascript:alert(1)" href="{MINTED}">Pay</a>', SCHEME),
    ("link text names another host", f'<a href="{MINTED}">https://evil.example/pay</a>', HOST),
    ("onclick handler", f'<a href="{MINTED}" onclick="steal()">Pay</a>', ACTIVE),
    ("onerror handler", '<img src="https://paypilot.example/logo.png" onerror="alert(1)">', ACTIVE),
    ("script", "<script>alert(1)</script>", ACTIVE),
    ("iframe", f'<iframe src="{MINTED}"></iframe>', ACTIVE),
    ("form", f'<form action="{MINTED}"><input name="card"></form>', ACTIVE),
    ("base", '<base href="https://paypilot.example/">', ACTIVE),
    ("meta refresh", '<meta http-equiv="refresh" content="0;url=https://evil.example">', ACTIVE),
    ("css import", "<style>@import 'https://paypilot.example/x.css';</style>", ACTIVE),
    ("css expression", '<div style="width: expression(alert(1))">x</div>', ACTIVE),
]


@pytest.mark.parametrize(("html_body", "reason"), [c[1:] for c in HTML_REFUSED], ids=[c[0] for c in HTML_REFUSED])
def test_html_part_refuses(html_body: str, reason: str) -> None:
    verdict = guard_check(subject="About your payment", body=f"Update your card: {MINTED}", html_body=html_body)
    assert not verdict.ok
    assert reason in verdict.reasons


PASSES_TEXT = [
    f"Update your card here:\n{MINTED}\nThank you.",
    f"Update your card here: {MINTED.upper().replace('/R/', '/r/')}",
    "We still have the card on file: Visa ending in 42.",
    "Your data: we keep only what the invoice needs.",
    "Note: we will retry on 3 May and/or write again.",
    "Grüße aus München, die Buchhaltung.",
    "Le paiement de 49,00 € a échoué. Merci de mettre à jour votre carte.",
    "El pago de 49,00 € no se pudo cobrar.",
    "お支払いが失敗しました。カードを更新してください。",
    "Оплата не прошла. Обновите карту, пожалуйста.",
]


@pytest.mark.parametrize("body", PASSES_TEXT)
def test_text_part_passes(body: str) -> None:
    verdict = guard_check(subject="About your payment", body=body)
    assert verdict.ok, verdict.reasons


PASSES_HTML = [
    f'<p>Hello,</p><p><a href="{MINTED}">Update your card</a></p>',
    f"<p>Update <b>your</b> card: <a href='{MINTED}' style='color: #0a58ca'>here</a></p>",
    f'<a href="{MINTED}"><img src="https://paypilot.example/static/logo.png" alt="PayPilot"></a>',
    '<p><a href="#details">Details</a></p><h2 id="details">Details</h2>',
    "<p>Grüße &amp; danke &mdash; die Buchhaltung</p>",
]


@pytest.mark.parametrize("html_body", PASSES_HTML)
def test_html_part_passes(html_body: str) -> None:
    verdict = guard_check(subject="About your payment", body=f"Update your card: {MINTED}", html_body=html_body)
    assert verdict.ok, verdict.reasons


def test_with_the_minted_link_no_other_link_to_its_host_passes() -> None:
    other = "https://paypilot.example/r/eyJpIjo5OX0:1tOther:ZzYyXx"
    assert guard_check(subject="s", body=f"Update: {MINTED}", minted=MINTED).ok
    assert guard_check(subject="s", body=f"Update: {MINTED}.", minted=MINTED).ok  # sentence full stop
    verdict = guard_check(subject="s", body=f"Update: {MINTED}\nOr: {other}", minted=MINTED)
    assert verdict.reasons == [HOST]
    html_verdict = guard_check(subject="s", body=f"Update: {MINTED}", minted=MINTED,
                               html_body=f'<a href="{other}">Update</a>')
    assert SCHEME in html_verdict.reasons
    assert guard_check(subject="s", body=f"Update: {MINTED}", minted=MINTED,
                       html_body=f'<a href="{MINTED}">Update</a>').ok
    # Without a minted link (drafting, before a send exists) our host is simply allowed.
    assert guard_check(subject="s", body=f"Update: {other}").ok
