"""Run only by test_clock_shift.py, in a child pytest: each test records the clock it sees."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, date, datetime

import pytest
from django.utils import timezone

FROZEN_AT = datetime(2030, 1, 2, 3, 4, tzinfo=UTC)


def _record(name: str) -> None:
    seen = {"test": name, "now": datetime.now(UTC).isoformat(), "django_now": timezone.now().isoformat(),
            "today": date.today().isoformat(), "time": time.time()}
    with open(os.environ["CLOCK_PROBE_OUT"], "a", encoding="utf-8") as out:
        out.write(json.dumps(seen) + "\n")


def test_default_clock() -> None:
    _record("default")


@pytest.mark.real_clock
def test_real_clock() -> None:
    _record("real")


@pytest.mark.frozen_clock(FROZEN_AT)
def test_frozen_clock() -> None:
    time.sleep(0.05)  # frozen, not ticking: the clock does not move while the test runs
    _record("frozen")
