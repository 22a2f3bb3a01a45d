"""Hostile-JSON limits: size, depth, content type and strict parsing, checked before parsing.

Python's `json` module recurses once per nesting level and raises `RecursionError` (not a
`ValueError`) past about a thousand levels, which every caller caught as nothing and
answered with a 500. Here the depth is measured by a linear token scan *before* `json.loads`
runs, so a body 100,000 levels deep costs one regex pass and a 400. The parse itself is
strict: duplicate keys (two parsers may read different values from one body), `NaN` and
`Infinity` (not JSON, RFC 8259 section 6) and invalid UTF-8 or a BOM are refused.

Every refusal is a `JsonRefused` carrying an HTTP status and one of the reason codes below;
the DRF parser (`StrictJSONParser`), /decide's own reader and the webhook adapters
(`integrations.providers.load_json`) all parse through `json_loads_strict`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from paypilot.api import ApiError

REASON_BODY_TOO_LARGE = "body_too_large"  # 413: longer than the route's byte limit
REASON_BODY_EMPTY = "body_empty"  # 400: no bytes where a JSON document is required
REASON_BODY_NOT_UTF8 = "body_not_utf8"  # 400: the bytes are not UTF-8 (or start with a BOM)
REASON_JSON_TOO_DEEP = "json_too_deep"  # 400: arrays/objects nested past the depth limit
REASON_JSON_DUPLICATE_KEY = "json_duplicate_key"  # 400: one object names a key twice
REASON_JSON_NON_FINITE = "json_non_finite_number"  # 400: NaN, Infinity or a float overflow
REASON_JSON_INVALID_STRING = "json_invalid_string"  # 400: a \u0000 or an unpaired surrogate
REASON_INVALID_BODY = "invalid_body"  # 400: not JSON at all (the code /decide always used)
REASON_UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"  # 415: Content-Type is not JSON

JSON_MEDIA_TYPE = "application/json"
_UTF8_BOM = b"\xef\xbb\xbf"
# A string token (escapes included) or one bracket: strings are skipped whole, so a "[" in
# a string never counts, and the scan is one C-level regex pass plus one step per token.
# A NUL or surrogate escape: only a hint (an escaped backslash before it makes it text);
# the walk over the parsed strings decides.
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JsonRefused(Exception):
    """A body refused before or while parsing: `status` (400/413/415) and a reason code."""

    def __init__(self, status: int, reason: str, detail: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.detail = detail


def max_depth() -> int:
    return int(settings.PAYPILOT_JSON_MAX_DEPTH)


def max_body_bytes() -> int:
    return int(settings.PAYPILOT_MAX_BODY_BYTES)


def too_large(limit: int) -> JsonRefused:
    return JsonRefused(413, REASON_BODY_TOO_LARGE, f"the body is larger than {limit} bytes")


def media_type_is_json(content_type: str | None) -> bool:
    """`application/json`, with or without parameters (`; charset=utf-8`), any case."""
    return (content_type or "").split(";", 1)[0].strip().lower() == JSON_MEDIA_TYPE


def require_json_media_type(content_type: str | None) -> None:
    if not media_type_is_json(content_type):
        raise JsonRefused(415, REASON_UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json")


def json_depth_exceeds(body: bytes, limit: int) -> bool:
    """True when arrays/objects in `body` nest deeper than `limit` (a malformed body that
    closes more than it opens is left to the parser to refuse)."""
    # Cheap exit for almost every real body: depth can never exceed the number of openers.
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    for match in _TOKENS.finditer(body):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token in (b"]", b"}"):
            depth -= 1
    return False


def _refuse_constant(name: str) -> Any:
    raise JsonRefused(400, REASON_JSON_NON_FINITE, "NaN and Infinity are not JSON numbers")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # 1e999 overflows to infinity
        raise JsonRefused(400, REASON_JSON_NON_FINITE, "a number is too large to represent")
    return value


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise JsonRefused(400, REASON_JSON_DUPLICATE_KEY, "an object names the same key twice")
    return found


def json_loads_strict(body: bytes, *, limit_bytes: int | None = None, depth: int | None = None) -> Any:
    """Parse `body` as one strict JSON document, or raise JsonRefused.

    Order matters: size first (no work on an oversized body), then encoding, then depth
    (before the recursive parser ever sees the bytes), then the parse.
    """
    limit_bytes = max_body_bytes() if limit_bytes is None else limit_bytes
    depth = max_depth() if depth is None else depth
    if len(body) > limit_bytes:
        raise too_large(limit_bytes)
    if not body.strip():
        raise JsonRefused(400, REASON_BODY_EMPTY, "the body is empty; a JSON object is required")
    if body.startswith(_UTF8_BOM):
        raise JsonRefused(400, REASON_BODY_NOT_UTF8, "the body starts with a byte-order mark")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise JsonRefused(400, REASON_BODY_NOT_UTF8, "the body is not valid UTF-8") from None
    if json_depth_exceeds(body, depth):
        raise JsonRefused(400, REASON_JSON_TOO_DEEP, f"arrays and objects nest deeper than {depth} levels")
    try:
        value = json.loads(text, object_pairs_hook=_object_without_duplicates,
                           parse_constant=_refuse_constant, parse_float=_finite_float)
    except JsonRefused:
        raise
    except RecursionError:  # unreachable after the depth scan; kept so it can never be a 500
        raise JsonRefused(400, REASON_JSON_TOO_DEEP, "the body nests too deeply") from None
    except ValueError:  # JSONDecodeError, and integers past Python's 4,300-digit limit
        raise JsonRefused(400, REASON_INVALID_BODY, "the body is not valid JSON") from None
    # Only an escape can put a NUL or a lone surrogate in a string (raw ones are invalid
    # UTF-8 or invalid JSON), so only bodies holding such an escape are walked (walking
    # every body cost 40 us on a 3 kB Stripe event with ordinary accented-letter escapes).
    # Both are refused because PostgreSQL text cannot hold a NUL and UTF-8 cannot encode a
    # lone surrogate: either would fail as a 500 deep inside a write, long after parsing.
    if _SUSPECT_ESCAPE.search(body) and not _strings_clean(value):
        raise JsonRefused(400, REASON_JSON_INVALID_STRING,
                          "a string holds a NUL character or an unpaired surrogate")
    return value


def _string_clean(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strings_clean(value: Any) -> bool:
    """Every key and string in `value` (already depth-limited, so recursion is bounded)."""
    if isinstance(value, str):
        return _string_clean(value)
    if isinstance(value, dict):
        return all(_string_clean(k) and _strings_clean(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_strings_clean(v) for v in value)
    return True


def json_object_strict(body: bytes, *, limit_bytes: int | None = None) -> dict[str, Any]:
    """`json_loads_strict`, and the document must be an object."""
    value = json_loads_strict(body, limit_bytes=limit_bytes)
    if not isinstance(value, dict):
        raise JsonRefused(400, REASON_INVALID_BODY, "the body must be a JSON object")
    return value


class StrictJSONParser(JSONParser):
    """DRF's JSON parser with PayPilot's limits: refusals are ApiErrors with reason codes,
    so the project's exception handler answers them as JSON like every other 4xx."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = max_body_bytes()
        body = stream.read(limit + 1) if stream is not None else b""
        try:
            return json_loads_strict(body, limit_bytes=limit)
        except JsonRefused as refused:
            raise ApiError(refused.status, refused.reason, refused.detail) from None
