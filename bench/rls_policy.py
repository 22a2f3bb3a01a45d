"""What the tenant policy's form costs per row: bare expressions against sub-selects.

PayPilot's row-level security policy (paypilot/rls.py) compares each row's tenant with the
`app.tenant_id` setting. Written bare, `current_setting()` (a lookup by name, a cast to
bigint) and `current_user` are evaluated for every row; written as sub-selects, PostgreSQL
evaluates each once per statement (an InitPlan) and compares a constant per row. This
script builds two scratch tables that differ only in the policy's form (policy v2: bare,
v3: sub-selects), in a scratch database, and times as a role under the policy: an INSERT ...
SELECT of --rows rows into each (the reconciliation import's path under RLS), then a full
scan of each (count and sum), alternating tables, --repeat times. Prints medians.

Usage: .venv/bin/python bench/rls_policy.py [--rows 1000000] [--repeat 5]
         [--pg-url postgres://postgres@127.0.0.1:5432/pp_bench_rls]  (dropped and created)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import speed_line  # noqa: E402

ROLE = "pp_bench_rls_reader"
SETTING = "current_setting('app.tenant_id', true)"
FORMS = {
    "v2 bare": (f"tenant_id = NULLIF({SETTING}, '')::bigint OR current_user = 'postgres'::name"),
    "v3 sub-selects": (f"tenant_id = (SELECT NULLIF({SETTING}, '')::bigint) "
                       "OR (SELECT current_user = 'postgres'::name)"),
}
COLUMNS = ("tenant_id bigint NOT NULL, line integer NOT NULL, reference varchar(128) NOT NULL, "
           "amount_minor bigint NOT NULL, created_at timestamptz NOT NULL")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/pp_bench_rls")
    args = parser.parse_args()
    admin_url, _, name = args.pg_url.rpartition("/")
    with psycopg.connect(f"{admin_url}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
        if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [ROLE]).fetchone():
            admin.execute(f"CREATE ROLE {ROLE} NOLOGIN")
    print(speed_line())
    timings: dict[str, dict[str, list[float]]] = {form: {"insert": [], "scan": []} for form in FORMS}
    try:
        with psycopg.connect(args.pg_url, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE source ({COLUMNS})")
            conn.execute(
                "INSERT INTO source SELECT 1, g, 'txn_' || lpad(g::text, 10, '0'), g %% 100000, "
                "timestamptz '2026-06-01' + g * interval '1 second' FROM generate_series(1, %s) g", [args.rows])
            conn.execute(f"GRANT SELECT ON source TO {ROLE}")
            tables = {}
            for i, (form, predicate) in enumerate(FORMS.items()):
                table = f"rows_{i}"
                tables[form] = table
                conn.execute(f"CREATE TABLE {table} ({COLUMNS})")
                conn.execute(f"CREATE INDEX ON {table} (tenant_id, reference)")
                conn.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
                conn.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
                conn.execute(f"CREATE POLICY tenant ON {table} USING ({predicate}) WITH CHECK ({predicate})")
                conn.execute(f"GRANT SELECT, INSERT ON {table} TO {ROLE}")
            conn.execute("VACUUM ANALYZE source")
            conn.autocommit = False
            for _ in range(args.repeat):
                for form, table in tables.items():
                    conn.execute("RESET ROLE")
                    conn.execute(f"TRUNCATE {table}")  # as the owner: no dead rows left for the scan
                    conn.execute(f"SET ROLE {ROLE}")
                    conn.execute("SELECT set_config('app.tenant_id', '1', true)")
                    started = time.perf_counter()
                    conn.execute(f"INSERT INTO {table} SELECT * FROM source")
                    timings[form]["insert"].append(time.perf_counter() - started)
                    conn.commit()
                for form, table in tables.items():
                    conn.execute(f"SET ROLE {ROLE}")
                    conn.execute("SELECT set_config('app.tenant_id', '1', true)")
                    started = time.perf_counter()
                    count, _ = conn.execute(f"SELECT count(*), sum(amount_minor) FROM {table}").fetchone()
                    timings[form]["scan"].append(time.perf_counter() - started)
                    assert count == args.rows, (form, count)
                    conn.rollback()
    finally:
        with psycopg.connect(f"{admin_url}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    for form, measured in timings.items():
        insert = statistics.median(measured["insert"])
        print(f"{form:<15} INSERT ... SELECT of {args.rows:,} rows: median {insert:.2f} s; "
              f"scan (count, sum): median {statistics.median(measured['scan']) * 1000:.0f} ms "
              f"(of {args.repeat})")
    print(speed_line())


if __name__ == "__main__":
    main()
