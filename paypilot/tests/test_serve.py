"""`manage.py serve`: web and workers start together and one signal stops every process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
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


@dataclass
class Served:
    process: subprocess.Popen  # type: ignore[type-arg]
    port: int
    env: dict[str, str]

    @property
    def pid(self) -> int:
        return self.process.pid

    def health(self) -> dict:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return json.loads(exc.read())


@pytest.fixture
def served(tmp_path):
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path / 'serve.sqlite3'}", REDIS_URL="",
               DJANGO_SETTINGS_MODULE="paypilot.settings", PAYPILOT_WORKER_STATS_DIR=str(tmp_path / "stats"),
               PAYPILOT_Q_WORKERS="1")
    env.pop("PYTEST_CURRENT_TEST", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=300)
    port = _free_port()
    leader = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--worker-restart", "5"], cwd=ROOT, env=env,
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
    yield Served(process=leader, port=port, env=env)
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
        served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(timeout=20) == 0
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in processes if _alive(pid)], "processes left running after the stop"


def _qcluster_pids(leader: int) -> list[int]:
    found = []
    for pid in _descendants(leader):
        try:
            command = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"qcluster" in command:
            found.append(pid)
    return found


def _until(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def test_a_killed_worker_shows_in_health_comes_back_and_drains_the_inbox(served):
    assert _until(lambda: served.health()["workers"] == "ok", 60)
    for pid in _qcluster_pids(served.pid):
        os.kill(pid, signal.SIGKILL)
    started = time.monotonic()
    assert _until(lambda: served.health()["workers"] == "none", 60), "the dead worker went unnoticed"
    assert time.monotonic() - started < 60
    assert served.health()["database"] == "ok"  # the web server kept answering

    # Deliveries while the worker is down wait in the inbox; the restarted worker drains them.
    subprocess.run([sys.executable, "manage.py", "tenants", "create", "acme", "--name", "Acme"], cwd=ROOT,
                   env=served.env, check=True, capture_output=True, timeout=120)
    subprocess.run([sys.executable, "manage.py", "demo_webhooks", "--tenant", "acme", "--count", "5", "--url",
                    f"http://127.0.0.1:{served.port}"], cwd=ROOT, env=served.env, check=True,
                   capture_output=True, timeout=120)
    assert _until(lambda: served.health()["workers"] == "ok", 60), "the worker was not started again"

    def drained() -> bool:
        out = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c",
             "from integrations.models import WebhookEvent as E; print(E.objects.filter(status='received').count(),"
             " E.objects.count())"],
            cwd=ROOT, env=served.env, capture_output=True, text=True, timeout=120,
        ).stdout.split()
        return out[-2:] == ["0", "5"]

    assert _until(drained, 90), "events stayed received"
