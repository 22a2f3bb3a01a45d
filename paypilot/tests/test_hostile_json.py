"""Hand-made hostile bodies against every JSON endpoint: never a 5xx, always a JSON error
body with a reason code (issue 18: 7 server errors in 109 such cases before the limits).

Each case is sent to /decide, /payment-failed, /payment-failed/batch, the outcome endpoint
and a correctly signed Stripe, Recharge and Chargebee delivery (the signature is computed
over the hostile bytes, so the body reaches the parser behind the signature check).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from integrations.providers import chargebee as chargebee_adapter
from integrations.providers import recharge as recharge_adapter
from integrations.services import credential_set
from paypilot.models import Tenant
from paypilot.services import token_issue

STRIPE_SECRET = "whsec_hostile_0123456789abcdef"
RECHARGE_SECRET = "rc_hostile_secret"
CB_USER, CB_PASSWORD = "paypilot", "cb-hostile-secret"

DECIDE_OK = {"invoice_id": "in_h1", "failure_code": "card_expired"}
EVENT_OK = {"customer_id": "cust_h1", "amount": 12.5, "currency": "usd", "failure_code": "card_expired"}


def _deep(n: int, open_: str = "[", close: str = "]", inner: str = "") -> bytes:
    return (open_ * n + inner + close * n).encode()


def _deep_object(n: int) -> bytes:
    return ('{"a":' * n + "1" + "}" * n).encode()


def _with(field: str, raw: str, base: dict | None = None) -> bytes:
    """`base` (the /payment-failed event) with `field` set to the raw JSON text `raw`."""
    body = json.dumps({k: v for k, v in (base or EVENT_OK).items() if k != field})
    return (body[:-1] + f', "{field}": {raw}}}').encode()


# (case id, body bytes, content type). Content type None sends application/json.
CASES: list[tuple[str, bytes, str | None]] = [
    # deep nesting, the recursion-error class
    ("deep_array_1500", _deep(1500), None),
    ("deep_array_10000", _deep(10_000), None),
    ("deep_array_100000", _deep(100_000), None),
    ("deep_object_1500", _deep_object(1500), None),
    ("deep_object_20000", _deep_object(20_000), None),
    ("deep_unclosed_50000", b"[" * 50_000, None),
    ("deep_mixed_3000", ('[{"a":' * 3000 + "1" + "}]" * 3000).encode(), None),
    ("deep_in_field", _with("customer_name", "[" * 2000 + "]" * 2000), None),
    ("deep_in_object_value", ('{"invoice_id":' + "[" * 5000 + "]" * 5000 + "}").encode(), None),
    ("depth_65", _deep(65), None),
    ("brackets_in_strings_ok_depth", json.dumps({"invoice_id": "[" * 5000}).encode(), None),
    ("deep_closing_only", b"]" * 5000, None),
    # numbers
    ("float_overflow", _with("amount", "1e999"), None),
    ("float_negative_overflow", _with("amount", "-1e999"), None),
    ("float_underflow", _with("amount", "1e-99999"), None),
    ("int_5000_digits", _with("amount", "9" * 5000), None),
    ("int_huge_attempt", _with("attempt", "123456789012345678901234567890"), None),
    ("nan", _with("amount", "NaN"), None),
    ("infinity", _with("amount", "Infinity"), None),
    ("negative_infinity", _with("amount", "-Infinity"), None),
    ("negative_amount", _with("amount", "-5"), None),
    ("zero_amount", _with("amount", "0"), None),
    ("amount_string_exponent", _with("amount", '"1e400"'), None),
    ("amount_too_many_decimals", _with("amount", "1.23456"), None),
    ("amount_hex_string", _with("amount", '"0x10"'), None),
    ("leading_zero_number", _with("amount", "012"), None),
    ("attempt_float", _with("attempt", "1.5"), None),
    ("attempt_negative", _with("attempt", "-1"), None),
    # duplicate keys
    ("duplicate_key", b'{"invoice_id":"a","invoice_id":"b","failure_code":"card_expired"}', None),
    ("duplicate_key_nested", b'{"events":[{"a":1,"a":2}]}', None),
    ("duplicate_key_case_differs_ok", b'{"Currency":"usd","currency":"usd"}', None),
    # wrong types
    ("id_number", _with("customer_id", "12345"), None),
    ("id_list", _with("customer_id", '["a"]'), None),
    ("id_object", _with("customer_id", '{"a":1}'), None),
    ("id_null", _with("customer_id", "null"), None),
    ("id_bool", _with("customer_id", "true"), None),
    ("amount_bool", _with("amount", "true"), None),
    ("amount_list", _with("amount", "[1]"), None),
    ("amount_object", _with("amount", '{"value":1}'), None),
    ("attempt_string", _with("attempt", '"1"'), None),
    ("attempt_bool", _with("attempt", "true"), None),
    ("currency_number", _with("currency", "840"), None),
    ("events_object", b'{"events":{"0":{}}}', None),
    ("events_string", b'{"events":"many"}', None),
    ("events_null", b'{"events":null}', None),
    ("events_nested_lists", b'{"events":[[[]]]}', None),
    ("decide_fields_wrong", b'{"invoice_id":1,"failure_code":[],"attempt":"x","prior_failures":{}}', None),
    ("outcome_wrong", b'{"outcome":1,"report_key":null}', None),
    # currencies
    ("currency_xxx", _with("currency", '"XXX"'), None),
    ("currency_qqq", _with("currency", '"QQQ"'), None),
    ("currency_two_letters", _with("currency", '"US"'), None),
    ("currency_unicode", _with("currency", '"ＵＳＤ"'), None),
    # encodings
    ("invalid_utf8_ff", b"\xff\xfe", None),
    ("invalid_utf8_in_string", b'{"invoice_id":"\xc3\x28"}', None),
    ("overlong_utf8", b'{"invoice_id":"\xc0\xaf"}', None),
    ("utf16_body", json.dumps(DECIDE_OK).encode("utf-16"), None),
    ("utf8_bom", b"\xef\xbb\xbf" + json.dumps(DECIDE_OK).encode(), None),
    ("lone_high_surrogate", _with("customer_name", '"\\ud800"'), None),
    ("lone_low_surrogate", _with("customer_name", '"x\\udc00y"'), None),
    ("paired_surrogate_ok", _with("customer_name", '"\\ud83d\\ude00"'), None),
    ("nul_escape", _with("customer_name", '"a\\u0000b"'), None),
    ("nul_escape_in_key", b'{"invoice_id\\u0000":"a"}', None),
    ("nul_raw_byte", b'{"invoice_id":"a\x00b"}', None),
    ("raw_control_char", b'{"invoice_id":"a\nb"}', None),
    ("latin1_bytes", '{"customer_name":"Zoë"}'.encode("latin-1"), None),
    # empty and non-object documents
    ("empty", b"", None),
    ("whitespace_only", b"   \n\t ", None),
    ("null", b"null", None),
    ("true", b"true", None),
    ("zero", b"0", None),
    ("string", b'"hello"', None),
    ("empty_array", b"[]", None),
    ("array_of_object", b"[" + json.dumps(DECIDE_OK).encode() + b"]", None),
    ("array_of_events", b"[" + json.dumps(EVENT_OK).encode() + b"]", None),
    ("empty_object", b"{}", None),
    # syntax
    ("trailing_garbage", json.dumps(DECIDE_OK).encode() + b" x", None),
    ("two_documents", b"{}{}", None),
    ("single_quotes", b"{'invoice_id':'a'}", None),
    ("comment", b'{"invoice_id":"a" /* c */}', None),
    ("trailing_comma", b'{"invoice_id":"a",}', None),
    ("unterminated_string", b'{"invoice_id":"a', None),
    ("unquoted_key", b"{invoice_id:1}", None),
    ("bare_word", b"undefined", None),
    ("lone_brace", b"{", None),
    ("lone_backslash_escape", b'{"invoice_id":"\\q"}', None),
    ("truncated_unicode_escape", b'{"invoice_id":"\\u12"}', None),
    # sizes
    ("long_string_100k", _with("customer_name", json.dumps("x" * 100_000)), None),
    ("long_key", json.dumps({"k" * 50_000: 1}).encode(), None),
    ("many_keys_20000", json.dumps({f"k{i}": i for i in range(20_000)}).encode(), None),
    ("long_id_10k", _with("customer_id", json.dumps("a" * 10_000)), None),
    ("batch_of_10000", json.dumps({"events": [{}] * 10_000}).encode(), None),
    ("batch_of_51", json.dumps({"events": [EVENT_OK] * 51}).encode(), None),
    ("batch_empty", b'{"events":[]}', None),
    ("over_limit_3mb", b'{"pad":"' + b"x" * 3_000_000 + b'"}', None),
    # content types
    ("text_plain", json.dumps(DECIDE_OK).encode(), "text/plain"),
    ("form_urlencoded", b"invoice_id=a&failure_code=card_expired", "application/x-www-form-urlencoded"),
    ("multipart", b"--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--x--\r\n",
     "multipart/form-data; boundary=x"),
    ("octet_stream", json.dumps(DECIDE_OK).encode(), "application/octet-stream"),
    ("xml", b"<a/>", "application/xml"),
    ("json_suffix_type", json.dumps(DECIDE_OK).encode(), "application/problem+json"),
    ("content_type_garbage", json.dumps(DECIDE_OK).encode(), ";;;"),
    ("json_latin1_charset", json.dumps(DECIDE_OK).encode(), "application/json; charset=latin-1"),
    ("json_upper_case_type", json.dumps(DECIDE_OK).encode(), "APPLICATION/JSON"),
]

ENDPOINTS = ("decide", "payment_failed", "batch", "outcome", "stripe", "recharge", "chargebee")


@dataclass
class Setup:
    api: APIClient
    chargebee_url: str


@pytest.fixture
def setup(db) -> Setup:  # type: ignore[no-untyped-def]
    tenant = Tenant.objects.create(slug="hostile", name="Hostile Ltd")
    api = APIClient(raise_request_exception=False)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(tenant=tenant, role='integrator').plaintext}")
    # A decision to report an outcome on, so the outcome endpoint reaches its body parser.
    assert api.post("/decide", data=json.dumps({"invoice_id": "in_h1", "failure_code": "card_expired"}),
                    content_type="application/json").status_code == 200
    credential_set(tenant=tenant, provider="stripe", secret=STRIPE_SECRET)
    credential_set(tenant=tenant, provider="recharge", secret=RECHARGE_SECRET, default_currency="USD")
    change = credential_set(tenant=tenant, provider="chargebee", secret=CB_PASSWORD, username=CB_USER)
    return Setup(api=api, chargebee_url=f"/t/hostile/webhooks/chargebee/{change.url_key}")


def _send(setup: Setup, endpoint: str, body: bytes, content_type: str):  # type: ignore[no-untyped-def]
    api = setup.api
    if endpoint == "decide":
        return api.post("/decide", data=body, content_type=content_type)
    if endpoint == "payment_failed":
        return api.post("/payment-failed", data=body, content_type=content_type)
    if endpoint == "batch":
        return api.post("/payment-failed/batch", data=body, content_type=content_type)
    if endpoint == "outcome":
        return api.post("/decisions/in_h1/outcome", data=body, content_type=content_type)
    hooks = APIClient(raise_request_exception=False)
    if endpoint == "stripe":
        stamp = str(int(time.time()))
        digest = hmac.new(STRIPE_SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        return hooks.post("/t/hostile/webhooks/stripe", data=body, content_type=content_type,
                          headers={"Stripe-Signature": f"t={stamp},v1={digest}"})
    if endpoint == "recharge":
        return hooks.post("/t/hostile/webhooks/recharge", data=body, content_type=content_type,
                          headers=recharge_adapter.sign_timestamped(body=body, secret=RECHARGE_SECRET))
    auth = chargebee_adapter.basic_auth_header(username=CB_USER, password=CB_PASSWORD)
    return hooks.post(setup.chargebee_url, data=body, content_type=content_type, headers={"Authorization": auth})


def test_there_are_at_least_a_hundred_hand_made_cases() -> None:
    assert len(CASES) >= 100
    assert len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("name", "body", "content_type"), CASES, ids=[c[0] for c in CASES])
def test_hostile_body_never_answers_5xx(setup: Setup, name: str, body: bytes, content_type: str | None) -> None:
    failures = []
    for endpoint in ENDPOINTS:
        response = _send(setup, endpoint, body, content_type or "application/json")
        status = response.status_code
        if status >= 500:
            failures.append(f"{endpoint}: {status} {response.content[:200]!r}")
            continue
        assert response["Content-Type"].startswith("application/json"), (endpoint, status)
        payload = json.loads(response.content)
        if status >= 400:
            code = payload.get("error")
            assert isinstance(code, str) and code.replace("_", "").isalnum() and code.islower(), (endpoint, payload)
    assert not failures, failures


# The specific answers the limits promise, per endpoint family.
@pytest.mark.parametrize("endpoint", ["decide", "payment_failed", "batch", "outcome"])
@pytest.mark.parametrize(
    ("name", "status", "code"),
    [
        ("deep_array_100000", 400, "json_too_deep"),
        ("deep_object_1500", 400, "json_too_deep"),
        ("depth_65", 400, "json_too_deep"),
        ("nan", 400, "json_non_finite_number"),
        ("float_overflow", 400, "json_non_finite_number"),
        ("duplicate_key", 400, "json_duplicate_key"),
        ("invalid_utf8_in_string", 400, "body_not_utf8"),
        ("utf8_bom", 400, "body_not_utf8"),
        ("nul_escape", 400, "json_invalid_string"),
        ("lone_high_surrogate", 400, "json_invalid_string"),
        ("over_limit_3mb", 413, "body_too_large"),
        ("text_plain", 415, "unsupported_media_type"),
        ("form_urlencoded", 415, "unsupported_media_type"),
    ],
)
def test_api_refusals_name_their_reason(setup: Setup, endpoint: str, name: str, status: int, code: str) -> None:
    body, content_type = next((b, t) for n, b, t in CASES if n == name)
    response = _send(setup, endpoint, body, content_type or "application/json")
    if endpoint in ("decide", "outcome") and len(body) > 4096 and status != 415:
        status, code = 413, "body_too_large"  # their own 4 KiB cap answers before the depth check
    assert response.status_code == status, response.content[:300]
    assert response.json()["error"] == code


@pytest.mark.parametrize("endpoint", ["stripe", "recharge", "chargebee"])
@pytest.mark.parametrize(
    ("name", "status", "reason"),
    [
        ("deep_array_100000", 400, "json_too_deep"),
        ("deep_object_20000", 400, "json_too_deep"),
        ("duplicate_key", 400, "json_duplicate_key"),
        ("nan", 400, "json_non_finite_number"),
        ("over_limit_3mb", 413, None),
    ],
)
def test_signed_webhook_refusals(setup: Setup, endpoint: str, name: str, status: int, reason: str | None) -> None:
    body, _ = next((b, t) for n, b, t in CASES if n == name)
    response = _send(setup, endpoint, body, "application/json")
    assert response.status_code == status, response.content[:300]
    if status == 413:
        assert response.json()["error"] == "body_too_large"
    else:
        # Every refusal carries its own id (paypilot.refusals): compared apart from the rest.
        assert response.json()["refusal_id"] == response["X-Refusal-ID"]
        assert response.json() | {"detail": "", "refusal_id": ""} == {
            "error": "invalid_payload", "reason": reason, "detail": "", "refusal_id": ""}
