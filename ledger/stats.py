"""Interval arithmetic for the report: Wilson score intervals, Newcombe's hybrid score
interval for a difference of two proportions, and percentiles of bucketed delays. Pure.

Sources: E. B. Wilson (1927), "Probable inference, the law of succession, and statistical
inference", JASA 22:209-212; R. G. Newcombe (1998), "Interval estimation for the difference
between independent proportions: comparison of eleven methods", Statistics in Medicine
17:873-890, method 10 (the hybrid score interval built from the two Wilson intervals without
continuity correction). Newcombe's comparison found it keeps close to nominal coverage at small
counts and extreme rates, where the normal (Wald) approximation does not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

Z95 = 1.959963984540054  # two-sided 95%: the 0.975 quantile of the standard normal


def wilson_interval(*, successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for successes/trials (no continuity correction)."""
    if trials <= 0:
        raise ValueError("trials must be positive")
    p = successes / trials
    z2 = z * z
    centre = p + z2 / (2 * trials)
    spread = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    denominator = 1 + z2 / trials
    return max(0.0, (centre - spread) / denominator), min(1.0, (centre + spread) / denominator)


def newcombe_interval(*, x1: int, n1: int, x2: int, n2: int, z: float = Z95) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) for p1 - p2, from the Wilson intervals."""
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson_interval(successes=x1, trials=n1, z=z)
    l2, u2 = wilson_interval(successes=x2, trials=n2, z=z)
    difference = p1 - p2
    low = difference - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = difference + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return low, high


def bucket_percentile(buckets: Iterable[tuple[int, int, int]], q: float) -> float | None:
    """The q-quantile of values grouped in buckets (lower bound, width, count), interpolated
    linearly inside the bucket it falls in (the grouped-data median). None when empty."""
    ordered = sorted((low, width, count) for low, width, count in buckets if count > 0)
    total = sum(count for _, _, count in ordered)
    if total == 0:
        return None
    target = q * total
    seen = 0
    for low, width, count in ordered:
        if seen + count >= target:
            return low + width * (target - seen) / count
        seen += count
    low, width, _ = ordered[-1]
    return float(low + width)


def invoices_for_half_width(*, p_treatment: float, p_holdout: float, holdout_share: float,
                            half_width: float, z: float = Z95) -> float:
    """Planning estimate (normal approximation, fine for sizing, not for the interval
    itself): total randomised invoices for a 95% interval of +/- half_width on p1 - p2."""
    variance = (p_treatment * (1 - p_treatment) / (1 - holdout_share)
                + p_holdout * (1 - p_holdout) / holdout_share)
    return z * z * variance / (half_width * half_width)
