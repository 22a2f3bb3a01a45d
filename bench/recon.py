"""Reconciliation at scale: import rows/s, a full run's seconds, peak memory, on one CPU.

Writes export files in a temporary directory (a Stripe itemized payout reconciliation
report with N provider rows, a shop CSV with N orders through a confirmed layout, a
camt.053 statement and P payouts' bank lines), imports them with `file_import` (the path
`recon_import` and the admin use) and runs `run_create`. About 1% of orders carry a
planted break (missing, short or duplicate captures, fee off by a cent, short payouts), so
the run does real work. SQLite by default (a fresh file); `--postgres URL` migrates and
uses that database instead (use your own database name; each run adds a new tenant).
Run twice at two sizes to see that cost grows linearly.

Each figure comes as wall time (with the load average: the machine may be shared) and as
CPU time: this process's (polars and, on SQLite, the database work included) plus, on
PostgreSQL, the server backend's own, read from /proc/<pg_backend_pid()>/stat when the
server runs on this machine. CPU time is what says the rate per core. The first and last
lines time a fixed Python loop (bench/_machine.py): the machine's speed when the figures
were taken.

Files are imported from their path (`file_import(path=...)`): a large CSV is read in slices
(PAYPILOT_RECON_IMPORT_SLICE_BYTES), so the peak memory printed for each size should not
grow with it. `--sizes 1000000,5000000` measures each size in its own process (its own
peak RSS) and ends with a table; every figure is printed beside the machine-speed reading
and as a ratio to the previous release's figures (PREVIOUS, from docs/benchmarks.md).

Usage: .venv/bin/python bench/recon.py [--orders 1000000 | --sizes 1000000,5000000] [--payouts 20000]
       [--cpu 0] [--postgres postgres://postgres@127.0.0.1:5432/pp_rec_bench [--app-role paypilot_app]]
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import io
import json
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 6, 1, tzinfo=UTC)


def _major(minor: int) -> str:
    sign = "-" if minor < 0 else ""
    minor = abs(minor)
    return f"{sign}{minor // 100}.{minor % 100:02d}"


def write_files(work: Path, n: int, payouts: int, seed: int = 7) -> dict[str, Path]:
    """Orders, the provider report and the bank statement of one synthetic shop."""
    rng = random.Random(seed)
    per_payout = max(1, n // payouts)
    step = 200 * 86400 / max(n, 1)  # the orders of about 200 days

    def payout_day(p: int) -> date:
        return (START + timedelta(seconds=(p * per_payout + per_payout - 1) * step)).date() + timedelta(days=2)
    orders_path, provider_path, bank_path = work / "orders.csv", work / "provider.csv", work / "bank.xml"
    payout_net = [0] * payouts
    with orders_path.open("w", newline="") as of, provider_path.open("w", newline="") as pf:
        ow, pw = csv.writer(of, delimiter=";"), csv.writer(pf)
        ow.writerow(["Bestellnummer", "Bestelldatum", "Gesamt", "Währung", "Zahlungsreferenz", "Status"])
        pw.writerow(["balance_transaction_id", "created_utc", "currency", "gross", "fee", "net", "reporting_category",
                     "source_id", "automatic_payout_id", "automatic_payout_effective_at_utc", "charge_id",
                     "payment_metadata[order_id]"])
        for i in range(n):
            p = min(i // per_payout, payouts - 1)
            when = START + timedelta(seconds=i * step)
            amount = rng.randrange(500, 50000)
            fee = (amount * 29000 + 500000) // 1000000 + 30
            order_id, charge = f"O{i:08d}", f"ch_{i:010d}"
            roll = rng.random()
            captured: int | None = amount
            if roll < 0.002:
                captured = None  # missing capture
            elif roll < 0.004:
                captured = amount - 100  # amount mismatch
            elif roll < 0.006:
                fee += 1  # fee a cent above contract
            ow.writerow([order_id, when.strftime("%d/%m/%Y %H:%M"), _major(amount).replace(".", ","), "USD", charge,
                         "paid"])
            payout_id = f"po_{p:08d}"
            paid_on = payout_day(p)
            if captured is not None:
                pw.writerow([f"txn_{i:010d}", when.strftime("%Y-%m-%d %H:%M:%S"), "usd", _major(captured),
                             _major(fee), _major(captured - fee), "charge", charge, payout_id,
                             f"{paid_on} 00:00:00", charge, order_id])
                payout_net[p] += captured - fee
            if 0.006 <= roll < 0.007:  # captured twice
                pw.writerow([f"txn_{i:010d}b", when.strftime("%Y-%m-%d %H:%M:%S"), "usd", _major(amount),
                             _major(fee), _major(amount - fee), "charge", charge + "b", payout_id,
                             f"{paid_on} 00:00:00", charge + "b", order_id])
                payout_net[p] += amount - fee
    entries = []
    for p in range(payouts):
        day = payout_day(p) + timedelta(days=1)
        amount = payout_net[p] - (1250 if p % 97 == 5 else 0)
        if p % 101 == 7 or amount <= 0:
            continue  # never arrived
        entries.append(f"<Ntry><Amt Ccy=\"USD\">{_major(amount)}</Amt><CdtDbtInd>CRDT</CdtDbtInd>"
                       f"<BookgDt><Dt>{day}</Dt></BookgDt><ValDt><Dt>{day}</Dt></ValDt>"
                       f"<AcctSvcrRef>B{p:08d}</AcctSvcrRef><NtryDtls><TxDtls><RmtInf>"
                       f"<Ustrd>STRIPE PAYOUT po_{p:08d}</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>")
    bank_path.write_text(
        '<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt>'
        "<Stmt>" + "\n".join(entries) + "</Stmt></BkToCstmrStmt></Document>", encoding="utf-8")
    return {"orders": orders_path, "provider": provider_path, "bank": bank_path}


def _backend_cpu(connection) -> float | None:  # type: ignore[no-untyped-def]
    """Seconds of CPU the PostgreSQL backend serving this connection has used, or None."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_text(cpu: float, server: float | None, rows: int | None = None) -> str:
    total = cpu + (server or 0.0)
    rate = f" = {rows / total:,.0f} rows/s" if rows else ""
    server_text = "" if server is None else f" + server backend {server:.1f} s"
    return f"CPU: this process {cpu:.1f} s{server_text} = {total:.1f} s{rate}"


