"""`manage.py serve`: the web server and the django-q2 cluster from the Procfile, under honcho."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from honcho import manager as honcho_manager
from honcho.environ import expand_processes, parse_procfile
from honcho.manager import SIGNALS, Manager

PROCFILE = Path(settings.BASE_DIR) / "Procfile"


class Command(BaseCommand):
    help = ("Start every process of the Procfile (granian web server and qcluster workers) under honcho. "
            "One INT or TERM stops them all; exit status 0 after a requested stop.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--procfile", default=str(PROCFILE))
        parser.add_argument("--worker-restart", type=int, default=30,
                            help="seconds before a worker that died is started again (default 30)")

    def handle(self, *args: Any, host: str, port: int, procfile: str, worker_restart: int,
               **options: Any) -> None:
        try:
            processes = parse_procfile(Path(procfile).read_text()).processes
        except OSError as exc:
            raise CommandError(f"cannot read the Procfile: {exc}") from exc
        if not processes:
            raise CommandError(f"{procfile} names no process")
        if worker_restart < 1:
            raise CommandError("--worker-restart must be at least 1 second")
        env = dict(os.environ, PAYPILOT_PY=sys.executable, PAYPILOT_HOST=host, PAYPILOT_PORT=str(port),
                   PAYPILOT_WORKER_RESTART=str(worker_restart), PYTHONUNBUFFERED="1")
        manager = Manager()
        # Each process runs in its own session (honcho's default): a Ctrl-C reaches only this
        # leader, which stops every process group with TERM, then KILL after KILL_WAIT
        # seconds. So no worker is ever signalled twice or left behind. The worker stops by
        # itself within PAYPILOT_WORKER_STOP_GRACE (run_workers); the KILL is only for a
        # process that hangs, so honcho waits a little longer than that grace.
        honcho_manager.KILL_WAIT = max(honcho_manager.KILL_WAIT,  # type: ignore[attr-defined]
                                       int(settings.PAYPILOT_WORKER_STOP_GRACE) + 2)
        for params in expand_processes(processes, env=env):
            manager.add_process(params.name, params.cmd, quiet=params.quiet, env=params.env,
                                cwd=str(settings.BASE_DIR))
        manager.loop()
        requested = {info["rc"] for info in SIGNALS.values()}
        # Stopped on request: a clean exit. A process that died on its own stopped the rest
        # and its status is passed on, so a supervisor sees the failure.
        sys.exit(0 if manager.returncode in requested else (manager.returncode or 0))
