"""Shadow replay of 1,000,000 stored decisions over 30 days, pinned to one CPU (issue 15).

A fresh SQLite database in a temporary directory (or --database-url, e.g. a PostgreSQL
database of your own) is migrated; the decision rows are bulk-inserted with one SQL
statement (a generated series joined to the distinct input tuples, each carrying the answer
the built-in table gives it), plus --outside rows older than the window. Currencies: 60 %
USD, 20 % EUR, 10 % GBP, and 10 % rows stored before decisions carried a currency (NULL),
which the replay tries to resolve through the ledger invoice and the draft behind them (there
is none here, so they land in "unknown": the slow path, measured). Every pipeline decision
(two thirds) gets its stored draft, written with one more SQL statement. Then
`decisions.shadow.shadow_replay()` replays the window through a candidate version that
shortens the insufficient_funds wait and says no_email for generic_decline, --repeat times;
the median wall time and the median CPU time of this process are reported (on SQLite the
database works in this process, so CPU time is the whole cost; on PostgreSQL the server's
CPU is not in it).

Usage: .venv/bin/python bench/shadow.py [--rows 1000000] [--outside 100000] [--cpu 0] [--repeat 3]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NETWORK_VARIANTS = (("", "", ""), ("visa", "", "05"), ("mastercard", "03", ""), ("mastercard", "25", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="decisions inside the 30-day window")
    parser.add_argument("--outside", type=int, default=100_000, help="decisions older than the window")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to (-1: do not pin)")
    parser.add_argument("--repeat", type=int, default=3, help="replays; the median is reported")
    parser.add_argument("--database-url", default="", help="default: a fresh SQLite file")
    args = parser.parse_args()

    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    work = tempfile.mkdtemp(prefix="pp-bench-shadow.")
    os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{work}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ["PAYPILOT_LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(ROOT))

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    call_command("migrate", verbosity=0)

    from decisions import selectors, services
    from decisions.rules import FAILURE_CODES, decide
    from decisions.shadow import shadow_replay
    from paypilot.services import tenant_create

    tenant = tenant_create(slug=f"bench-{os.getpid()}", name="Bench Ltd")
    inputs = list(itertools.product((*FAILURE_CODES, "unlisted_code"), (1, 2, 3, 4), (0, 1, 2, 3),
                                    NETWORK_VARIANTS))
    vendor = connection.vendor
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE bench_inputs (k integer primary key, failure_code text, attempt "
                       "integer, prior_failures integer, card_brand text, mac text, ndc text, rule_fired text, "
                       "matched boolean, churn_risk text, action text, retry_in_days integer, offer text, "
                       "escalated boolean, has_retry boolean, schedule_source text, likelihood double precision, "
                       "network_rules text)")
        import json

        rows = []
        for k, (code, attempt, prior, (brand, mac, ndc)) in enumerate(inputs):
            d = decide(failure_code=code, attempt=attempt, prior_failures=prior, card_brand=brand or None,
                       network_advice_code=mac or None, network_decline_code=ndc or None)
            rows.append((k, code, attempt, prior, brand, mac, ndc, d.rule_fired, d.matched, d.churn_risk,
                         d.strategy.action, d.strategy.retry_in_days, d.strategy.offer, d.strategy.escalated,
                         d.schedule.retry_at is not None, d.schedule.source, d.likelihood,
                         json.dumps(list(d.network_rules))))
        cursor.executemany("INSERT INTO bench_inputs VALUES (" + ", ".join(["%s"] * 18) + ")", rows)
        total = args.rows + args.outside
        if vendor == "postgresql":
            series = f"SELECT g AS i FROM generate_series(0, {total - 1}) g"
            now_sql, day = "now()", "((s.i %% 29) * interval '1 day' + (s.i %% 86400) * interval '1 second')"
            old = "now() - interval '40 days' - (s.i %% 300) * interval '1 day'"
            ts = f"CASE WHEN s.i < {args.rows} THEN {now_sql} - {day} ELSE {old} END"
            retry = f"CASE WHEN b.has_retry THEN {now_sql} + b.retry_in_days * interval '1 day' END"
            rules = "b.network_rules::jsonb"
        else:
            series = (f"WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < {total - 1}) "
                      "SELECT i FROM s")
            ts = (f"CASE WHEN s.i < {args.rows} THEN strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', "
                  "'-' || (s.i %% 29) || ' days', '-' || (s.i %% 86400) || ' seconds') "
                  "ELSE strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', '-40 days', '-' || (s.i %% 300) || ' days') END")
            retry = ("CASE WHEN b.has_retry THEN strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', '+' || b.retry_in_days "
                     "|| ' days') END")
            rules = "b.network_rules"
        cursor.execute(
            "INSERT INTO decisions_decisionrecord (tenant_id, invoice_ref, source, failure_code, attempt, "
            "prior_failures, rule_fired, matched, churn_risk, action, retry_in_days, offer, escalated, retry_at, "
            "schedule_source, likelihood, expected_recovered_minor, annual_value_at_risk_minor, rules_version, "
            "decided_at, card_brand, network_advice_code, network_decline_code, network_rules, rule_version_id, "
            "currency) "
            f"SELECT %s, 'in_' || s.i, CASE WHEN s.i %% 3 = 0 THEN 'api' ELSE 'pipeline' END, b.failure_code, "
            "b.attempt, b.prior_failures, b.rule_fired, b.matched, b.churn_risk, b.action, b.retry_in_days, "
            f"b.offer, b.escalated, {retry}, b.schedule_source, b.likelihood, "
            "CAST(((s.i %% 50) + 1) * 1000 * b.likelihood AS integer), ((s.i %% 50) + 1) * 12000, %s, "
            f"{ts}, b.card_brand, b.mac, b.ndc, {rules}, NULL, "
            "CASE s.i %% 10 WHEN 0 THEN NULL WHEN 1 THEN 'EUR' WHEN 2 THEN 'EUR' WHEN 3 THEN 'GBP' ELSE 'USD' END "
            f"FROM ({series}) s JOIN bench_inputs b ON b.k = s.i %% {len(inputs)}",
            [tenant.pk, "r-bench"],
        )
        verdict = "'{\"ok\": true, \"reasons\": []}'" + ("::jsonb" if vendor == "postgresql" else "")
        cursor.execute(
            "INSERT INTO dunning_draft (tenant_id, invoice_id, decision_id, subject, body, diagnosis, locale, "
            "source, fallback_used, guard_verdict, created_at) "
            f"SELECT tenant_id, NULL, id, 'Your payment did not go through', 'Hi there', '', 'en', 'template', "
            f"{'false' if vendor == 'postgresql' else '0'}, {verdict}, decided_at "
            "FROM decisions_decisionrecord WHERE tenant_id = %s AND source = 'pipeline'",
            [tenant.pk],
        )
    insert_s = time.perf_counter() - started

    version = services.rule_version_create(tenant=tenant, user_id=None, note="bench")
    version.rows.filter(failure_code="insufficient_funds").update(retry_in_days=1)
    version.rows.filter(failure_code="generic_decline").update(action="no_email")
    candidate = selectors.rule_table_for_version(version=version)
    timings, cpu_times, report = [], [], None
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        report = shadow_replay(tenant=tenant, candidate=candidate, days=30, progress=sys.stderr.isatty())
        timings.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    assert report is not None
    print(f"database: {vendor}; rows inserted: {total:,} ({args.rows:,} in the window) in {insert_s:.1f} s")
    print(f"replay of 30 days: {report.decisions:,} decisions, {report.input_groups} distinct input groups, "
          f"{report.changed:,} would change ({report.wait_shorter:,} wait shorter); drafts written "
          f"{report.drafts_written:,}, would not be written {report.drafts_not_written:,}")
    money = report.as_dict()["money"]["by_currency"]
    print("money in changed decisions (expected recovered, minor units): "
          + ", ".join(f"{c} {m['expected_recovered_minor']:,} ({m['decisions']:,})" for c, m in money.items()))
    cpu = f"pinned to CPU {args.cpu}" if args.cpu >= 0 else "any CPU"
    print(f"wall time: median {statistics.median(timings):.2f} s of {args.repeat} "
          f"(min {min(timings):.2f}, max {max(timings):.2f}), {cpu}")
    print(f"CPU time of this process: median {statistics.median(cpu_times):.2f} s "
          f"(min {min(cpu_times):.2f}, max {max(cpu_times):.2f})"
          + ("" if vendor == "sqlite" else "; the PostgreSQL server's CPU is not included"))
    print(f"throughput: {report.decisions / statistics.median(timings):,.0f} decisions/s")


if __name__ == "__main__":
    main()