# The previous release's figures (docs/benchmarks.md, "A third machine, 3 December 2026"):
# 1,000,000 orders + 998,989 provider rows + 19,802 bank lines, fresh database, one CPU.
# The run's figure there is its wall time; rows/s are rows per CPU-second of the import.
PREVIOUS: dict[str, dict[str, float]] = {
    "sqlite": {"orders": 1_000_000, "machine_s": 0.365, "import_rows_per_cpu_s": 170_173, "run_s": 13.0,
               "peak_mb": 901},
    "postgresql": {"orders": 1_000_000, "machine_s": 0.375, "import_rows_per_cpu_s": 101_059, "run_s": 18.4,
                   "peak_mb": 868},
}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _ratio(now: float, key: str, vendor: str) -> str:
    before = PREVIOUS[vendor][key]
    return f"{now / before:.2f}x the previous release's {before:,.3g}"


class _Profile:
    """cProfile around the timed calls when asked, else nothing."""

    def __init__(self, enabled: bool) -> None:
        self.profile = cProfile.Profile() if enabled else None

    def __enter__(self) -> None:
        if self.profile is not None:
            self.profile.enable()

    def __exit__(self, *exc: object) -> None:
        if self.profile is not None:
            self.profile.disable()

    def report(self, what: str, top: int = 12) -> None:
        if self.profile is None:
            return
        out = io.StringIO()
        pstats.Stats(self.profile, stream=out).sort_stats("tottime").print_stats(top)
        print(f"top {top} cProfile entries of {what} (by own time):")
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-4000:])
        self.profile = cProfile.Profile()


