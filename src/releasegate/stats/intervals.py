"""Statistics for verdicts you can defend.

The gate decides a criterion "metric op threshold" at a `confidence` with ONE bound: a higher-is-better
criterion passes when the lower bound meets the threshold, a lower-is-better one when the upper bound does;
it fails when the bound on the other side misses. Each of those is a one-sided statement, so every bound
this module hands the gate is a one-sided bound at `confidence` (z = 1.645 at 0.95, not the two-sided 1.96):

- rates: `wilson_bounds`, one-sided Wilson score bounds;
- latency percentiles of independent samples (TTFT, E2E, TPOT per request): `percentile_bounds`, distribution-free
  order-statistic bounds, exact at any n (and `percentile_min_n`, the n below which a bound cannot exist);
- percentiles of inter-token gaps, which are correlated within a request: `cluster_bootstrap`, a bootstrap that
  resamples whole requests;
- how many cases a rate criterion needs before the gate's own bound decides it: `needed_n_for_rate`
  (and `zero_failure_n` for a zero-event rate);
- the difference of two paired proportions (a candidate and a baseline on the same cases): `paired_rate_bounds`,
  Newcombe's score interval (1998, method 10), and `paired_min_n`, the fewest shared cases at which that bound
  can show non-inferiority at all.

Also here: `percentile`, exact McNemar, and the (paired) percentile bootstrap used for latency comparisons.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Callable, Sequence
from statistics import NormalDist, fmean

from .cluster_bounds import ITL_MIN_REQUESTS, cluster_bootstrap

__all__ = [
    "percentile", "pooled_percentile", "z_value", "z_one_sided",
    "wilson", "wilson_bounds", "cluster_share_bounds",
    "percentile_bounds", "percentile_min_n", "cluster_bootstrap",
    "bootstrap", "mcnemar_exact", "paired_bootstrap_delta",
    "needed_n_for_rate", "zero_failure_n", "paired_rate_bounds", "paired_min_n", "ITL_MIN_REQUESTS",
]

_Z95 = 1.959963984540054  # two-sided 95%


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def z_value(confidence: float) -> float:
    """TWO-sided normal quantile, for a central interval that leaves (1 - confidence) / 2 in each tail:
    0.95 -> 1.96. Not for gate decisions, which are one-sided: see `z_one_sided`."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def z_one_sided(confidence: float) -> float:
    """One-sided normal quantile, the z of a single bound at `confidence`: NormalDist().inv_cdf(confidence),
    0.95 -> 1.6449, 0.99 -> 2.3263."""
    _check_confidence(confidence)
    return NormalDist().inv_cdf(confidence)


def percentile(samples: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) of raw samples, linear interpolation between order statistics
    (numpy's default 'linear' method). None for no samples."""
    if len(samples) == 0:
        return None
    return _interpolated(sorted(samples), q)


_POOLED_IN_PYTHON = 100_000
"""Samples below which `pooled_percentile` pools into a list (no numpy import for a small run)."""


def pooled_percentile(groups: Sequence[Sequence[float]], q: float) -> float | None:
    """`percentile` of every group's samples pooled (a streamed answer's inter-token gaps, a group a request),
    read off one array filled straight from the groups and sorted in place: 8 bytes a sample, no float object or
    array made for each (100,000 one-gap requests as arrays were 50 MB for 0.8 MB of gaps). None for none."""
    total = sum(len(group) for group in groups)
    if total < _POOLED_IN_PYTHON:  # a list of floats is small, and numpy not loaded
        return percentile([x for group in groups for x in group], q)
    import numpy as np

    pooled = np.fromiter(itertools.chain.from_iterable(groups), dtype=float, count=total)
    pooled.sort()
    return float(_interpolated(pooled, q))  # type: ignore[arg-type]  # indexed as a list is


def _interpolated(xs: list[float], q: float) -> float:
    """`percentile` of samples already sorted, at least one."""
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# --- rates -------------------------------------------------------------------------------------------------


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p)) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson(successes: int, n: int, z: float = _Z95) -> tuple[float, float] | None:
    """Wilson score interval at an explicit z (default 1.96: the TWO-sided 95% interval). None when n == 0.
    Gate decisions use `wilson_bounds`, which takes a confidence and makes each bound one-sided."""
    if n == 0:
        return None
    return _wilson(successes / n, n, z)


def wilson_bounds(successes: float, n: float, confidence: float = 0.95) -> tuple[float, float] | None:
    """(lower, upper) Wilson score bounds for a binomial proportion, EACH a one-sided bound at `confidence`
    (z = z_one_sided(confidence): P(true rate >= lower) >= confidence, and separately P(true rate <= upper)
    >= confidence; together they form a two-sided interval at 2 * confidence - 1).

    `successes` may be fractional (needed_n_for_rate evaluates the bound at successes = rate * n), and so may
    `n` (an effective sample size under a design effect). Bounds are clamped to [0, 1]. None when n == 0."""
    if n == 0:
        return None
    return _bounds(successes, n, confidence)


