"""GDPR export and erasure of a long-standing customer: seconds and peak memory, per database.

Builds a fresh database (a new SQLite file; on PostgreSQL the database of `--postgres`,
dropped and re-created, used as its owner role, and analysed after the load), bulk-writes one subject with 10,000
invoices and everything around each one (transitions, decisions, drafts, approvals, sends,
a webhook body naming them, an orders export's row, an audit event: operations/tests/volume.py)
among 1,000,000 other customers' invoices in the same tenant, then runs `gdpr_export` and
`gdpr_erase` each in a process of its own. For each it prints the wall seconds of the
command itself, the process's CPU seconds, and its peak resident memory (the whole process:
Python and Django included, `ru_maxrss`), with the load average (the machine may be shared).
`--scale 0.01` makes a quick run (100 invoices among 10,000). The first line times a fixed
Python loop (bench/_machine.py): the machine's speed when the figures were taken.

Usage: .venv/bin/python bench/gdpr.py [--db sqlite|postgres|both] [--scale 1.0]
       [--postgres postgres://postgres@127.0.0.1:5432/pp_30a]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBJECT_INVOICES = 10_000
OTHER_INVOICES = 1_000_000
TENANT = "bench"
SUBJECT_TAG = "longest"


def _django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    import django

    django.setup()


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(scale: float) -> None:
    _django()
    from operations.tests.factories import person
    from operations.tests.volume import long_history, other_customers
    from paypilot.services import tenant_create

    started = time.perf_counter()
    tenant = tenant_create(slug=TENANT, name="Bench")
    subject = person(SUBJECT_TAG)
    long_history(tenant, subject, invoices=max(1, int(SUBJECT_INVOICES * scale)))
    other_customers(tenant, invoices=max(1, int(OTHER_INVOICES * scale)))
    from django.db import connection

    if connection.vendor == "postgresql":
        # A live database has statistics (autovacuum gathers them within a minute of a bulk
        # load); without them the planner guesses and reads a million-row table for 2,000 keys.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(f"  generated in {time.perf_counter() - started:.1f} s; subject {subject.email}", flush=True)


def step(name: str, email: str, out: str) -> None:
    """One command in this process: its own seconds, CPU seconds and this process's peak memory."""
    _django()
    from io import StringIO

    from django.core.management import call_command

    args = ["--tenant", TENANT, "--email", email]
    args += ["--output", out] if name == "gdpr_export" else []
    baseline = _peak_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    stdout = StringIO()
    call_command(name, *args, stdout=stdout, stderr=StringIO())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    first = stdout.getvalue().splitlines()[0] if stdout.getvalue() else f"{Path(out).stat().st_size:,} bytes written"
    print(f"  {name:12s} {wall:6.2f} s wall, {cpu:6.2f} s CPU, peak {_peak_mb():6.1f} MB "
          f"(after setup {baseline:.1f} MB), load {os.getloadavg()[0]:.2f}: {first}", flush=True)


def _child(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, __file__, *args], env=env, check=True, cwd=ROOT)


def _fresh_postgres(url: str) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def run(db: str, scale: float, postgres: str, work: Path) -> None:
    env = {**os.environ, "PAYPILOT_PII_SALT": os.environ.get("PAYPILOT_PII_SALT", "bench-salt")}
    if db == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{work / 'gdpr.sqlite3'}"
    else:
        _fresh_postgres(postgres)
        env["DATABASE_URL"] = postgres
    print(f"{db}: {int(SUBJECT_INVOICES * scale):,} invoices of one subject among "
          f"{int(OTHER_INVOICES * scale):,} others", flush=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    _child(env, "--generate", "--scale", str(scale))
    email = f"{SUBJECT_TAG.title()}ette.{SUBJECT_TAG}@example.org".lower()
    _child(env, "--step", "gdpr_export", "--email", email, "--out", str(work / "export.json"))
    _child(env, "--step", "gdpr_erase", "--email", email, "--out", "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--scale", type=float, default=1.0, help="1.0: 10,000 invoices among 1,000,000")
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/pp_30a")
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--email", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.generate:
        return generate(options.scale)
    if options.step:
        return step(options.step, options.email, options.out)
    sys.path.insert(0, str(ROOT / "bench"))
    from _machine import speed_line

    print(speed_line(), flush=True)
    with tempfile.TemporaryDirectory() as work:
        for db in (["sqlite", "postgres"] if options.db == "both" else [options.db]):
            run(db, options.scale, options.postgres, Path(work))


if __name__ == "__main__":
    main()
