"""Cost of the shared rate-limit counters and of a refused webhook flood, in process.

Figures (medians of --repeat runs):
1. `counter_hit` on the file store (PAYPILOT_RATE_LIMIT_DIR): microseconds per hit, one
   key and 1,000 keys; and hits/s with 4 processes on one key (the count is checked exact).
2. Webhook answers through Django's test client (the whole middleware stack, a fresh
   migrated SQLite database in a temporary directory, the worker not run):
   signed deliveries (200, stored and enqueued), unsigned ones under the failure limit
   (400, one audit row each) and past it (429, no database work), per second.

Usage: .venv/bin/python bench/ratelimit.py [--n 20000] [--requests 2000] [--cpu 0]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _hammer(args: tuple[str, int]) -> int:
    from paypilot.ratelimit import counter_hit

    key, times = args
    for _ in range(times):
        counter_hit(key, window=3600)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20000, help="counter hits per figure")
    parser.add_argument("--requests", type=int, default=2000, help="webhook requests per figure")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to (-1: do not pin)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is reported")
    args = parser.parse_args()

    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    work = tempfile.mkdtemp(prefix="pp-bench-ratelimit.")
    os.environ["DATABASE_URL"] = f"sqlite:///{work}/bench.sqlite3"
    # Where the default puts it (memory when /dev/shm exists); BENCH_RL_DIR to try a disk.
    shm = Path("/dev/shm")
    os.environ["PAYPILOT_RATE_LIMIT_DIR"] = os.environ.get(
        "BENCH_RL_DIR", tempfile.mkdtemp(prefix="pp-bench-rl.", dir=shm if shm.is_dir() else work))
    os.environ["REDIS_URL"] = ""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ["PAYPILOT_LOG_LEVEL"] = "ERROR"
    os.environ["PAYPILOT_Q_SYNC"] = "0"
    os.environ["PAYPILOT_WEBHOOK_FAILURES_PER_IP"] = "100"
    os.environ["PAYPILOT_WEBHOOK_FAILURES_PER_TENANT"] = "0"
    sys.path.insert(0, str(ROOT))

    import django

    django.setup()
    from django.core.management import call_command

    from paypilot.ratelimit import counter_hit, counter_peek, counters_clear

    def median(runs: list[float]) -> float:
        return statistics.median(runs)

    # 1. counters
    one, many = [], []
    for _ in range(args.repeat):
        counters_clear()
        started = time.perf_counter()
        for _ in range(args.n):
            counter_hit("bench:one", window=3600)
        one.append((time.perf_counter() - started) / args.n * 1e6)
        counters_clear()
        started = time.perf_counter()
        for i in range(args.n):
            counter_hit(f"bench:key:{i % 1000}", window=3600)
        many.append((time.perf_counter() - started) / args.n * 1e6)
    print(f"counter_hit, file store, one key:    {median(one):7.1f} us/hit")
    print(f"counter_hit, file store, 1000 keys:  {median(many):7.1f} us/hit")
    rates = []
    for _ in range(args.repeat):
        counters_clear()
        per = args.n // 4
        started = time.perf_counter()
        with multiprocessing.get_context("fork").Pool(4) as pool:
            pool.map(_hammer, [("bench:shared", per)] * 4)
        elapsed = time.perf_counter() - started
        assert counter_peek("bench:shared", window=3600).count == per * 4, "a hit was lost"
        rates.append(per * 4 / elapsed)
    print(f"counter_hit, 4 processes, one key:   {median(rates):9,.0f} hits/s (count exact)")

    # 2. webhook answers
    call_command("migrate", verbosity=0)
    from django.test import Client

    from integrations.providers.stripe import sign
    from integrations.services import credential_set, inbox
    from paypilot.services import tenant_create

    inbox._enqueue = lambda event_id: None  # the ack path only: no worker runs here
    tenant = tenant_create(slug="bench", name="Bench")
    secret = "whsec_bench_0123456789"
    credential_set(tenant=tenant, provider="stripe", secret=secret)
    client = Client()
    template = (ROOT / "bench" / "webhook_stripe_body.json").read_text()

    def body(n: int) -> bytes:
        unique = f"bench-{n}-{time.monotonic_ns()}"
        return (template.replace("{uuid}", unique).replace("{uuid2}", unique)
                .replace("{ts}", str(int(time.time()))).encode())

    def run(kind: str) -> float:
        counters_clear()
        statuses: set[int] = set()
        if kind == "limited":  # use up the failure allowance first
            for n in range(100):
                client.post("/t/bench/webhooks/stripe", data=body(n), content_type="application/json",
                            REMOTE_ADDR="192.0.2.1")
        started = time.perf_counter()
        for n in range(args.requests):
            raw = body(n)
            headers = {"Stripe-Signature": sign(body=raw, secret=secret)} if kind == "signed" else {}
            response = client.post("/t/bench/webhooks/stripe", data=raw, content_type="application/json",
                                   headers=headers, REMOTE_ADDR="192.0.2.1")
            statuses.add(response.status_code)
            if kind == "unsigned" and n % 90 == 89:
                counters_clear()  # stay under the limit: every answer is a 400 with its audit row
        elapsed = time.perf_counter() - started
        expected = {"signed": {200}, "unsigned": {400}, "limited": {429}}[kind]
        assert statuses == expected, (kind, statuses)
        return args.requests / elapsed

    print(f"(counters in {os.environ['PAYPILOT_RATE_LIMIT_DIR']})")

    for kind, label in (("signed", "signed, 200 stored"), ("unsigned", "unsigned, 400 audited"),
                        ("limited", "unsigned past limit, 429")):
        print(f"webhook {label:27s} {median([run(kind) for _ in range(args.repeat)]):9,.0f} req/s")


    counters_clear()


if __name__ == "__main__":
    main()