def _bounds(successes: float, n: float, confidence: float) -> tuple[float, float]:
    """`wilson_bounds` for n > 0."""
    return _wilson(successes / n, n, z_one_sided(confidence))


def cluster_share_bounds(shares: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """One-sided bounds (each at `confidence`) for the mean of per-cluster shares: a case's share of draws that
    passed, say, when every case was asked k times. The cluster is the unit: Wilson's bounds at n = the number
    of clusters, with the shares' sum as the successes. A mean of values in [0, 1] with mean p has variance at
    most p(1 - p) / n, equality when every cluster is all-or-nothing, so these bounds are never narrower than
    the clusters allow however many draws each holds: nothing gains n by repeating. None for no cluster."""
    _check_confidence(confidence)
    if not shares:
        return None
    if any(not 0 <= s <= 1 for s in shares):
        raise ValueError("shares must lie in [0, 1]")
    return wilson_bounds(float(sum(shares)), len(shares), confidence)


def needed_n_for_rate(
    rate: float, threshold: float, *, higher_is_better: bool, confidence: float, cap: int = 10**7
) -> int | None:
    """Smallest n at which the gate's own bound decides a rate criterion if the observed `rate` stayed as it is.

    The bound is `wilson_bounds(rate * n, n, confidence)` (fractional successes, so the observed rate is exactly
    `rate` at every n). The deciding side is the passing one when `rate` is on the passing side of `threshold`
    (higher-is-better: lower bound >= threshold; lower-is-better: upper bound <= threshold) and the failing one
    otherwise (higher-is-better: upper bound < threshold; lower-is-better: lower bound > threshold).

    With the rate held fixed, the Wilson bounds are nested in n (the set {pi : n (rate - pi)^2 <= z^2 pi (1 - pi)}
    shrinks as n grows), so "decided at n" is monotone: once decided, decided at every larger n. That is what
    makes the exponential search (n = 1, 2, 4, ...) followed by a binary search exact.

    None when rate == threshold (no n decides it) or when no n <= cap decides it."""
    _check_confidence(confidence)
    if rate == threshold or cap < 1:
        return None

    def decided(n: int) -> bool:
        lo, hi = _bounds(rate * n, n, confidence)
        if higher_is_better:
            return lo >= threshold if rate > threshold else hi < threshold
        return hi <= threshold if rate < threshold else lo > threshold

    n = 1
    while n < cap and not decided(n):
        n *= 2
    if n >= cap:
        n = cap
        if not decided(n):
            return None
    lo_n, hi_n = n // 2, n  # invariant: decided(hi_n), and lo_n == 0 or not decided(lo_n)
    while lo_n + 1 < hi_n:
        mid = (lo_n + hi_n) // 2
        lo_n, hi_n = (lo_n, mid) if decided(mid) else (mid, hi_n)
    return hi_n


def zero_failure_n(limit: float, confidence: float = 0.95) -> int | float:
    """Cases with zero events needed before the gate's one-sided Wilson upper bound drops to `limit`.

    The same rule as `needed_n_for_rate(0.0, limit, higher_is_better=False, confidence=...)`; in closed form
    the upper bound at 0 events is z^2 / (n + z^2), so n = ceil(z^2 (1 - limit) / limit) with z = z_one_sided
    (limit 0.001 at 0.95: 2703). 1 when limit >= 1; math.inf when limit <= 0 (no n gets there)."""
    if limit <= 0:
        return math.inf
    if limit >= 1:
        return 1
    n = needed_n_for_rate(0.0, limit, higher_is_better=False, confidence=confidence, cap=2**62)
    assert n is not None
    return n


# --- percentiles of independent samples ---------------------------------------------------------------------


def _binom_tails(n: int, p: float) -> tuple[list[float], list[float]]:
    """left[k] = P(B <= k) and right[k] = P(B >= k) for B ~ Binom(n, p), k = 0..n; each summed from its own
    end so that small tail probabilities keep full relative precision. Terms come from log-space pmfs
    (lgamma), exact up to rounding at any n; terms below exp(-745) are zero in a double anyway."""
    if p <= 0:
        return [1.0] * (n + 1), [1.0] + [0.0] * n
    if p >= 1:
        return [0.0] * n + [1.0], [1.0] * (n + 1)
    lp, lq, lgn = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    lgamma, exp = math.lgamma, math.exp
    pmf = [exp(lgn - lgamma(k + 1) - lgamma(n - k + 1) + k * lp + (n - k) * lq) for k in range(n + 1)]
    left, acc = [0.0] * (n + 1), 0.0
    for k in range(n + 1):
        acc += pmf[k]
        left[k] = min(1.0, acc)
    right, acc = [0.0] * (n + 1), 0.0
    for k in range(n, -1, -1):
        acc += pmf[k]
        right[k] = min(1.0, acc)
    return left, right


def _order_stat_ranks(n: int, q: float, confidence: float) -> tuple[int | None, int | None]:
    """1-based ranks (k_lower, k_upper) of the order statistics `percentile_bounds` returns (None: no rank)."""
    _check_confidence(confidence)
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q!r}")
    if n == 0:
        return None, None
    left, right = _binom_tails(n, q / 100.0)
    # lower: largest k with P(B >= k) >= confidence (P(B >= k) falls as k grows)
    k_lo = next((k for k in range(n, 0, -1) if right[k] >= confidence), None)
    # upper: smallest k with P(B <= k - 1) >= confidence (rises as k grows)
    k_hi = next((k for k in range(1, n + 1) if left[k - 1] >= confidence), None)
    return k_lo, k_hi


