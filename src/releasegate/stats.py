"""Statistics for verdicts you can defend: percentiles, Wilson and bootstrap intervals, exact McNemar,
and the sample size a rate criterion needs before it can be decided."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from statistics import NormalDist, fmean

__all__ = [
    "percentile", "wilson", "z_value", "bootstrap", "mcnemar_exact", "paired_bootstrap_delta",
    "needed_n_for_rate", "zero_failure_n",
]

_Z95 = 1.959963984540054


def z_value(confidence: float) -> float:
    """Two-sided normal quantile: 0.95 -> 1.96."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def percentile(samples: Sequence[float], q: float) -> float | None:
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


def bootstrap(
    samples: Sequence[float], statistic: Callable[[list[float]], float], *,
    confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `statistic` (seeded: the same samples give the same interval)."""
    if len(samples) < 2:
        return None
    rng = random.Random(seed)
    data = list(samples)
    n = len(data)
    stats = sorted(statistic([data[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    alpha = (1 - confidence) / 2
    return percentile(stats, 100 * alpha), percentile(stats, 100 * (1 - alpha))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs: b = pass->fail, c = fail->pass."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_bootstrap_delta(
    base: Sequence[float], cand: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, tuple[float, float] | None]:
    """Mean of (cand - base) over paired cases, with a paired bootstrap interval."""
    diffs = [c - b for b, c in zip(base, cand)]
    if not diffs:
        return float("nan"), None
    return fmean(diffs), bootstrap(diffs, fmean, confidence=confidence, resamples=resamples, seed=seed)


def zero_failure_n(limit: float, confidence: float = 0.95) -> int:
    """Cases with zero events needed before the one-sided upper bound drops to `limit`:
    (1 - limit)^n <= 1 - confidence, about 3/limit at 95% (the rule of three)."""
    if limit <= 0:
        return math.inf  # type: ignore[return-value]
    if limit >= 1:
        return 1
    return math.ceil(math.log(1 - confidence) / math.log(1 - limit))


def needed_n_for_rate(rate: float, threshold: float, *, higher_is_better: bool, confidence: float, cap: int = 10**7) -> int | None:
    """Smallest n at which a Wilson interval around the observed `rate` clears `threshold` on the deciding side
    (None when the observed rate sits on the threshold: no n decides it)."""
    if rate == threshold:
        return None
    if not higher_is_better and rate == 0:
        return zero_failure_n(threshold, confidence)
    z = z_value(confidence)

    def decided(n: int) -> bool:
        lo, hi = wilson(round(rate * n), n, z)
        if higher_is_better:
            return lo >= threshold if rate > threshold else hi < threshold
        return hi <= threshold if rate < threshold else lo > threshold

    n = 1
    while n < cap and not decided(n):
        n *= 2
    if n >= cap:
        return None
    lo_n, hi_n = n // 2, n
    while lo_n + 1 < hi_n:  # smallest n that decides, by bisection
        mid = (lo_n + hi_n) // 2
        lo_n, hi_n = (lo_n, mid) if decided(mid) else (mid, hi_n)
    return hi_n
