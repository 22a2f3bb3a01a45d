"""Input rules of `POST /payment-failed` (+ batch): each refusal names field and constraint.

The constraints follow the seeds' request schema (customer_id, amount in major units,
currency, failure_code matching `^[a-z_]+$` with 1-40 characters per
`facts/failure_codes.json`, attempt) plus the optional customer fields. A 422 never echoes
the refused value. A malformed `locale` is not refused: it resolves to English, as the
catalogue does for any tag it cannot serve.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from dunning.pipeline import RecoveryInput
from ledger.money import REASON_CURRENCY_UNKNOWN, currency_known, to_minor
from paypilot.api import ApiError

MAX_BATCH = 50
MAX_ATTEMPT = 50
MAX_AMOUNT = Decimal("1000000000")  # major units; larger is a unit mistake, not a payment
_CUSTOMER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_CURRENCY = re.compile(r"[A-Za-z]{3}")
_FAILURE_CODE = re.compile(r"^[a-z_]{1,40}$")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,189}\.[^@\s]{2,}$")
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
REQUIRED = ("customer_id", "amount", "currency", "failure_code")
OPTIONAL_TEXT = {"customer_name": 200, "customer_email": 254, "plan": 100, "locale": 35}
FIELDS = frozenset((*REQUIRED, "attempt", *OPTIONAL_TEXT))


def refuse(field: str, constraint: str, detail: str) -> ApiError:
    return ApiError(422, "invalid_input", detail, field=field, constraint=constraint)


def _text(data: dict[str, Any], name: str, prefix: str) -> str:
    value = data.get(name, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise refuse(prefix + name, "type", f"{name} must be a string")
    if len(value) > OPTIONAL_TEXT.get(name, 128):
        raise refuse(prefix + name, "max_length", f"{name} is longer than {OPTIONAL_TEXT.get(name, 128)} characters")
    return value


def _amount(value: Any, currency: str, prefix: str) -> int:
    field = prefix + "amount"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise refuse(field, "type", "amount must be a number in major units")
    try:
        # str() first: a JSON 19.99 arrives as a float and must not carry its binary error.
        major = Decimal(str(value))
    except InvalidOperation:
        raise refuse(field, "type", "amount must be a number in major units") from None
    if not major.is_finite() or major <= 0:
        raise refuse(field, "gt_zero", "amount must be greater than zero")
    if major > MAX_AMOUNT:
        raise refuse(field, "max_value", "amount is larger than 1,000,000,000")
    try:
        return to_minor(major.normalize(), currency)
    except ValueError:
        raise refuse(field, "decimal_places", "amount has more decimals than the currency allows") from None


def payment_failed_input(data: Any, *, prefix: str = "") -> RecoveryInput:
    """One event body -> RecoveryInput, or ApiError(422) naming the field and constraint."""
    if not isinstance(data, dict):
        raise refuse(prefix.rstrip(".") or "body", "type", "the body must be a JSON object")
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        # The unknown key's name is the caller's text: say only that there is one.
        raise refuse(prefix + "body", "unknown_field", f"only these fields are accepted: {', '.join(sorted(FIELDS))}")
    for name in REQUIRED:
        if data.get(name) in (None, ""):
            raise refuse(prefix + name, "required", f"{name} is required")
    customer_id = data["customer_id"]
    if not isinstance(customer_id, str) or not _CUSTOMER_ID.match(customer_id):
        raise refuse(prefix + "customer_id", "pattern", "customer_id must match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
    currency = data["currency"]
    if not isinstance(currency, str) or not _CURRENCY.fullmatch(currency):
        raise refuse(prefix + "currency", "pattern", "currency must be a three-letter ISO 4217 code")
    if not currency_known(currency):  # XXX is "no currency", QQQ none at all
        raise refuse(prefix + "currency", REASON_CURRENCY_UNKNOWN, "currency is not a payable ISO 4217 currency")
    failure_code = data["failure_code"]
    if not isinstance(failure_code, str) or not _FAILURE_CODE.match(failure_code):
        raise refuse(prefix + "failure_code", "pattern", "failure_code must match ^[a-z_]+$ (1-40 characters)")
    attempt = data.get("attempt", 1)
    if isinstance(attempt, bool) or not isinstance(attempt, int):
        raise refuse(prefix + "attempt", "type", "attempt must be an integer")
    if not 1 <= attempt <= MAX_ATTEMPT:
        raise refuse(prefix + "attempt", "range", f"attempt must be between 1 and {MAX_ATTEMPT}")
    email = _text(data, "customer_email", prefix)
    if email and not _EMAIL.match(email):
        raise refuse(prefix + "customer_email", "format", "customer_email must be an email address")
    return RecoveryInput(
        customer_id=customer_id,
        amount_minor=_amount(data["amount"], currency, prefix),
        currency=currency.upper(),
        failure_code=failure_code,
        attempt=attempt,
        customer_name=_text(data, "customer_name", prefix),
        customer_email=email,
        plan=_text(data, "plan", prefix),
        locale=_text(data, "locale", prefix),
    )


def batch_input(data: Any) -> list[RecoveryInput]:
    if not isinstance(data, dict) or set(data) != {"events"}:
        raise refuse("body", "shape", 'the body must be {"events": [...]}')
    events = data["events"]
    if not isinstance(events, list):
        raise refuse("events", "type", "events must be a list")
    if not 1 <= len(events) <= MAX_BATCH:
        raise refuse("events", "length", f"events must hold 1 to {MAX_BATCH} items")
    return [payment_failed_input(item, prefix=f"events[{i}].") for i, item in enumerate(events)]


def idempotency_key(raw: str | None) -> str | None:
    if raw is None:
        return None
    if not _IDEMPOTENCY_KEY.match(raw):
        raise refuse("Idempotency-Key", "format", "Idempotency-Key must be 1-255 printable ASCII characters")
    return raw
