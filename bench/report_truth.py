"""The recovery report: is it right (known truth, 200 seeds) and is it fast (10k / 100k / 1M
invoices in one tenant, SQLite and PostgreSQL)?

truth: synthetic cohorts with known recovery probabilities, pure Python through the same
  `report_compute` the server runs (cells computed from invoice rows like `report_recompute`).
  Each invoice: randomised to the holdout with probability --holdout; a share pays on the
  provider's own retry within 48 h, before any send (both arms); the rest recovers with a
  base probability (holdout) or base + effect (treatment), after a delay spread over 40 days
  (so some recoveries fall after the 30-day window); three currencies; failures spread over
  12 weeks with "now" 10 days after the last, so the youngest cohorts are still maturing
  (their later recoveries not yet seen). The true effect on recovery within the window is
  known in closed form. Reported: the lift's mean error, the share of seeds whose 95%
  interval covers the truth, and (for contrast) the error of a naive estimate that includes
  the maturing invoices.

latency: a fresh database per vendor, one tenant, invoices inserted by bulk SQL (the rollup
  triggers fill the rollup as they go); then the median of --repeat calls of
  `report_build`, of `GET /report` and of the admin report page (Django test client, in
  process: the whole middleware stack and view, no socket), and the peak Python memory of one
  `report_build` (tracemalloc).

Usage:
  .venv/bin/python bench/report_truth.py truth [--seeds 200] [--n 10000]
  .venv/bin/python bench/report_truth.py latency --vendor sqlite|postgresql [--sizes 10000,100000,1000000]
     (PostgreSQL: --pg-url postgres://postgres@127.0.0.1:5432/pp_rpt_bench, dropped and created)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

SELF_CURE = 0.25  # pays on the provider's retry within 48 h, before any send (both arms)
BASE = 0.10  # recovers later without PayPilot
EFFECT = 0.15  # recovers later only thanks to PayPilot's emails (treatment arm)
DELAY_DAYS = 40  # later recoveries are spread uniformly over 1..40 days
WINDOW_DAYS = 30
WEEKS = 12
START = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday
NOW = START + timedelta(weeks=WEEKS, days=10)
CURRENCIES = (("USD", 4900), ("EUR", 2900), ("JPY", 3000))


def _django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ["PAYPILOT_LOG_LEVEL"] = "WARNING"
    os.environ["PAYPILOT_RATE_LIMIT_PER_IP"] = "0"
    os.environ["PAYPILOT_RATE_LIMIT_PER_TOKEN"] = "0"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


# --- truth ---------------------------------------------------------------------------------------

def true_lift() -> float:
    """P(recovered within the window | treatment) - P(... | holdout), in closed form."""
    within = (WINDOW_DAYS - 1) / (DELAY_DAYS - 1)  # share of later recoveries inside the window
    return (1 - SELF_CURE) * EFFECT * within


def synthetic_invoices(*, seed: int, n: int, holdout: float) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        arm = "holdout" if rng.random() < holdout else "treatment"
        currency, amount = rng.choice(CURRENCIES)
        failed_at = START + timedelta(seconds=rng.randrange(WEEKS * 7 * 86400))
        messaged_at = failed_at + timedelta(hours=30) if arm == "treatment" else None
        recovered_at = None
        if rng.random() < SELF_CURE:
            recovered_at = failed_at + timedelta(seconds=rng.randrange(1, 48 * 3600))
        elif rng.random() < BASE + (EFFECT if arm == "treatment" else 0.0):
            recovered_at = failed_at + timedelta(seconds=rng.randrange(86400, DELAY_DAYS * 86400))
        if recovered_at is not None and recovered_at > NOW:
            recovered_at = None  # not paid yet on "today": the maturing cohorts' censoring
        if messaged_at is not None and (messaged_at > NOW or (recovered_at and recovered_at <= messaged_at)):
            messaged_at = None  # paid before the send, or the send has not happened yet
        state = "recovered" if recovered_at else rng.choice(["failed", "churned", "exhausted"])
        if state == "failed" and messaged_at:
            state = "messaged"
        rows.append({"arm": arm, "currency": currency, "state": state, "failed_at": failed_at,
                     "first_messaged_at": messaged_at, "recovered_at": recovered_at,
                     "amount_minor": amount, "recovered_minor": amount if recovered_at else 0,
                     "refunded_minor": 0})
    return rows


def _naive_rate(rows: list[dict[str, Any]], arm: str) -> float:
    """Every invoice of the arm, maturing or not, as observed today: what a report without
    mature cohorts would say."""
    mine = [r for r in rows if r["arm"] == arm]
    return sum(r["state"] == "recovered" and (r["recovered_at"] - r["failed_at"]).days < WINDOW_DAYS
               for r in mine) / len(mine)


def run_truth(args: argparse.Namespace) -> None:
    _django(f"sqlite:///{tempfile.mkdtemp(prefix='pp-bench-truth.')}/unused.sqlite3")
    from ledger.report import report_compute
    from ledger.rollup import rollup_cells_recompute

    truth = true_lift() * 100
    errors, covered, naive_errors, withheld = [], 0, [], 0
    started = time.perf_counter()
    for seed in range(args.seeds):
        rows = synthetic_invoices(seed=seed, n=args.n, holdout=args.holdout)
        report = report_compute(rollup_cells_recompute(rows), now=NOW, window_days=WINDOW_DAYS)
        lift, ci = report["attribution"]["lift_pp"], report["attribution"]["lift_ci95_pp"]
        if lift is None:
            withheld += 1
            continue
        errors.append(lift - truth)
        covered += ci[0] <= truth <= ci[1]
        naive_errors.append((_naive_rate(rows, "treatment") - _naive_rate(rows, "holdout")) * 100 - truth)
    scored = len(errors)
    print(f"truth: {args.seeds} seeds x {args.n} invoices, holdout {args.holdout:.0%}, "
          f"true lift {truth:.2f} pp ({time.perf_counter() - started:.0f} s)")
    print(f"  lift mean error      {statistics.mean(errors):+.3f} pp (target: |error| < 0.3)")
    print(f"  lift mean |error|    {statistics.mean(abs(e) for e in errors):.3f} pp")
    print(f"  95% interval covers  {covered}/{scored} = {covered / scored:.1%} (target: 93% to 97%)")
    print(f"  naive (maturing in)  {statistics.mean(naive_errors):+.3f} pp mean error, for contrast")
    print(f"  withheld             {withheld}")


# --- latency -------------------------------------------------------------------------------------

def _u(vendor: str, salt: int) -> str:
    """A pseudo-random number in [0, 1) from the row number i, the same on both vendors."""
    return f"(((i * 2654435761 + {salt} * 40503) % 1000003) % 1000) / 1000.0"


def _insert_sql(vendor: str, *, tenant_id: int, offset: int, n: int) -> str:
    hours_span = 26 * 7 * 24  # failures spread over 26 weeks
    arm = f"CASE WHEN {_u(vendor, 1)} < 0.2 THEN 'holdout' ELSE 'treatment' END"
    recovered = f"{_u(vendor, 2)} < CASE WHEN {_u(vendor, 1)} < 0.2 THEN 0.30 ELSE 0.42 END"
    state = (f"CASE WHEN {recovered} THEN 'recovered' WHEN {_u(vendor, 3)} < 0.3 THEN 'churned' "
             f"WHEN {_u(vendor, 3)} < 0.5 THEN 'exhausted' WHEN {_u(vendor, 1)} < 0.2 THEN 'failed' "
             f"ELSE 'messaged' END")
    currency = "CASE i % 3 WHEN 0 THEN 'USD' WHEN 1 THEN 'EUR' ELSE 'JPY' END"
    amount = "(1000 + (i % 50) * 100)"
    if vendor == "postgresql":
        failed = f"(timestamptz '2026-01-05 00:00:00+00' + ((i * 7919) % {hours_span}) * interval '1 hour')"
        later = f"({failed} + floor({_u(vendor, 4)} * 40 * 24) * interval '1 hour')"
        source = f"generate_series({offset}::bigint, {offset + n - 1}) AS s(i)"
        ext = "'bench_' || i"
        prefix = ""
    else:
        failed = f"datetime('2026-01-05 00:00:00', '+' || ((i * 7919) % {hours_span}) || ' hours')"
        later = f"datetime({failed}, '+' || CAST({_u(vendor, 4)} * 40 * 24 AS INTEGER) || ' hours')"
        source = "seq"
        ext = "'bench_' || i"
        prefix = (f"WITH RECURSIVE seq(i) AS (SELECT {offset} UNION ALL SELECT i + 1 FROM seq "
                  f"WHERE i < {offset + n - 1}) ")
    messaged = f"CASE WHEN {_u(vendor, 1)} >= 0.2 AND {_u(vendor, 5)} < 0.75 THEN {failed} END"
    rec_at = f"CASE WHEN {recovered} THEN {later} END"
    rec_minor = f"CASE WHEN {recovered} THEN {amount} ELSE 0 END"
    refunded = f"CASE WHEN {recovered} AND {_u(vendor, 6)} < 0.02 THEN {amount} ELSE 0 END"
    return (
        f"{prefix}INSERT INTO ledger_invoice (tenant_id, provider, external_invoice_id, amount_minor, "
        f"currency, state, arm, failure_code, attempt_count, subscription_id, provider_customer_id, "
        f"hosted_invoice_url, failed_at, failed_recorded_at, updated_at, first_messaged_at, recovered_at, "
        f"recovered_recorded_at, recovered_minor, refunded_minor) "
        f"SELECT {tenant_id}, 'stripe', {ext}, {amount}, {currency}, {state}, {arm}, 'card_declined', 1, "
        f"'', '', '', {failed}, {failed}, {failed}, {messaged}, {rec_at}, {rec_at}, {rec_minor}, {refunded} "
        f"FROM {source}"
    )


def _median_ms(fn: Any, repeat: int) -> str:
    """"wall / cpu" medians in ms: on a machine shared with other work the process's CPU time
    (time.process_time, this process only; the database's own CPU is included for SQLite,
    which runs in process, and not for PostgreSQL) says what the code costs."""
    fn()  # warm: imports, template compilation, the first connection
    wall, cpu = [], []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return f"{statistics.median(wall):.1f} / {statistics.median(cpu):.1f}"


def run_latency(args: argparse.Namespace) -> None:
    if args.vendor == "postgresql":
        import psycopg

        base, name = args.pg_url.rsplit("/", 1)
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        _django(args.pg_url)
    else:
        _django(f"sqlite:///{tempfile.mkdtemp(prefix='pp-bench-report.')}/bench.sqlite3")
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    call_command("migrate", verbosity=0)
    from ledger.models import ReportRollup
    from ledger.selectors import report_build
    from paypilot.services import tenant_create, token_issue

    tenant = tenant_create(slug="bench", name="Bench")
    token = token_issue(tenant=tenant, role="viewer").plaintext
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST="127.0.0.1")
    admin = Client(HTTP_HOST="127.0.0.1")
    admin.force_login(get_user_model().objects.create_superuser("bench", "", "bench-only"))
    now = datetime(2026, 9, 1, tzinfo=UTC)
    stored = 0
    load = os.getloadavg()[0]
    print(f"latency on {args.vendor}: median of {args.repeat} calls; load average {load:.1f} on "
          f"{os.cpu_count()} CPUs when it started")
    print("| invoices | insert s | rollup rows | report_build ms (wall / cpu) | GET /report ms | "
          "admin page ms | peak MiB |")
    print("|---|---|---|---|---|---|---|")
    for size in [int(s) for s in args.sizes.split(",")]:
        started = time.perf_counter()
        step = 250_000
        while stored < size:
            chunk = min(step, size - stored)
            with connection.cursor() as cursor:
                cursor.execute(_insert_sql(args.vendor, tenant_id=tenant.pk, offset=stored, n=chunk))
            stored += chunk
        insert_s = time.perf_counter() - started
        if args.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        cells = ReportRollup.objects.filter(tenant=tenant).count()
        build = _median_ms(lambda: report_build(tenant=tenant, now=now), args.repeat)
        http = _median_ms(lambda: api.get("/report"), args.repeat)
        page = _median_ms(lambda: admin.get("/admin/ledger/invoice/report/?tenant=bench"), args.repeat)
        assert api.get("/report").json()["totals"]["count"] == size
        assert admin.get("/admin/ledger/invoice/report/?tenant=bench").status_code == 200
        tracemalloc.start()
        report_build(tenant=tenant, now=now)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"| {size:,} | {insert_s:.1f} | {cells:,} | {build} | {http} | {page} | {peak:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    truth = sub.add_parser("truth")
    truth.add_argument("--seeds", type=int, default=200)
    truth.add_argument("--n", type=int, default=10000, help="invoices per seed")
    truth.add_argument("--holdout", type=float, default=0.3)
    latency = sub.add_parser("latency")
    latency.add_argument("--vendor", choices=["sqlite", "postgresql"], default="sqlite")
    latency.add_argument("--sizes", default="10000,100000,1000000")
    latency.add_argument("--repeat", type=int, default=15)
    latency.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/pp_rpt_bench")
    args = parser.parse_args()
    run_truth(args) if args.what == "truth" else run_latency(args)


if __name__ == "__main__":
    main()
