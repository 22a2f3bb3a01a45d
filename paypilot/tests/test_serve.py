"""`manage.py serve`: web and workers start together and one signal stops every process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid`, read from /proc (children of children included)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in parents.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def served(tmp_path):
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path / 'serve.sqlite3'}", REDIS_URL="",
               DJANGO_SETTINGS_MODULE="paypilot.settings")
    env.pop("PYTEST_CURRENT_TEST", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=300)
    port = _free_port()
    leader = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline or leader.poll() is not None:
            leader.kill()
            pytest.fail("manage.py serve did not answer /health within 60 s")
        time.sleep(0.3)
    time.sleep(2)  # let qcluster fork its worker processes too
    yield leader
    for pid in _descendants(leader.pid) | {leader.pid}:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("how", ["int_to_group", "term_to_leader"])
def test_one_signal_stops_web_and_workers_with_status_zero(served, how):
    processes = _descendants(served.pid)
    assert len(processes) >= 3, "expected the web server, the cluster and its workers"
    if how == "int_to_group":  # what Ctrl-C in a terminal does
        os.killpg(served.pid, signal.SIGINT)
    else:  # what a process manager or `kill` does
        served.send_signal(signal.SIGTERM)
    assert served.wait(timeout=20) == 0
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in processes if _alive(pid)], "processes left running after the stop"
