"""How fast this machine's CPU is right now, as one line for a benchmark's output.

The machines these benchmarks run on are shared: the same code measured 1.4-2x apart
within one afternoon (docs/benchmarks.md). A fixed piece of pure-Python work, timed in CPU
seconds, printed beside a benchmark's figures, says which speed they were taken at, so two
runs are compared only when this line agrees. Usage: `python bench/_machine.py`, or
`speed_line()` from a benchmark.
"""

from __future__ import annotations

import time

STEPS = 10_000_000


def reference_seconds(repeat: int = 3) -> float:
    """The best of `repeat` CPU timings of a 10,000,000-step Python loop (best: the least
    disturbed by whatever else ran)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        total = 0
        for step in range(STEPS):
            total += step
        best = min(best, time.process_time() - started)
    return best


def speed_line() -> str:
    return (f"machine speed   a {STEPS:,}-step Python loop took {reference_seconds():.2f} s of CPU "
            "(compare runs only at about the same figure)")


if __name__ == "__main__":
    print(speed_line())
