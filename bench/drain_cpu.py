"""In-process CPU of the webhook drain per delivery: the worker's own work, no cluster.

Stores N signed-Stripe-shaped `invoice.payment_failed` deliveries (the body
`bench/webhooks.sh` posts, unique ids) straight into a fresh inbox, then runs the task
body `webhook_event_process(id)` for every event in arrival order, as one worker would
(batches of PAYPILOT_WEBHOOK_BATCH; the other events' calls return from the memo), and
prints the CPU seconds (`time.process_time`, this process only: the PostgreSQL backend's
share is not in it) per delivery. Checks exactly once at the end (every event processed,
one invoice, decision, draft and approval request each).

Usage: .venv/bin/python bench/drain_cpu.py [--db sqlite|postgres] [-n 2000] [--repeat 3]
           [--profile FILE] [--cpu 0]
PostgreSQL: $BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/pp_drain_bench),
dropped and recreated each repeat.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _fresh_pg(url: str) -> None:
    import psycopg

    admin, name = url.rsplit("/", 1)
    with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _bodies(n: int) -> list[bytes]:
    template = (ROOT / "bench" / "webhook_stripe_body.json").read_text().strip()
    now = int(time.time())
    return [template.replace("{uuid2}", uuid.uuid4().hex).replace("{uuid}", uuid.uuid4().hex)
            .replace("{n}", str(i)).replace("{ts}", str(now)).encode() for i in range(n)]


def _store(n: int) -> list[int]:
    """A tenant with a Stripe credential and `n` received events (no queue rows)."""
    from integrations.models import WebhookEvent
    from integrations.providers import adapter
    from integrations.services import credential_set
    from paypilot.services import tenant_create

    tenant = tenant_create(slug="bench", name="Bench")
    credential_set(tenant=tenant, provider="stripe", secret="whsec_bench_drain")
    module = adapter("stripe")
    rows = []
    for body in _bodies(n):
        env = module.envelope(body=body, headers={})
        rows.append(WebhookEvent(tenant=tenant, provider="stripe", event_key=env.event_key,
                                 event_type=env.event_type, body=body, headers={},
                                 resource_key=env.resource_key, resource_version=env.resource_version))
    WebhookEvent.objects.bulk_create(rows, batch_size=500)
    return list(WebhookEvent.objects.order_by("pk").values_list("pk", flat=True))


def _exactly_once(n: int) -> dict[str, int]:
    from approvals.models import ApprovalRequest
    from decisions.models import DecisionRecord
    from dunning.models import Draft
    from integrations.models import WebhookEvent
    from ledger.models import Invoice, InvoiceTransition
    from paypilot.models import AuditEvent

    counts = {
        "processed": WebhookEvent.objects.filter(status="processed", attempts=1).count(),
        "invoices": Invoice.objects.count(), "transitions": InvoiceTransition.objects.count(),
        "decisions": DecisionRecord.objects.count(), "drafts": Draft.objects.count(),
        "approval_requests": ApprovalRequest.objects.count(),
        "audit_events": AuditEvent.objects.count(),
    }
    if any(value != n for key, value in counts.items() if key != "audit_events"):
        raise SystemExit(f"NOT exactly once: {counts}")
    return counts


def _one_run(args: argparse.Namespace, db: str, work: str) -> tuple[float, dict[str, int]]:
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()
    if db == "postgres":
        _fresh_pg(os.environ["DATABASE_URL"])
    else:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{work}/bench.sqlite3{suffix}").unlink(missing_ok=True)
    call_command("migrate", verbosity=0)
    ids = _store(args.n)

    from integrations.services import processing, webhook_event_process

    processing._processed_here.clear()
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile(time.process_time)  # CPU, as the figure printed
    started = time.process_time()
    if profiler:
        profiler.enable()
    for event_id in ids:
        webhook_event_process(event_id=event_id)
    if profiler:
        profiler.disable()
        profiler.dump_stats(args.profile)
    spent = time.process_time() - started
    return spent, _exactly_once(args.n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="postgres")
    parser.add_argument("-n", type=int, default=2000, help="deliveries per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs; each on a fresh database")
    parser.add_argument("--profile", default="", help="write the last run's cProfile stats here")
    parser.add_argument("--cpu", type=int, default=-1, help="CPU to pin to (-1: do not pin)")
    args = parser.parse_args()

    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    work = tempfile.mkdtemp(prefix="pp-bench-drain.")
    if args.db == "postgres":
        os.environ["DATABASE_URL"] = os.environ.get(
            "BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/pp_drain_bench")
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{work}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ.update(PAYPILOT_LOG_LEVEL="WARNING", PAYPILOT_HOLDOUT_PCT="0", DJANGO_DEBUG="0",
                      PAYPILOT_LLM_DRAFT="0", OPENAI_API_KEY="")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    sys.path.insert(0, str(ROOT / "bench"))
    from _machine import speed_line

    print(speed_line())
    per_delivery = []
    for run in range(args.repeat):
        spent, counts = _one_run(args, args.db, work)
        per_delivery.append(spent / args.n * 1000)
        print(f"run {run + 1}: {args.n} deliveries, {spent:.2f} s CPU in process = "
              f"{per_delivery[-1]:.3f} ms a delivery ({args.n / spent:.0f} per CPU-second); "
              f"exactly once: {counts}")
    print(f"{args.db}: median {statistics.median(per_delivery):.3f} ms of in-process CPU a delivery "
          f"(runs: {', '.join(f'{v:.3f}' for v in per_delivery)}); load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
