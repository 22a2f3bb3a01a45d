#!/usr/bin/env python3
"""Scale-out on one machine: 1 web + 1 worker process against 2 + 2, PostgreSQL and Redis.

The production shape of docs/scaling.md in miniature: stateless granian processes (one
worker each, 4 blocking threads) in front of one PostgreSQL, `manage.py qcluster`
processes (one worker each) taking tasks from Redis (REDIS_URL: the Redis broker, enqueue
after commit). Process i is pinned to core i modulo the cores this script may use
(`taskset -c`, from os.sched_getaffinity), so 2 + 2 on a 2-core machine puts one web and
one worker process on each core.

For each shape, on a fresh database and an empty Redis database:
1. acknowledge: one `../shared/bench/httpbench.py` per web process, all at once, each
   sending signed Stripe deliveries with unique ids to its own process; aggregate acks/s
   = the sum of their rates (they run over the same seconds);
2. drain: the web processes stop, the worker processes start together while the queued
   tasks are held aside in Redis (STARTUP_S), then the tasks are put back; deliveries/s
   between the first and the last event processed, and until none is left received.
Both phases also count CPU seconds (user + system) of the web or worker process trees and
of the database's PostgreSQL backends (/proc), deliveries per CPU-second: robust to other
load on the machine, unlike the rates.
Then the drill (2 workers): a fresh inbox, both workers start, one is SIGKILLed (its whole
process group) once a fifth of the inbox is processed; the survivor carries on, and the
sweeper (`integrations.tasks.sweep_webhook_events`, what the cluster's schedule runs, here
run by the script with PAYPILOT_SWEEP_AFTER_MINUTES=0 once nothing moves for 3 s)
re-enqueues what the killed worker had taken from Redis.
Exactly once is counted in the database: every event processed, none with more than one
processing attempt, one invoice per delivery and no invoice id twice.

Usage: .venv/bin/python bench/scale_out.py [--events 1500] [--concurrency 32]
       [--pg-url postgres://postgres@127.0.0.1:5432/pp_scale_bench] [--redis-url redis://127.0.0.1:6379/13]
The database named in --pg-url is dropped and re-created; the Redis database is flushed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import redis

sys.path.insert(0, os.path.dirname(__file__))
from _proc_cpu import _stat, tree_cpu  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PY = str(ROOT / ".venv" / "bin" / "python")
GRANIAN = str(ROOT / ".venv" / "bin" / "granian")
HTTPBENCH = os.environ.get("HTTPBENCH", str(ROOT.parent / "shared" / "bench" / "httpbench.py"))
BODY = ROOT / "bench" / "webhook_stripe_body.json"
SECRET = "whsec_scale_out_" + os.urandom(8).hex()
QUEUE_KEY, HELD_KEY = "django_q:paypilot:q", "django_q:paypilot:held"  # django-q2's Redis list
STARTUP_S = 6.0  # a qcluster's processes are up and idle well within this on this machine
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def pinned(args: list[str], slot: int) -> list[str]:
    """`args` under taskset on core `slot` modulo the usable cores (as is where there is none)."""
    if not CPUS or not Path("/usr/bin/taskset").exists():
        return args
    return ["taskset", "-c", str(CPUS[slot % len(CPUS)]), *args]


class Proc:
    """A child in its own process group, so a kill takes its whole tree (qcluster forks)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log.open("w")
        self.popen = subprocess.Popen(args, env=env, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def signal(self, sig: int) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, sig)  # the group this script created, by its id

    def stop(self, grace: float = 10.0) -> None:
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.popen.wait()
        self.log.close()


def environment(pg_url: str, redis_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "DATABASE_URL": pg_url, "REDIS_URL": redis_url, "DJANGO_SETTINGS_MODULE": "paypilot.settings",
        "DJANGO_DEBUG": "0", "PAYPILOT_RATE_LIMIT_PER_TOKEN": "0", "PAYPILOT_RATE_LIMIT_PER_IP": "0",
        "PAYPILOT_LOG_LEVEL": "WARNING", "PAYPILOT_Q_SYNC": "0", "PAYPILOT_Q_WORKERS": "1",
        "PAYPILOT_HOLDOUT_PCT": "0", "BENCH_STRIPE_SECRET": SECRET,
        "PYTHONPATH": str(ROOT),
    })
    return env


def manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run([PY, "manage.py", *args], env=env, cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


def fresh(pg_url: str, redis_url: str, env: dict[str, str]) -> None:
    admin, name = pg_url.rsplit("/", 1)
    with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    redis.Redis.from_url(redis_url).flushdb()
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "shell", "-v0", "-c",
           'from paypilot.services import tenant_create; tenant_create(slug="bench", name="Bench")')
    manage(env, "webhook_credential", "--tenant", "bench", "--provider", "stripe",
           "--secret-env", "BENCH_STRIPE_SECRET")


