"""Strict checks of the POST /decide and outcome bodies.

Hand-written rather than a DRF serializer for two reasons: the contract needs a reason per
field that names the constraint and never the value (and refuses booleans where an integer
is asked for, which serializers accept), and /decide is the hot path, where a serializer
costs more than the decision itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from paypilot.jsonlimits import REASON_UNSUPPORTED_MEDIA_TYPE, JsonRefused, json_object_strict, media_type_is_json

MAX_BODY_BYTES = 4096

INVOICE_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
FAILURE_CODE_RE = re.compile(r"[a-z0-9_]{1,64}")
REPORT_KEY_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
# The card network's own answer, optional: a brand as providers spell it (visa, mastercard,
# amex, ...) and the network's short codes (Mastercard advice "03", Visa decline "05", "R1").
CARD_BRAND_RE = re.compile(r"[A-Za-z_ ]{1,32}")
NETWORK_CODE_RE = re.compile(r"[A-Za-z0-9]{1,4}")

DECIDE_FIELDS = ("invoice_id", "failure_code", "attempt", "prior_failures", "card_brand", "network_advice_code",
                 "network_decline_code")
OUTCOME_FIELDS = ("outcome", "report_key")
REPORTABLE_OUTCOMES = ("paid", "not_paid")


class BodyRefused(Exception):
    """A body that fails a gate. `gate` and `reason` go to the refusal row; `field` and
    `constraint` to the 422 body. Nothing here ever carries the rejected value."""

    def __init__(self, *, status: int, gate: str, reason: str, detail: str, field: str = "",
                 constraint: str = "", fields: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.status = status
        self.gate = gate
        self.reason = reason
        self.detail = detail
        self.field = field
        self.constraint = constraint
        self.fields = fields

    def extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.field:
            out["field"] = self.field
            out["constraint"] = self.constraint
        if self.fields:
            out["fields"] = list(self.fields)
        return out


@dataclass(frozen=True)
class DecideInput:
    invoice_id: str
    failure_code: str
    attempt: int
    prior_failures: int
    card_brand: str | None = None
    network_advice_code: str | None = None
    network_decline_code: str | None = None


def _field_error(field: str, constraint: str, reason: str = "invalid_field") -> BodyRefused:
    return BodyRefused(status=422, gate="fields", reason=reason, field=field, constraint=constraint,
                       detail=f"{field}: {constraint}")


def parse_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or a 413/400 refusal (paypilot.jsonlimits: depth checked
    before parsing, duplicate keys, NaN/Infinity and invalid UTF-8 refused)."""
    try:
        return json_object_strict(body, limit_bytes=MAX_BODY_BYTES)
    except JsonRefused as refused:
        raise BodyRefused(status=refused.status, gate="size" if refused.status == 413 else "parse",
                          reason=refused.reason, detail=refused.detail) from None


def require_json(content_type: str | None) -> None:
    """415 unless the body is declared `application/json` (text/plain was accepted)."""
    if not media_type_is_json(content_type):
        raise BodyRefused(status=415, gate="content_type", reason=REASON_UNSUPPORTED_MEDIA_TYPE,
                          detail="Content-Type must be application/json")


def body_too_large() -> BodyRefused:
    return BodyRefused(status=413, gate="size", reason="body_too_large",
                       detail=f"the body is larger than {MAX_BODY_BYTES} bytes")


def refuse_unknown(data: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(k for k in data if k not in allowed)
    if unknown:
        # The names are echoed (they are the reason), cut short so a key cannot smuggle text.
        names = tuple(name[:64] for name in unknown[:10])
        raise BodyRefused(status=422, gate="fields", reason="unknown_field", field=names[0],
                          constraint="unknown_field", fields=names,
                          detail=f"unknown field(s): {', '.join(names)}; allowed: {', '.join(allowed)}")


def _pattern(data: dict[str, Any], field: str, regex: re.Pattern[str], shown: str) -> str:
    if field not in data:
        raise _field_error(field, "required", "missing_field")
    value = data[field]
    if not isinstance(value, str):
        raise _field_error(field, "must be a string")
    if regex.fullmatch(value) is None:
        raise _field_error(field, f"must match {shown}")
    return value


def _integer(data: dict[str, Any], field: str, low: int, high: int, default: int) -> int:
    if field not in data:
        return default
    value = data[field]
    # bool is a subclass of int: true would otherwise pass as 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _field_error(field, "must be an integer (booleans refused)")
    if not low <= value <= high:
        raise _field_error(field, f"must be between {low} and {high}")
    return value


def decide_input(data: dict[str, Any]) -> DecideInput:
    refuse_unknown(data, DECIDE_FIELDS)
    return DecideInput(
        invoice_id=_pattern(data, "invoice_id", INVOICE_ID_RE, "[A-Za-z0-9_-]{1,64}"),
        failure_code=_pattern(data, "failure_code", FAILURE_CODE_RE, "[a-z0-9_]{1,64}"),
        attempt=_integer(data, "attempt", 1, 50, 1),
        prior_failures=_integer(data, "prior_failures", 0, 50, 0),
        card_brand=_optional_pattern(data, "card_brand", CARD_BRAND_RE, "[A-Za-z_ ]{1,32}"),
        network_advice_code=_optional_pattern(data, "network_advice_code", NETWORK_CODE_RE, "[A-Za-z0-9]{1,4}"),
        network_decline_code=_optional_pattern(data, "network_decline_code", NETWORK_CODE_RE, "[A-Za-z0-9]{1,4}"),
    )


def _optional_pattern(data: dict[str, Any], field: str, regex: re.Pattern[str], shown: str) -> str | None:
    """Absent or null: None. Otherwise as `_pattern`."""
    if data.get(field) is None:
        return None
    return _pattern(data, field, regex, shown)


def outcome_input(data: dict[str, Any]) -> tuple[str, str]:
    refuse_unknown(data, OUTCOME_FIELDS)
    if "outcome" not in data:
        raise _field_error("outcome", "required", "missing_field")
    outcome = data["outcome"]
    if not isinstance(outcome, str) or outcome not in REPORTABLE_OUTCOMES:
        raise _field_error("outcome", "must be one of paid, not_paid (unknown cannot be reported)")
    report_key = _pattern(data, "report_key", REPORT_KEY_RE, "[A-Za-z0-9_.:-]{1,128}")
    return outcome, report_key