def percentile_bounds(samples: Sequence[float], q: float, confidence: float = 0.95) -> tuple[float | None, float | None]:
    """Distribution-free one-sided bounds, each at `confidence`, for the q-th percentile (q in 0..100) of the
    population the independent `samples` were drawn from.

    With X_(1) <= ... <= X_(n) the sorted samples and B ~ Binom(n, q/100):
    - lower = the largest X_(k) with P(B >= k) >= confidence  (P(X_(k) <= true percentile) = P(B >= k));
    - upper = the smallest X_(k) with P(B <= k - 1) >= confidence  (P(X_(k) >= true percentile) = P(B <= k - 1)).
    The coverage is exact for a continuous distribution and conservative otherwise (ties only help), at any n:
    no normal approximation and no bootstrap. A side is None when no order statistic reaches the coverage,
    i.e. n is too small: see `percentile_min_n` (the upper bound of P95 at 0.95 needs n >= 59, of P99 n >= 299).
    (None, None) for no samples.

    The binomial tails are computed exactly (log-space pmf, each tail summed from its own end) in pure Python,
    O(n): about 0.1 s at n = 100k."""
    k_lo, k_hi = _order_stat_ranks(len(samples), q, confidence)
    if k_lo is None and k_hi is None:
        return None, None
    xs = sorted(samples)
    return (xs[k_lo - 1] if k_lo else None), (xs[k_hi - 1] if k_hi else None)


def percentile_min_n(q: float, confidence: float, side: str = "upper") -> int:
    """The smallest n at which `percentile_bounds` gives a bound on `side` ("upper" or "lower") for the
    q-th percentile at `confidence`.

    The upper bound exists once X_(n) qualifies, 1 - p^n >= confidence (p = q/100), so n = ceil(ln(1 - c) / ln p):
    P95 at 0.95 -> 59, P99 at 0.95 -> 299, P95 at 0.99 -> 90, P99 at 0.99 -> 459. The lower bound exists once
    X_(1) qualifies, 1 - (1 - p)^n >= confidence. ValueError when no n ever suffices (upper side at q = 100,
    lower side at q = 0)."""
    _check_confidence(confidence)
    if side not in ("upper", "lower"):
        raise ValueError(f"side must be 'upper' or 'lower', got {side!r}")
    p = q / 100.0 if side == "upper" else 1 - q / 100.0  # the miss probability per sample
    if not 0 <= p < 1:
        raise ValueError(f"no n gives a {side} bound for the {q:g}th percentile")
    if p == 0:
        return 1

    def ok(n: int) -> bool:
        return 1 - p**n >= confidence

    n = max(1, math.ceil(math.log(1 - confidence) / math.log(p)))
    while n > 1 and ok(n - 1):  # guard the closed form against rounding either way
        n -= 1
    while not ok(n):
        n += 1
    return n


# --- bootstrap of arbitrary statistics, comparisons ---------------------------------------------------------