def counts(pg_url: str) -> dict[str, Any]:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute("""
            SELECT count(*), count(*) FILTER (WHERE status = 'received'),
                   count(*) FILTER (WHERE status = 'processed'), count(*) FILTER (WHERE status = 'failed'),
                   count(*) FILTER (WHERE attempts > 1),
                   extract(epoch FROM max(processed_at) - min(processed_at))
              FROM integrations_webhookevent""").fetchone()
        ledger = conn.execute("SELECT count(*), count(DISTINCT external_invoice_id) FROM ledger_invoice").fetchone()
    assert row is not None and ledger is not None  # aggregates always return a row
    invoices, distinct = ledger
    return {"events": row[0], "received": row[1], "processed": row[2], "failed": row[3],
            "processed_more_than_once": row[4], "span_s": float(row[5] or 0), "invoices": invoices,
            "duplicate_invoice_ids": invoices - distinct}


def exactly_once(c: dict[str, Any]) -> bool:
    return (c["received"] == 0 and c["failed"] == 0 and c["processed"] == c["events"]
            and c["processed_more_than_once"] == 0 and c["invoices"] == c["events"]
            and c["duplicate_invoice_ids"] == 0)


class CpuMeter:
    """CPU seconds of the given process trees and of the database's PostgreSQL backends, kept
    per pid at their last sample (a killed worker or a closed connection still counts)."""

    def __init__(self, pg_url: str) -> None:
        self.name = pg_url.rsplit("/", 1)[1]
        self.conn = psycopg.connect(pg_url, autocommit=True)
        self.procs: dict[int, float] = {}
        self.backends: dict[int, float] = {}

    def sample(self, roots: list[Proc]) -> None:
        for proc in roots:
            if proc.popen.poll() is None:
                self.procs[proc.popen.pid] = max(self.procs.get(proc.popen.pid, 0.0), tree_cpu(proc.popen.pid)[0])
        for (pid,) in self.conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s "
                                        "AND pid <> pg_backend_pid()", [self.name]).fetchall():
            got = _stat(pid)
            if got:
                self.backends[pid] = max(self.backends.get(pid, 0.0), got[1])

    def baseline(self, roots: list[Proc]) -> None:
        """From here on: what the processes spent starting up is not counted."""
        self.sample(roots)
        self.start = (sum(self.procs.values()), sum(self.backends.values()))

    start = (0.0, 0.0)

    def result(self) -> dict[str, float]:
        self.conn.close()
        return {"process_cpu_s": round(sum(self.procs.values()) - self.start[0], 2),
                "pg_backend_cpu_s": round(sum(self.backends.values()) - self.start[1], 2)}


def wait_health(port: int, proc: Proc) -> None:
    for _ in range(150):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return
        except OSError:
            if proc.popen.poll() is not None:
                break
            time.sleep(0.2)
    raise SystemExit(f"web process on port {port} did not start: {proc.log.name}")


