"""`manage.py run_workers`: one django-q2 cluster, restarted when it dies, stopped cleanly on INT or TERM.

Why not `qcluster` straight from the Procfile: a process manager (honcho, systemd's default
KillMode) signals the whole process group, and django-q2 leaves SIGTERM at its default in
the sentinel and the worker processes, so they died mid-task while the cluster's main
process, its sentinel gone, hung in its own stop until it was SIGKILLed ("sending SIGKILL to
worker.1"). Here the cluster runs in a session of its own, so a group signal reaches only
this supervisor, which passes one SIGTERM to the cluster's main process: django-q2's own
stop then stops the pusher (no new task is taken), lets every worker finish the task in
hand and the few already handed to it (`queue_limit` = workers), acknowledges them and
exits. A cluster still running after the grace period (a task longer than the grace) is
killed; its unacknowledged tasks stay in the queue and are handed out again after the
`retry` delay, so nothing is lost, and a task cut short rolled back its own transaction.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """In the cluster's process, before exec: Linux sends it SIGTERM should this supervisor
    itself be killed, so a SIGKILLed supervisor never leaves an orphaned cluster behind."""
    os.setsid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the setsid alone
        pass


class _Stop:
    """Set from a signal handler: a plain attribute, no lock a handler could wait on."""

    requested = False

    def set(self, *_: Any) -> None:
        self.requested = True

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking early when a stop is asked for; True if it was."""
        deadline = time.monotonic() + seconds
        while not self.requested and time.monotonic() < deadline:
            time.sleep(min(0.1, max(deadline - time.monotonic(), 0)))
        return self.requested


class Command(BaseCommand):
    help = ("Run the django-q2 cluster (manage.py qcluster), start it again when it dies, and on INT or TERM "
            "let its workers finish the task in hand and exit within the grace period.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--restart", type=int,
                            default=int(os.environ.get("PAYPILOT_WORKER_RESTART") or 30),
                            help="seconds before a cluster that died is started again (default "
                                 "PAYPILOT_WORKER_RESTART or 30)")
        parser.add_argument("--grace", type=float, default=settings.PAYPILOT_WORKER_STOP_GRACE,
                            help="seconds a stopping cluster may take before it is killed "
                                 "(default PAYPILOT_WORKER_STOP_GRACE)")

    def handle(self, *args: Any, restart: int, grace: float, **options: Any) -> None:
        if restart < 1:
            raise CommandError("--restart must be at least 1 second")
        if grace <= 0:
            raise CommandError("--grace must be positive")
        stop = _Stop()
        signal.signal(signal.SIGTERM, stop.set)
        signal.signal(signal.SIGINT, stop.set)
        command = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "qcluster"]
        while not stop.requested:
            cluster = subprocess.Popen(command, cwd=settings.BASE_DIR, preexec_fn=_die_with_parent)  # noqa: PLW1509
            status = self._wait(cluster, stop)
            if status is None:  # asked to stop
                self._exit(self._stop(cluster, grace))
            self.stderr.write(f"qcluster exited with status {status}; starting it again in {restart} s")
            stop.wait(restart)
        self._exit(0)

    def _exit(self, status: int) -> None:
        """Leave at once: this process holds nothing to clean up, and tearing down a loaded
        Django interpreter took seconds of CPU on a busy machine, eating into the grace
        period the process manager gives before its SIGKILL."""
        self.stdout.flush()
        self.stderr.flush()
        os._exit(status)

    @staticmethod
    def _wait(cluster: subprocess.Popen[bytes], stop: _Stop) -> int | None:
        """The cluster's exit status, or None as soon as a stop is asked for."""
        while not stop.wait(0.2):
            status = cluster.poll()
            if status is not None:
                return status
        return None

    def _stop(self, cluster: subprocess.Popen[bytes], grace: float) -> int:
        """One SIGTERM to the cluster's main process (django-q2's orderly stop), then wait."""
        started = time.monotonic()
        try:
            cluster.send_signal(signal.SIGTERM)
            cluster.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.stderr.write(f"qcluster still running after {grace:g} s: killed; its unfinished tasks "
                              "are handed out again after the retry delay")
            try:
                os.killpg(cluster.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            cluster.wait()
            return 1
        self.stderr.write(f"qcluster stopped in {time.monotonic() - started:.1f} s")
        return 0
