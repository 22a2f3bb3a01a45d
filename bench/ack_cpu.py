"""CPU per signed Stripe webhook acknowledgement, in process (issue 32).

One process calls Django's WSGI handler directly (the whole middleware stack, no server, no
client on the same core) with signed `invoice.payment_failed` deliveries, each a new event
id, and reports the process's CPU time (time.process_time: user + system, robust to other
load on the machine) per acknowledgement: verify the signature, store the raw event,
enqueue its task (ORM broker, cluster mode: the task is queued, not run), answer 200.
The bodies and their signatures are made before the clock starts (the provider's work).

Usage: .venv/bin/python bench/ack_cpu.py [--db sqlite|postgres] [--requests 2000]
       [--repeat 5] [--cpu 0] [--profile 25]
  sqlite: a fresh migrated database in a temporary directory.
  postgres: $BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/pp_ack_bench),
  dropped and recreated.
Prints the median and the spread of CPU ms per ack over --repeat runs, the wall-clock rate
of one connection with nothing else running in the process, and with --profile N the top N
cProfile entries (by own time) of one extra run.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PATH = "/t/bench/webhooks/stripe"
SECRET = "whsec_bench_ack_cpu_0123456789"


def _database(which: str) -> None:
    if which == "sqlite":
        work = tempfile.mkdtemp(prefix="pp-bench-ackcpu.")
        os.environ["DATABASE_URL"] = f"sqlite:///{work}/bench.sqlite3"
        return
    import psycopg

    url = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/pp_ack_bench")
    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = url


def _environ(body: bytes, signature: str, n: int) -> dict[str, Any]:
    return {
        "REQUEST_METHOD": "POST", "PATH_INFO": PATH, "SCRIPT_NAME": "", "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "192.0.2.1", "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "127.0.0.1:8000", "HTTP_STRIPE_SIGNATURE": signature, "HTTP_USER_AGENT": "Stripe/1.0",
        "HTTP_X_REQUEST_ID": f"bench-ack-{n:08d}",
        "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0), "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--requests", type=int, default=2000, help="acknowledgements per run")
    parser.add_argument("--repeat", type=int, default=5, help="runs; the median is reported")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to (-1: do not pin)")
    parser.add_argument("--profile", type=int, default=0, help="print the top N cProfile entries")
    args = parser.parse_args()

    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    _database(args.db)
    os.environ["REDIS_URL"] = ""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ.update(PAYPILOT_LOG_LEVEL="WARNING", PAYPILOT_Q_SYNC="0", DJANGO_DEBUG="0",
                      PAYPILOT_RATE_LIMIT_PER_IP="0", PAYPILOT_RATE_LIMIT_PER_TOKEN="0")
    sys.path.insert(0, str(ROOT))

    import django

    django.setup()
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from django_q.models import OrmQ

    from integrations.models import WebhookEvent
    from integrations.providers.stripe import sign
    from integrations.services import credential_set
    from paypilot.services import tenant_create

    call_command("migrate", verbosity=0)
    tenant = tenant_create(slug="bench", name="Bench")
    credential_set(tenant=tenant, provider="stripe", secret=SECRET)
    app = get_wsgi_application()
    template = (ROOT / "bench" / "webhook_stripe_body.json").read_text()
    serial = iter(range(10**9))

    def deliveries(count: int) -> list[dict[str, Any]]:
        made = []
        for _ in range(count):
            n = next(serial)
            unique = f"ackcpu-{n}-{time.monotonic_ns()}"
            raw = (template.replace("{uuid}", unique).replace("{uuid2}", unique)
                   .replace("{ts}", str(int(time.time()))).replace("{n}", str(n)).encode())
            made.append(_environ(raw, sign(body=raw, secret=SECRET), n))
        return made

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        if not status.startswith("200"):
            raise SystemExit(f"unexpected answer {status}")

    def run(batch: list[dict[str, Any]]) -> tuple[float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        for environ in batch:
            response = app(environ, start_response)  # type: ignore[arg-type]
            b"".join(response)
            response.close()
        return time.process_time() - cpu, time.perf_counter() - wall

    run(deliveries(200))  # warm: caches, prepared statements, the credential lookup
    per_ack, rates = [], []
    for _ in range(args.repeat):
        cpu, wall = run(deliveries(args.requests))
        per_ack.append(cpu / args.requests * 1000)
        rates.append(args.requests / wall)
    stored = (WebhookEvent.objects.count(), OrmQ.objects.count())
    expected = 200 + args.repeat * args.requests
    assert stored == (expected, expected), f"stored events and queue rows {stored}, expected {expected} of each"
    print(f"{args.db}: {args.requests} acks x {args.repeat} runs, load average {os.getloadavg()[0]:.2f}")
    print(f"  CPU per ack: median {statistics.median(per_ack):.3f} ms "
          f"(runs {', '.join(f'{x:.3f}' for x in per_ack)}) -> {1000 / statistics.median(per_ack):,.0f} acks "
          f"per CPU-second")
    print(f"  one connection, wall: median {statistics.median(rates):,.0f} acks/s")
    print(f"  stored: {stored[0]} events, {stored[1]} queue rows (one each)")
    if args.profile:
        batch = deliveries(args.requests)
        profiler = cProfile.Profile()
        profiler.enable()
        run(batch)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.profile)
        print(out.getvalue())


if __name__ == "__main__":
    main()
