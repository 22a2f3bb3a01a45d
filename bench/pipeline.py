"""In-process recoveries per second on the template path, pinned to one CPU.

Two figures: run_recovery() without storing (customer lookup, retrieval, decision, copy)
and with storing (decision row + Draft + audit row, one transaction each). A fresh SQLite
database in a temporary directory is migrated first; the six demo customers are loaded and
the events cycle through them and through the seven failure codes.

Usage: .venv/bin/python bench/pipeline.py [--n 20000] [--n-store 3000] [--cpu 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20000, help="recoveries without storing")
    parser.add_argument("--n-store", type=int, default=3000, help="recoveries with storing")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to (-1: do not pin)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is reported")
    args = parser.parse_args()

    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    work = tempfile.mkdtemp(prefix="pp-bench-pipeline.")
    os.environ["DATABASE_URL"] = f"sqlite:///{work}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ["PAYPILOT_LOG_LEVEL"] = "WARNING"
    os.environ["OPENAI_API_KEY"] = ""
    os.environ["PAYPILOT_LLM_DRAFT"] = "0"
    sys.path.insert(0, str(ROOT))

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from decisions.rules import FAILURE_CODES
    from dunning.pipeline import RecoveryInput
    from dunning.services import run_recovery
    from ledger.services import customer_upsert
    from paypilot.services import tenant_create

    tenant = tenant_create(slug="bench", name="Bench Ltd")
    ids = []
    for i, (name, plan, locale, currency) in enumerate(
        [("Acme Robotics", "Scale", "", "USD"), ("Brightleaf Studios", "Pro", "es", "EUR"),
         ("Nimbus Health", "Enterprise", "de-DE", "USD"), ("Pixel & Pour", "Starter", "fr", "USD"),
         ("Orbital Logistics", "Scale", "en-GB", "GBP"), ("Verdant Outdoor", "Pro", "", "USD")], start=1):
        cid = f"cust_00{i}"
        customer_upsert(tenant=tenant, external_id=cid, name=name, plan=plan, locale=locale, currency=currency,
                        mrr_minor=29900, payment_history=[{"status": "ok"}, {"status": "failed"}])
        ids.append((cid, currency))
    events = [
        RecoveryInput(customer_id=cid, amount_minor=29900 + k, currency=currency,
                      failure_code=FAILURE_CODES[k % len(FAILURE_CODES)], attempt=1 + k % 3)
        for k, (cid, currency) in enumerate(ids * 7)
    ]

    def run(n: int, store: bool) -> float:
        started = time.perf_counter()
        for k in range(n):
            run_recovery(tenant=tenant, event=events[k % len(events)], store=store)
        return n / (time.perf_counter() - started)

    run(500, False)  # warm caches: catalogue, retriever, connection
    no_store = sorted(run(args.n, False) for _ in range(args.repeat))[args.repeat // 2]
    store = sorted(run(args.n_store, True) for _ in range(args.repeat))[args.repeat // 2]
    pinned = f"CPU {args.cpu}" if args.cpu >= 0 else "unpinned"
    print(f"pipeline template path, one process, {pinned}, SQLite (WAL), median of {args.repeat}")
    print(f"  without storing: {no_store:,.0f} recoveries/s  (n={args.n})")
    print(f"  storing decision + Draft: {store:,.0f} recoveries/s  (n={args.n_store})")


if __name__ == "__main__":
    main()
