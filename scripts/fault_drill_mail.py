"""The fault drill's email provider: an EMAIL_BACKEND that is slow and fails the ways real
ones do, and keeps the provider's own log (one fsync'd line per accepted message).

Used only by `scripts/fault_drill.py` (it puts `scripts/` on PYTHONPATH and sets
EMAIL_BACKEND=fault_drill_mail.DrillBackend). Environment:
- DRILL_OUTBOX: the provider's log; a line "<paypilot_send id> <recipient>" per acceptance;
- DRILL_MAIL_DELAY_MS: "low,high", a random wait before and another after the acceptance
  (the network both ways), so a SIGKILL can land before, during and after it;
- DRILL_MAIL_TRANSIENT: share of calls refused before anything is accepted (the server hung
  up: safe to retry);
- DRILL_MAIL_LOST_ANSWER: share of calls accepted whose answer is lost (a read timeout as
  anymail reports it: the message went out, the caller cannot know).
"""

from __future__ import annotations

import os
import random
import smtplib
import time
from typing import Any

import requests
from anymail.exceptions import AnymailRequestsAPIError
from django.core.mail.backends.base import BaseEmailBackend

_rng = random.Random(f"{os.environ.get('DRILL_SEED', '0')}-{os.getpid()}-{time.time_ns()}")


def _delay() -> None:
    low, _, high = os.environ.get("DRILL_MAIL_DELAY_MS", "0,0").partition(",")
    time.sleep(_rng.uniform(float(low), float(high or low)) / 1000)


def _accept(line: str) -> None:
    fd = os.open(os.environ["DRILL_OUTBOX"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())  # one small O_APPEND write: never interleaved
        os.fsync(fd)
    finally:
        os.close(fd)


class ReadTimeoutError(AnymailRequestsAPIError, requests.exceptions.ReadTimeout):
    """What anymail raises when the provider took the request and the answer timed out."""


class DrillBackend(BaseEmailBackend):
    def send_messages(self, email_messages: Any) -> int:
        sent = 0
        for message in email_messages:
            _delay()
            if _rng.random() < float(os.environ.get("DRILL_MAIL_TRANSIENT", "0")):
                raise smtplib.SMTPServerDisconnected("drill: connection closed before DATA")
            send_id = getattr(message, "metadata", {}).get("paypilot_send", "?")
            _accept(f"{send_id} {','.join(message.to)}\n")
            if _rng.random() < float(os.environ.get("DRILL_MAIL_LOST_ANSWER", "0")):
                raise ReadTimeoutError("drill: accepted, answer lost")
            _delay()
            sent += 1
        return sent