def acknowledge(k: int, events: int, concurrency: int, env: dict[str, str], work: Path, port: int) -> dict[str, Any]:
    webs = []
    for i in range(k):
        args = [GRANIAN, "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port + i), "--workers", "1",
                "--blocking-threads", "4", "--no-ws", "--log-level", "warning", "paypilot.wsgi:application"]
        webs.append(Proc(pinned(args, i), env, work / f"web{i}.log"))
    try:
        for i, web in enumerate(webs):
            wait_health(port + i, web)
        loads = []
        for i in range(k):
            out = work / f"ack{k}-{i}.json"
            args = [PY, HTTPBENCH, "--url", f"http://127.0.0.1:{port + i}", "--route", "/t/bench/webhooks/stripe",
                    "--method", "POST", "--body-file", str(BODY), "--stripe-secret", SECRET,
                    "--expect-status", "200", "--expect-body", '"duplicate": false', "--ladder",
                    str(max(1, concurrency // k)), "-n", str(events // k), "--repeat", "1", "-q", "-o", str(out)]
            loads.append((subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL), out))
        meter = CpuMeter(env["DATABASE_URL"])
        while any(popen.poll() is None for popen, _ in loads):
            meter.sample(webs)
            time.sleep(0.5)
        meter.sample(webs)
        cpu = meter.result()
        steps = [json.loads(out.read_text())["summary_median"][0] for _, out in loads]
    finally:
        for web in webs:
            web.stop()
    done = counts(env["DATABASE_URL"])["events"]  # warm-up included, as in the CPU sampled
    return {"acks_per_s": round(sum(s["rps"] for s in steps), 1),
            "p99_ms": max(s["p99_ms"] for s in steps), "errors": sum(s["errors_total"] for s in steps),
            "web_cpu_s": cpu["process_cpu_s"], "pg_cpu_s": cpu["pg_backend_cpu_s"],
            "acks_per_cpu_s": round(done / (cpu["process_cpu_s"] + cpu["pg_backend_cpu_s"]), 1)}


def drain(k: int, pg_url: str, env: dict[str, str], work: Path, *, kill_at: float | None = None,
          timeout: float = 600) -> dict[str, Any]:
    before = counts(pg_url)
    # The queued tasks are held aside while the clusters start (Django imported in each of
    # their processes), so the figures are the drain's, not the start-up's.
    broker = redis.Redis.from_url(env["REDIS_URL"])
    held = broker.exists(QUEUE_KEY) and broker.rename(QUEUE_KEY, HELD_KEY)
    workers = [Proc(pinned([PY, "manage.py", "qcluster"], i), env, work / f"worker{k}-{i}.log") for i in range(k)]
    meter = CpuMeter(pg_url)
    time.sleep(STARTUP_S)
    meter.baseline(workers)
    if held:
        broker.rename(HELD_KEY, QUEUE_KEY)
    started = time.monotonic()
    killed, sweeps, swept, last_left, idle_since = False, 0, 0, -1, time.monotonic()
    try:
        while time.monotonic() - started < timeout:
            time.sleep(0.5)
            meter.sample(workers)
            c = counts(pg_url)
            left = c["received"] + c["failed"]
            if left == 0:
                break
            if kill_at is not None and not killed and c["processed"] >= kill_at * before["events"]:
                workers[0].signal(signal.SIGKILL)  # mid-drain, whatever it holds
                killed = True
            if left != last_left:
                last_left, idle_since = left, time.monotonic()
            elif killed and time.monotonic() - idle_since > 3:
                # Nothing moves: the rest was in the killed worker's hands. The cluster's
                # schedule would run the sweeper; run it now rather than wait its minute.
                swept += int(manage(env | {"PAYPILOT_SWEEP_AFTER_MINUTES": "0"}, "shell", "-v0", "-c",
                                    "from integrations.tasks import sweep_webhook_events as s; print(s())").strip()
                             or 0)
                sweeps += 1
                idle_since = time.monotonic()
        wall = time.monotonic() - started
        time.sleep(1.0)  # let a task still running finish before the count
        meter.sample(workers)
    finally:
        for worker in workers:
            worker.stop()
    after = counts(pg_url)
    cpu = meter.result()
    return {"events": after["events"], "processed": after["processed"],
            "worker_cpu_s": cpu["process_cpu_s"], "pg_cpu_s": cpu["pg_backend_cpu_s"],
            "per_cpu_s": round(after["processed"] / (cpu["process_cpu_s"] + cpu["pg_backend_cpu_s"]), 1),
            "drained_per_s": round(after["processed"] / after["span_s"], 1) if after["span_s"] else None,
            "until_empty_per_s": round(after["processed"] / wall, 1), "killed": killed, "sweeps": sweeps,
            "swept": swept, "lost": after["events"] - after["processed"],
            "twice": after["processed_more_than_once"] + after["duplicate_invoice_ids"],
            "exactly_once": exactly_once(after), "counts": after}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/pp_scale_bench")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--port", type=int, default=18932)
    args = parser.parse_args()
    env = environment(args.pg_url, args.redis_url)
    print(f"cores usable: {CPUS or 'unknown (no pinning)'}; load average at start {os.getloadavg()}", flush=True)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pp-scale-out-") as tmp:
        work = Path(tmp)
        for k in (1, 2):
            fresh(args.pg_url, args.redis_url, env)
            ack = acknowledge(k, args.events, args.concurrency, env, work, args.port)
            dr = drain(k, args.pg_url, env, work)
            results[f"{k}+{k}"] = {"ack": ack, "drain": dr, "loadavg": os.getloadavg()}
            print(f"{k} web + {k} worker: {ack['acks_per_s']} acks/s (p99 {ack['p99_ms']} ms, "
                  f"{ack['errors']} errors; {ack['acks_per_cpu_s']} per CPU-second of web + PostgreSQL: "
                  f"{ack['web_cpu_s']} + {ack['pg_cpu_s']} s); drain {dr['drained_per_s']}/s first-to-last, "
                  f"{dr['until_empty_per_s']}/s until empty ({dr['per_cpu_s']} per CPU-second of workers + "
                  f"PostgreSQL: {dr['worker_cpu_s']} + {dr['pg_cpu_s']} s); "
                  f"{dr['processed']}/{dr['events']} processed, exactly once: {dr['exactly_once']}; "
                  f"load average {os.getloadavg()}", flush=True)
        one, two = results["1+1"], results["2+2"]
        print(f"ratios 2+2 / 1+1: acks {two['ack']['acks_per_s'] / one['ack']['acks_per_s']:.2f}, drain "
              f"{(two['drain']['drained_per_s'] or 0) / (one['drain']['drained_per_s'] or 1):.2f}", flush=True)

        fresh(args.pg_url, args.redis_url, env)
        acknowledge(2, args.events, args.concurrency, env, work, args.port)
        drill = drain(2, args.pg_url, env, work, kill_at=0.2)
        results["kill_drill"] = drill
        print(f"kill drill (2 workers, one SIGKILLed at 20% processed): {drill['processed']}/{drill['events']} "
              f"processed, lost {drill['lost']}, twice {drill['twice']}, sweeper runs {drill['sweeps']} "
              f"(re-enqueued {drill['swept']}), exactly once: {drill['exactly_once']}; "
              f"load average {os.getloadavg()}", flush=True)
    print(json.dumps(results))
    ok = all(r["drain"]["exactly_once"] for r in (one, two)) and drill["exactly_once"] and drill["killed"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
