"""Disputes at scale: dispute_list, one triage, one evidence pack and the morning review.

Loads N orders with one capture each (every 50th order captured twice), D disputes on
those captures (a tenth "duplicate" on the duplicates) and a stored run, then times the
read services the MCP tools call. SQLite by default (a fresh file); `--postgres URL` uses
that database (your own name). Prints seconds per call and queries per call.

Usage: .venv/bin/python bench/recon_disputes.py [--orders 20000] [--disputes 500]
       [--postgres postgres://postgres@127.0.0.1:5432/pp_disputes_bench]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 10, 1, tzinfo=UTC)
AS_OF = date(2026, 11, 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=20_000)
    parser.add_argument("--disputes", type=int, default=500)
    parser.add_argument("--postgres", default="")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pp-bench-disputes."))
    os.environ["DATABASE_URL"] = args.postgres or f"sqlite:///{work}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ["PAYPILOT_LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    call_command("migrate", verbosity=0)
    from paypilot.models import Tenant
    from paypilot.services import tenant_create
    from reconciliation.services.disputes import dispute_list, dispute_triage
    from reconciliation.services.evidence import evidence_pack_draft
    from reconciliation.services.imports import sample_rows_import
    from reconciliation.services.review import morning_review
    from reconciliation.services.runs import run_create

    tenant = tenant_create(slug=f"bench-disputes-{Tenant.objects.count() + 1}", name="Bench")
    orders, provider, disputes = [], [], []
    for i in range(args.orders):
        at = START + timedelta(minutes=3 * i % (40 * 24 * 60))
        orders.append({"line": i + 2, "order_id": f"O-{i}", "ordered_at": at, "amount_minor": 1000 + i % 9000,
                       "currency": "USD", "payment_reference": f"ch_{i}", "customer_email": "", "status": "paid"})
        provider.append({"line": len(provider) + 2, "transaction_id": f"t_{i}", "created_at": at, "type": "charge",
                         "amount_minor": 1000 + i % 9000, "fee_minor": 0, "net_minor": 1000 + i % 9000,
                         "currency": "USD", "charge_id": f"ch_{i}", "order_reference": f"O-{i}", "payout_id": "",
                         "payout_date": None})
        if i % 50 == 0:
            provider.append({**provider[-1], "line": len(provider) + 2, "transaction_id": f"t_{i}b",
                             "charge_id": f"ch_{i}b"})
    step = max(args.orders // args.disputes, 1)
    for k in range(args.disputes):
        i = k * step
        dup = k % 10 == 0 and i % 50 == 0
        disputes.append({"line": k + 2, "dispute_id": f"dp_{k}", "charge_id": f"ch_{i}b" if dup else f"ch_{i}",
                         "amount_minor": 1000 + i % 9000, "currency": "USD",
                         "reason": "duplicate" if dup else ("fraudulent", "general", "product_not_received")[k % 3],
                         "status": "needs_response", "evidence_due_by": AS_OF + timedelta(days=k % 20),
                         "created_at": START + timedelta(days=30)})
    for kind, rows in (("orders", orders), ("provider", provider), ("disputes", disputes)):
        sample_rows_import(tenant=tenant, kind=kind, filename=kind, rows=rows,
                           digest_source=f"{tenant.slug}-{kind}".encode(), actor="bench")
    started = time.perf_counter()
    run_create(tenant=tenant, as_of=AS_OF, actor="bench")
    print(f"{args.orders} orders, {len(provider)} captures, {args.disputes} disputes on {connection.vendor}; "
          f"run stored in {time.perf_counter() - started:.2f} s")
    for label, call in (
        ("dispute_list(open)", lambda: dispute_list(tenant=tenant, as_of=AS_OF, status="open")),
        ("dispute_triage", lambda: dispute_triage(tenant=tenant, dispute_id="dp_0", as_of=AS_OF)),
        ("evidence_pack_draft", lambda: evidence_pack_draft(tenant=tenant, dispute_id="dp_0", as_of=AS_OF)),
        ("morning_review", lambda: morning_review(tenant=tenant, as_of=AS_OF)),
    ):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            call()
            took = time.perf_counter() - started
        print(f"{label:<22} {took:8.3f} s  {len(queries):6d} queries")


if __name__ == "__main__":
    main()
