"""The last line of defence on every PayPilot log line: personal values never reach stderr.

Callers already log ids and reason codes only; this filter, on the one stderr handler,
catches what slips through: e-mail addresses in a message become their salted hash
(`pii_hash`), and `extra=` fields outside the audit allowlist are dropped.
"""

from __future__ import annotations

import logging
import re

_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}")
# Attributes every LogRecord has; anything else came from `extra=`.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class PiiLogFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # Imported here: logging is configured while settings load, before the apps are.
        from paypilot.services import AUDIT_DETAIL_ALLOWLIST, pii_hash

        message = record.getMessage()
        redacted = _EMAIL.sub(lambda m: f"<email:{pii_hash(m.group(0).lower())[:12]}>", message)
        if redacted != message:
            record.msg, record.args = redacted, None
        for key in [k for k in vars(record) if k not in _STANDARD and k not in AUDIT_DETAIL_ALLOWLIST]:
            delattr(record, key)
        return True


class RequestErrorFilter(logging.Filter):
    """On `django.request` (a 5xx with its traceback): names the request id in the message,
    so a server error can be found from the `X-Request-ID` the caller got, and redacts
    e-mail addresses in the traceback text too (an IntegrityError's DETAIL can hold one).
    Runs before PiiLogFilter, which then drops the `request` extra."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        request_id = getattr(request, "request_id", "") or "-"
        record.msg, record.args = f"{record.getMessage()} request_id={request_id}", None
        if record.exc_info and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = _EMAIL.sub("<email>", text)
        return True
