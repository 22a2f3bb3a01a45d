"""scripts/fault_sqlite_readonly.py, run as a test: a SQLite file made read-only answers
JSON 503s with Retry-After (writes, webhooks, /health) and takes writes again at once when
it is writable again (issue 18 measured 60 s). Its own process: it needs a file database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fault_sqlite_readonly.py"


def test_sqlite_read_only_then_writable_recovers_within_seconds() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, env=env)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    if "skipped" in figures:
        pytest.skip(figures["skipped"])
    assert done.returncode == 0 and figures["ok"], figures
    read_only = figures["read_only"]
    assert read_only["health"] == 503
    assert read_only["payment_failed"][:2] == [503, "database_unavailable"]
    assert read_only["webhook"][0] == 503 and read_only["webhook"][2] == "database_unavailable"
    assert figures["after"]["seconds_until_write_accepted"] < 5