def bootstrap(
    samples: Sequence[float], statistic: Callable[[list[float]], float], *,
    confidence: float = 0.95, resamples: int = 2000, seed: int = 0, sided: str = "two",
) -> tuple[float, float] | None:
    """Percentile bootstrap of `statistic` over independent samples (seeded: the same samples give the same result).

    sided="two" (default): a central interval at `confidence`, the (1 - c)/2 and (1 + c)/2 percentiles of the
    bootstrap distribution. sided="one": (lower, upper) where EACH is a one-sided bound at `confidence`, the
    1 - c and c percentiles; use this when a single bound decides (a gate or a non-inferiority margin).
    None with fewer than 2 samples or no resamples. For percentiles of latency samples prefer `percentile_bounds` (exact at any
    n); for clustered samples `cluster_bootstrap`."""
    if sided not in ("one", "two"):
        raise ValueError(f"sided must be 'one' or 'two', got {sided!r}")
    if len(samples) < 2 or resamples < 1:
        return None
    rng = random.Random(seed)
    data = list(samples)
    n = len(data)
    stats = sorted(statistic([data[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    alpha = (1 - confidence) / 2 if sided == "two" else 1 - confidence
    return _interpolated(stats, 100 * alpha), _interpolated(stats, 100 * (1 - alpha))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs: b = pass->fail, c = fail->pass."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / (1 << n)  # 2**n, typed as an int
    return min(1.0, 2 * tail)


def paired_bootstrap_delta(
    base: Sequence[float], cand: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
    sided: str = "two",
) -> tuple[float, tuple[float, float] | None]:
    """Mean of (cand - base) over paired cases, with a paired bootstrap interval (`sided` as in `bootstrap`:
    "two" a central interval at `confidence`, "one" two bounds each one-sided at `confidence`)."""
    diffs = [c - b for b, c in zip(base, cand)]
    if not diffs:
        return float("nan"), None
    return fmean(diffs), bootstrap(diffs, fmean, confidence=confidence, resamples=resamples, seed=seed, sided=sided)


# --- paired proportions -------------------------------------------------------------------------------------


def paired_rate_bounds(both: float, first_only: float, second_only: float, neither: float,
                       confidence: float = 0.95) -> tuple[float, float] | None:
    """(lower, upper) bounds of p1 - p2, two proportions measured on the same n cases, EACH one-sided at
    `confidence`: Newcombe's hybrid score interval for paired data (Statistics in Medicine 1998;17:2635, method
    10). The cells: `both` cases good in both, `first_only` good in the first only, `second_only` in the second
    only, `neither` (counts, or a weighted table scaled to its effective n). Each proportion gets its Wilson
    bounds (l, u); the two are combined with the correlation phi of the 2x2 table, its numerator moved n/2
    towards 0 when positive (Newcombe's correction):

        lower = d - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
        upper = d + sqrt((p2 - l2)^2 - 2 phi (p2 - l2)(u1 - p1) + (u1 - p1)^2)

    Unlike a bootstrap of the paired differences it does not collapse to [0, 0] when no pair disagrees.
    None for no cases."""
    n = both + first_only + second_only + neither
    if n == 0:
        return None
    return _paired_bounds(both, first_only, second_only, neither, confidence)


def _paired_bounds(both: float, first_only: float, second_only: float, neither: float,
                   confidence: float) -> tuple[float, float]:
    """`paired_rate_bounds` of at least one case."""
    n = both + first_only + second_only + neither
    good1, good2 = both + first_only, both + second_only
    l1, u1 = _bounds(good1, n, confidence)
    l2, u2 = _bounds(good2, n, confidence)
    p1, p2 = good1 / n, good2 / n
    margins = good1 * (n - good1) * good2 * (n - good2)
    product = both * neither - first_only * second_only
    cross = product - n / 2 if product > n / 2 else min(product, 0)
    phi = cross / math.sqrt(margins) if margins else 0.0
    low = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    return max(-1.0, p1 - p2 - low), min(1.0, p1 - p2 + high)


@functools.lru_cache(maxsize=256)
def paired_min_n(margin: float, confidence: float = 0.95, cap: int = 20000) -> int | None:
    """The fewest shared cases at which `paired_rate_bounds` shows "the second is no worse than the first by
    more than `margin`" (upper bound of p1 - p2 <= margin) when no pair disagrees, whatever the split of the
    agreeing pairs (the worst split: a tie at any accuracy, all good or nearly none): below it some tie cannot be
    told from a loss of `margin`, so a comparison of fewer cases is undecided whatever it saw (0.02 at 0.95: 155;
    all good in both would need 133). Found by a search in n over every split (the worst tie's bound narrows as
    n grows); None when margin <= 0 (no n shows it) or no n <= cap does."""
    _check_confidence(confidence)
    if margin <= 0:
        return None

    def shown(n: int) -> bool:
        return all(_paired_bounds(a, 0, 0, n - a, confidence)[1] <= margin for a in range(n + 1))

    n = 1
    while n < cap and not shown(n):
        n = min(cap, n * 2)
    if not shown(n):
        return None
    lo, hi = n // 2, n
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if shown(mid) else (mid, hi)
    return hi
