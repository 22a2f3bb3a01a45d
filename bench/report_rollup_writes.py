"""What the report rollup's triggers cost a ledger write: single-invoice failures and
payments through the ledger services, with the triggers installed and with them dropped,
on a fresh database (SQLite in a temporary directory, or the PostgreSQL URL given, dropped
and created). Prints the median microseconds per service call over --repeat alternating rounds. (The
rollup is not rebuilt between rounds: this measures cost, not the figures.)

Usage: .venv/bin/python bench/report_rollup_writes.py --vendor sqlite|postgresql [--n 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vendor", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/pp_rpt_bench")
    args = parser.parse_args()
    if args.vendor == "postgresql":
        import psycopg

        base, name = args.pg_url.rsplit("/", 1)
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        os.environ["DATABASE_URL"] = args.pg_url
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='pp-bench-writes.')}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ["PAYPILOT_LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from ledger.rollup import _drop_statements, trigger_statements
    from ledger.services import invoice_record_failure, invoice_record_payment
    from paypilot.services import tenant_create

    tenant = tenant_create(slug="writes", name="Writes")
    t0 = datetime(2026, 6, 1, tzinfo=UTC)
    run = iter(range(10**9))

    def one_round() -> tuple[float, float]:
        prefix = f"r{next(run)}_"
        started = time.perf_counter()
        for i in range(args.n):
            invoice_record_failure(tenant=tenant, provider="stripe", external_invoice_id=f"{prefix}{i}",
                                   amount_minor=4900, currency="usd", failure_code="card_declined",
                                   now=t0 + timedelta(minutes=i))
        failed = (time.perf_counter() - started) / args.n * 1e6
        started = time.perf_counter()
        for i in range(args.n):
            invoice_record_payment(tenant=tenant, provider="stripe", external_invoice_id=f"{prefix}{i}",
                                   amount_paid_minor=4900, currency="usd", now=t0 + timedelta(days=2, minutes=i))
        paid = (time.perf_counter() - started) / args.n * 1e6
        return failed, paid

    def triggers(install: bool) -> None:
        with connection.cursor() as cursor:
            for sql in (trigger_statements if install else _drop_statements)(connection.vendor):
                cursor.execute(sql)

    # Rounds alternate, so a change in the machine's load hits both columns alike.
    one_round()  # warm
    rounds: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(args.repeat):
        for install in (False, True):
            triggers(install)
            rounds[install].append(one_round())
    with_triggers, without = (
        (statistics.median(r[0] for r in rounds[k]), statistics.median(r[1] for r in rounds[k])) for k in (True, False))
    print(f"{args.vendor}, {args.n} calls x {args.repeat} rounds, load average {os.getloadavg()[0]:.1f}")
    print("| service call | with triggers us | without us |")
    print("|---|---|---|")
    print(f"| invoice_record_failure (new invoice) | {with_triggers[0]:.0f} | {without[0]:.0f} |")
    print(f"| invoice_record_payment (recovery) | {with_triggers[1]:.0f} | {without[1]:.0f} |")


if __name__ == "__main__":
    main()