def measure(args: argparse.Namespace, orders: int) -> dict[str, float]:
    """Write, import and run one size in this process; returns its figures."""
    work = Path(tempfile.mkdtemp(prefix="pp-bench-recon."))
    os.environ["DATABASE_URL"] = args.postgres or f"sqlite:///{work}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ["PAYPILOT_LOG_LEVEL"] = "WARNING"
    os.environ["PAYPILOT_RECON_MAX_FILE_BYTES"] = str(64 * 1024**3)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import django

    django.setup()
    from _machine import reference_seconds
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from paypilot.models import Tenant
    from paypilot.services import tenant_create
    from reconciliation.services.contracts import contract_add
    from reconciliation.services.imports import file_import, layout_save
    from reconciliation.services.runs import run_create

    vendor = connection.vendor
    # A new tenant each time (audit rows keep old ones): runs never see an earlier run's rows.
    tenant = tenant_create(slug=f"bench-recon-{Tenant.objects.count() + 1}", name="Bench")
    contract_add(tenant=tenant, currency="USD", effective_from=date(2026, 1, 1), percent="2.9", fixed="0.30",
                 chargeback_fee="15.00", payout_delay_days=2, actor="bench")
    started = time.perf_counter()
    files = write_files(work, orders, args.payouts)
    print(f"wrote files in {time.perf_counter() - started:.1f} s "
          f"({sum(p.stat().st_size for p in files.values()) / 1e6:.0f} MB) in {work}; peak so far {_rss_mb():.0f} MB")
    mapping = {"columns": {"order_id": "Bestellnummer", "ordered_at": "Bestelldatum", "amount": "Gesamt",
                           "currency": "Währung", "payment_reference": "Zahlungsreferenz", "status": "Status"},
               "date_format": "%d/%m/%Y %H:%M", "decimal_separator": ",", "delimiter": ";"}
    with files["orders"].open("rb") as handle:
        head = b"".join(handle.readline() for _ in range(50))
    layout_save(tenant=tenant, kind="orders", mapping=mapping, sample=head, actor="bench")
    if args.app_role:
        # The role the web server and the cluster use: row-level security applies, so an
        # import goes through a temporary table (COPY FROM is refused on a table under RLS).
        from paypilot.pg_roles import app_role_apply

        app_role_apply(role=args.app_role)
        connection.close()
        connection.settings_dict["USER"] = args.app_role
        print(f"as role {args.app_role} (row-level security applies)")
    machine = reference_seconds()
    print(f"machine speed   a 10,000,000-step Python loop took {machine:.2f} s of CPU (previous release: "
          f"{PREVIOUS[vendor]['machine_s']:.3g} s); load average {os.getloadavg()[0]:.1f}")
    total_rows, total_time, total_cpu, total_server = 0, 0.0, 0.0, 0.0
    s1: float | None = None
    profiler = _Profile(args.profile)
    for kind in ("provider", "orders", "bank"):
        s0 = _backend_cpu(connection)
        t0, c0 = time.perf_counter(), time.process_time()
        with profiler:
            batch = file_import(tenant=tenant, kind=kind, filename=files[kind].name, path=files[kind], actor="bench")
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        s1 = _backend_cpu(connection)
        server = None if s0 is None or s1 is None else s1 - s0
        total_rows += batch.rows
        total_time += took
        total_cpu += cpu
        total_server += server or 0.0
        print(f"import {kind:<8} {batch.rows:>10,} rows in {took:6.1f} s = {batch.rows / took:>9,.0f} rows/s wall "
              f"({_cpu_text(cpu, server, batch.rows)}; {batch.file_format}); peak so far {_rss_mb():.0f} MB")
    server_total = total_server if vendor == "postgresql" and s1 is not None else None
    import_cpu = total_cpu + (server_total or 0.0)
    rate = total_rows / import_cpu
    print(f"import all      {total_rows:>10,} rows in {total_time:6.1f} s = {total_rows / total_time:>9,.0f} rows/s "
          f"wall ({_cpu_text(total_cpu, server_total, total_rows)}); load average {os.getloadavg()[0]:.1f}; "
          f"machine {machine:.2f} s; {_ratio(rate, 'import_rows_per_cpu_s', vendor)}")
    profiler.report("the imports")
    s0 = _backend_cpu(connection)
    t0, c0 = time.perf_counter(), time.process_time()
    with profiler:
        run, _ = run_create(tenant=tenant, as_of=date(2026, 12, 31), actor="bench")
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    s1 = _backend_cpu(connection)
    server = None if s0 is None or s1 is None else s1 - s0
    run_cpu = cpu + (server or 0.0)
    result = json.loads(run.result_json)
    counts: dict[str, int] = {}
    for b in result["breaks"]:
        counts[b["kind"]] = counts.get(b["kind"], 0) + 1
    print(f"run             {took:6.1f} s wall ({_cpu_text(cpu, server)}; load average {os.getloadavg()[0]:.1f}; "
          f"machine {machine:.2f} s; per million orders {run_cpu * 1e6 / orders:.1f} s CPU, "
          f"{_ratio(run_cpu * PREVIOUS[vendor]['orders'] / orders, 'run_s', vendor)} (scaled to its size)): "
          f"{result['orders']:,} orders, match rate {result['match_rate']}, "
          f"{len(result['breaks']):,} breaks {dict(sorted(counts.items()))}, {len(result['in_transit'])} in transit")
    del result, run
    profiler.report("the run")
    peak = _rss_mb()
    print(f"peak memory     {peak:,.0f} MB (max RSS of this process; machine {machine:.2f} s; "
          f"{_ratio(peak, 'peak_mb', vendor)})")
    after = reference_seconds()
    print(f"database        {vendor}; machine speed after: {after:.2f} s")
    for path in files.values():
        path.unlink()
    return {"orders": orders, "provider_rows": total_rows, "peak_mb": peak, "import_rows_per_cpu_s": rate,
            "import_rows_per_s_wall": total_rows / total_time, "run_cpu_s": run_cpu, "run_wall_s": took,
            "machine_s": machine, "machine_after_s": after, "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000, help="orders (and about as many provider rows)")
    parser.add_argument("--sizes", default="", help="several --orders, comma-separated, each in its own process "
                        "(so each gets its own peak memory), e.g. 1000000,5000000")
    parser.add_argument("--payouts", type=int, default=20_000, help="payouts (and bank lines)")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to (-1: do not pin)")
    parser.add_argument("--postgres", default="", help="a PostgreSQL URL instead of a fresh SQLite file")
    parser.add_argument("--profile", action="store_true", help="print the top cProfile entries of the imports "
                        "and of the run (the figures then include the profiler's overhead)")
    parser.add_argument("--app-role", default="", help="PostgreSQL: import and run as this application role "
                        "(created by pg_roles' app_role_apply), under row-level security as in production")
    args = parser.parse_args()
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    if not args.sizes:
        figures = measure(args, args.orders)
        print("RESULT " + json.dumps(figures))
        return
    summary = []
    for size in (int(s) for s in args.sizes.split(",")):
        command = [sys.executable, __file__, "--orders", str(size), "--payouts", str(args.payouts),
                   "--cpu", str(args.cpu), "--postgres", args.postgres, "--app-role", args.app_role]
        command += ["--profile"] if args.profile else []
        print(f"--- {size:,} orders (own process)", flush=True)
        out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
        print(out, end="", flush=True)
        summary.append(json.loads(out.rsplit("RESULT ", 1)[1]))
    print("orders      | peak MB | import rows/CPU-s | run CPU s | run CPU s per 1M | machine s | load")
    for f in summary:
        print(f"{f['orders']:>11,} | {f['peak_mb']:>7,.0f} | {f['import_rows_per_cpu_s']:>17,.0f} | "
              f"{f['run_cpu_s']:>9.1f} | {f['run_cpu_s'] * 1e6 / f['orders']:>16.1f} | "
              f"{f['machine_s']:.2f}/{f['machine_after_s']:.2f} | {f['load']:.1f}")


if __name__ == "__main__":
    main()
