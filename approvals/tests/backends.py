"""Email backends for tests: the EMAIL_BACKEND seam, failing the way real transports do."""

from __future__ import annotations

import smtplib
from typing import Any

from django.core.mail.backends.base import BaseEmailBackend

calls: list[str] = []


class TransientFailureBackend(BaseEmailBackend):
    """The server hung up: worth trying again later."""

    def send_messages(self, email_messages: Any) -> int:
        calls.append("transient")
        raise smtplib.SMTPServerDisconnected("connection unexpectedly closed")


class PermanentFailureBackend(BaseEmailBackend):
    """The recipient was refused: trying again cannot help."""

    def send_messages(self, email_messages: Any) -> int:
        calls.append("permanent")
        raise smtplib.SMTPRecipientsRefused({"x@example.com": (550, b"no such user")})


class ReadTimeoutAfterAcceptBackend(BaseEmailBackend):
    """An HTTP provider took the request and its answer never came back (read timeout), as
    anymail reports it: the message may well have gone out."""

    def send_messages(self, email_messages: Any) -> int:
        import requests
        from anymail.exceptions import AnymailRequestsAPIError

        calls.append("accepted_then_timeout")
        error = type("AnymailRequestsAPIError", (AnymailRequestsAPIError, requests.exceptions.ReadTimeout), {})
        raise error("Error posting to https://api.example/email")


class HangingBackend(BaseEmailBackend):
    """A provider call that never returns: marks PAYPILOT_TEST_HANG_MARKER, then waits to be
    killed (the SIGKILL test's worker dies here, after the hand-off)."""

    def send_messages(self, email_messages: Any) -> int:
        import os
        import time
        from pathlib import Path

        Path(os.environ["PAYPILOT_TEST_HANG_MARKER"]).write_text("in the provider call")
        time.sleep(120)
        return 0
