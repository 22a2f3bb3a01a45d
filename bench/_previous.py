"""The previous release's figures, for the ratio a benchmark prints beside its own.

A figure alone says little on a shared machine whose speed varies 2x in an afternoon
(bench/_machine.py). Each benchmark prints what it measured, the machine-speed reading at
that moment, the ratio to the previous release's figure, and that ratio adjusted by the two
speed readings (`adjusted` = the ratio a machine of the previous reading's speed would show,
assuming the work scales with the Python loop: it says roughly, not exactly, what the code
itself gained). The figures are those recorded in docs/benchmarks.md for the release before
issue 32, each with the section it comes from.

Usage from a shell benchmark:
  python bench/_previous.py ack sqlite ACK_JSON SPEED        (httpbench's -o output)
  python bench/_previous.py drain postgres PER_SECOND SPEED
(bench/recon.py keeps the reconciliation figures in its own PREVIOUS, beside the code that
prints them.)
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    higher_is_better: bool
    speed_s: float | None  # bench/_machine.py's reading when it was taken (None: not recorded)
    source: str


PREVIOUS: dict[str, Figure] = {
    # Acknowledgements: the "Signed Stripe webhooks" table (30 Nov 2026), but SQLite at 64
    # connections as issue 32 sums up the last round. None has a machine-speed reading.
    "ack_sqlite_c1": Figure(940, "acks/s", True, None, "docs/benchmarks.md, 30 Nov 2026, SQLite c=1"),
    "ack_sqlite_c1_p99": Figure(6.2, "ms p99", False, None, "docs/benchmarks.md, 30 Nov 2026, SQLite c=1"),
    "ack_sqlite_c16": Figure(1066, "acks/s", True, None, "docs/benchmarks.md, 30 Nov 2026, SQLite c=16"),
    "ack_sqlite_c16_p99": Figure(23.5, "ms p99", False, None, "docs/benchmarks.md, 30 Nov 2026, SQLite c=16"),
    "ack_sqlite_c64": Figure(930, "acks/s", True, None, "issue 32: the last round, SQLite c=64"),
    "ack_sqlite_c64_p99": Figure(92, "ms p99", False, None, "issue 32: the last round, SQLite c=64"),
    "ack_postgres_c1": Figure(514, "acks/s", True, None, "docs/benchmarks.md, 30 Nov 2026, PostgreSQL c=1"),
    "ack_postgres_c1_p99": Figure(2.6, "ms p99", False, None, "docs/benchmarks.md, 30 Nov 2026, PostgreSQL c=1"),
    "ack_postgres_c16": Figure(866, "acks/s", True, None, "docs/benchmarks.md, 30 Nov 2026, PostgreSQL c=16"),
    "ack_postgres_c16_p99": Figure(25.1, "ms p99", False, None, "docs/benchmarks.md, 30 Nov 2026, PostgreSQL c=16"),
    "ack_postgres_c64": Figure(887, "acks/s", True, None, "docs/benchmarks.md, 30 Nov 2026, PostgreSQL c=64"),
    "ack_postgres_c64_p99": Figure(79.5, "ms p99", False, None, "docs/benchmarks.md, 30 Nov 2026, PostgreSQL c=64"),
    # "A third machine, 3 December 2026 20:30-20:52 UTC": six drains, 735-788/s (median 764).
    "drain_postgres": Figure(764, "deliveries/s", True, 0.38, "docs/benchmarks.md, 3 Dec 2026 20:40-21:36"),
    "drain_sqlite": Figure(805, "deliveries/s", True, None, "docs/benchmarks.md, 30 Nov 2026, SQLite drain"),
}


def ratio_line(name: str, value: float, speed_s: float | None) -> str:
    """`name: value unit; previous P (ratio R, adjusted for machine speed A)`; ratios > 1 are better."""
    before = PREVIOUS[name]
    ratio = value / before.value if before.higher_is_better else before.value / value if value else float("inf")
    text = f"{name}: {value:,.1f} {before.unit}; previous release {before.value:,.1f} ({before.source}): x{ratio:.2f}"
    if speed_s and before.speed_s:
        # A faster machine (a shorter loop) makes everything look better by about this much.
        adjusted = ratio * speed_s / before.speed_s
        text += (f", x{adjusted:.2f} at the previous machine's speed"
                 f" (loop {speed_s:.2f} s now, {before.speed_s:.2f} s then)")
    return text


def _ack(db: str, path: str, speed: float | None) -> None:
    with open(path) as stream:
        summary = json.load(stream)["summary_median"]
    for step in summary:
        line = f"c={step['concurrency']}: {step['rps']} acks/s, p99 {step['p99_ms']} ms"
        key = f"ack_{db}_c{step['concurrency']}"
        if key in PREVIOUS:
            line += "\n  " + ratio_line(key, float(step["rps"]), speed)
            line += "\n  " + ratio_line(f"{key}_p99", float(step["p99_ms"]), speed)
        print(line)


def main(argv: list[str]) -> None:
    kind, db, figure, speed = argv[0], argv[1], argv[2], float(argv[3]) if len(argv) > 3 else None
    if kind == "ack":
        _ack(db, figure, speed)
    else:
        print(ratio_line(f"{kind}_{db}", float(figure), speed))


if __name__ == "__main__":
    main(sys.argv[1:])
