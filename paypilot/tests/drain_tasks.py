"""A task for the clean-stop test: takes a while, then records that it ran (one audit row per run)."""

from __future__ import annotations

import time

from django.db import transaction

from paypilot.services import audit_record

EVENT = "test.drain.task_ran"


def drain_task(number: int, seconds: float) -> int:
    """Work for `seconds`, then record run `number` in one transaction: a run cut short writes nothing."""
    time.sleep(seconds)
    with transaction.atomic():
        audit_record(event=EVENT, detail={"count": number})
    return number
