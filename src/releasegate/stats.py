"""Statistics used by metrics: percentiles with linear interpolation and Wilson intervals."""

from __future__ import annotations

import math

__all__ = ["percentile", "wilson"]

_Z95 = 1.959963984540054


def percentile(samples: list[float], q: float) -> float | None:
    """The q-th percentile (0..100) of raw samples, linear interpolation between order statistics."""
    if not samples:
        return None
    xs = sorted(samples)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def wilson(successes: int, n: int, z: float = _Z95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
