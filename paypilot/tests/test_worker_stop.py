"""A worker told to stop mid-drain finishes the tasks in hand and exits by itself: no SIGKILL,
and over stops and restarts every task runs exactly once (counted in the database)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paypilot.tests.drain_tasks import EVENT
from paypilot.tests.test_serve import ROOT, _alive, _descendants, _free_port

TASKS = 40
TASK_SECONDS = 0.3


def _counts(db: Path) -> tuple[list[int], int, int]:
    """(task numbers that ran, queue rows left, queue rows hidden as taken by a worker)."""
    with sqlite3.connect(db, timeout=30) as conn:
        ran = [int(n) for (n,) in conn.execute(
            "SELECT json_extract(detail, '$.count') FROM paypilot_auditevent WHERE event = ?", [EVENT])]
        queued = conn.execute("SELECT COUNT(*) FROM django_q_ormq").fetchone()[0]
        # A task handed to a worker is hidden until now + retry; one left so was cut short.
        hidden = conn.execute("SELECT COUNT(*) FROM django_q_ormq WHERE lock > strftime('%Y-%m-%d %H:%M:%f', 'now')"
                              ).fetchone()[0]
    return ran, queued, hidden


def _until(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def site(tmp_path):  # type: ignore[no-untyped-def]
    db = tmp_path / "drain.sqlite3"
    env = {key: value for key, value in os.environ.items()
           if key not in {"PAYPILOT_TESTING", "REDIS_URL", "PYTEST_CURRENT_TEST"}}
    env.update(DATABASE_URL=f"sqlite:///{db}", DJANGO_SETTINGS_MODULE="paypilot.settings",
               PAYPILOT_WORKER_STATS_DIR=str(tmp_path / "stats"), PAYPILOT_Q_WORKERS="2", PAYPILOT_Q_SYNC="false")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True,
                   timeout=300)
    subprocess.run([sys.executable, "manage.py", "shell", "-c",
                    "from django_q.tasks import async_task\n"
                    f"for n in range({TASKS}): async_task('paypilot.tests.drain_tasks.drain_task', n, {TASK_SECONDS})"],
                   cwd=ROOT, env=env, check=True, timeout=120, capture_output=True)
    started: list[subprocess.Popen] = []  # type: ignore[type-arg]
    yield db, env, tmp_path, started
    for process in started:
        for pid in _descendants(process.pid) | {process.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _serve(env, tmp_path, started, n):  # type: ignore[no-untyped-def]
    """`manage.py serve` as `make run` starts it (the real Procfile: granian and the worker)."""
    log = tmp_path / f"serve-{n}.log"
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(_free_port()), "--worker-restart", "5"],
        cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    started.append(process)
    return process, log


def _stop_mid_drain(db, env, tmp_path, started, n, how):  # type: ignore[no-untyped-def]
    before = len(_counts(db)[0])
    process, log = _serve(env, tmp_path, started, n)
    assert _until(lambda: len(_counts(db)[0]) >= before + 6, 120), "the worker did not start draining"
    ran, queued, _ = _counts(db)
    assert queued > 0, "the backlog drained before the stop: nothing was stopped mid-drain"
    processes = _descendants(process.pid)
    asked = time.monotonic()
    if how == "ctrl_c":  # Ctrl-C in the terminal of `make run`
        os.killpg(process.pid, signal.SIGINT)
    else:  # a process manager's TERM to the leader
        process.send_signal(signal.SIGTERM)
    status = process.wait(timeout=60)
    took = time.monotonic() - asked
    output = log.read_text(errors="replace")
    print(f"{how}: serve exited {status} {took:.1f} s after the signal")  # timing is printed, not asserted
    print("\n".join(line for line in output.splitlines() if "system" in line or "qcluster" in line))
    assert status == 0, output
    assert "SIGKILL" not in output, output  # honcho never had to kill the worker
    assert "qcluster stopped in" in output and "still running" not in output, output
    assert _until(lambda: not [pid for pid in processes if _alive(pid)], 10), "processes left after the stop"
    ran, queued, hidden = _counts(db)
    assert sorted(set(ran)) == sorted(ran), "a task ran twice"
    assert len(ran) + queued == TASKS, "a task was lost"
    assert hidden == 0, "a task was taken and neither finished nor put back"
    return len(ran)


@pytest.mark.parametrize("first, second", [("ctrl_c", "term")])
def test_stop_mid_drain_finishes_in_hand_tasks_and_loses_none(site, first, second):  # type: ignore[no-untyped-def]
    db, env, tmp_path, started = site
    done = _stop_mid_drain(db, env, tmp_path, started, 1, first)
    assert done < TASKS
    _stop_mid_drain(db, env, tmp_path, started, 2, second)
    # A last restart drains the rest: every task ran, each exactly once.
    process, _ = _serve(env, tmp_path, started, 3)
    assert _until(lambda: _counts(db)[1] == 0, 120), "the backlog was not drained after the restart"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    ran, queued, _ = _counts(db)
    assert sorted(ran) == list(range(TASKS)) and queued == 0
