"""PAYPILOT_TEST_CLOCK_SHIFT_DAYS moves every test's clock ahead; real_clock and frozen_clock
tests keep theirs (the hook is in the root conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from paypilot.tests.clock_probe import FROZEN_AT

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("clock_probe.py")


def _probe(tmp_path: Path, shift: str | None) -> dict[str, dict[str, object]]:
    """Run the probe module in a child pytest (its own conftest, its own environment)."""
    out = tmp_path / "seen.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "PAYPILOT_TEST_CLOCK_SHIFT_DAYS"}
    env["CLOCK_PROBE_OUT"] = str(out)
    if shift is not None:
        env["PAYPILOT_TEST_CLOCK_SHIFT_DAYS"] = shift
    done = subprocess.run([sys.executable, "-m", "pytest", str(PROBE), "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return {row["test"]: row for row in map(json.loads, out.read_text().splitlines())}


def _days_from_real_now(row: dict[str, object], key: str = "now") -> float:
    return (datetime.fromisoformat(str(row[key])) - datetime.now(UTC)) / timedelta(days=1)


@pytest.fixture(scope="module")
def shifted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    return _probe(tmp_path_factory.mktemp("shifted"), "400")


# The parent compares the child's clock with the real one: it must itself run on the real clock.
@pytest.mark.real_clock
def test_the_shift_moves_every_clock_a_test_reads(shifted: dict[str, dict[str, object]]) -> None:
    seen = shifted["default"]
    assert 399.9 < _days_from_real_now(seen) < 400.1
    assert 399.9 < _days_from_real_now(seen, "django_now") < 400.1
    assert 399.9 < (float(str(seen["time"])) - time.time()) / 86400 < 400.1
    assert date.fromisoformat(str(seen["today"])) - datetime.now(UTC).date() in (timedelta(days=400),
                                                                                 timedelta(days=399))


@pytest.mark.real_clock
def test_real_clock_and_frozen_clock_tests_keep_their_clock_under_the_shift(
        shifted: dict[str, dict[str, object]]) -> None:
    seen = shifted
    assert abs(_days_from_real_now(seen["real"])) < 0.1
    assert datetime.fromisoformat(str(seen["frozen"]["now"])) == FROZEN_AT
    assert datetime.fromisoformat(str(seen["frozen"]["django_now"])) == FROZEN_AT


@pytest.mark.real_clock
def test_without_the_shift_tests_run_today(tmp_path: Path) -> None:
    seen = _probe(tmp_path, None)
    assert abs(_days_from_real_now(seen["default"])) < 0.1
    assert datetime.fromisoformat(str(seen["frozen"]["now"])) == FROZEN_AT


def test_a_bad_shift_is_a_usage_error(tmp_path: Path) -> None:
    env = {**os.environ, "PAYPILOT_TEST_CLOCK_SHIFT_DAYS": "a year", "CLOCK_PROBE_OUT": str(tmp_path / "x")}
    done = subprocess.run([sys.executable, "-m", "pytest", str(PROBE), "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "PAYPILOT_TEST_CLOCK_SHIFT_DAYS must be a number of days" in done.stdout + done.stderr


def test_every_real_clock_test_is_listed_with_its_reason_in_docs_testing() -> None:
    doc = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    marked = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.glob("*/tests/**/test_*.py")
                    if "pytest.mark.real_clock" in path.read_text(encoding="utf-8"))
    assert "paypilot/tests/test_health_workers.py" in marked
    assert [path for path in marked if f"`{path}" not in doc] == []
