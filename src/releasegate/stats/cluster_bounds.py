"""Bounds for a percentile of samples that come in correlated groups: one request's inter-token gaps
(`cluster_bootstrap`, re-exported by `stats`), with the fewest requests it decides from."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: the CLI's light commands do without it
    import numpy as np

__all__ = ["ITL_MIN_REQUESTS", "cluster_bootstrap"]


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


# --- percentiles of clustered samples -----------------------------------------------------------------------

ITL_MIN_REQUESTS = 30
"""Fewest requests (groups) `cluster_bootstrap` gives bounds from. In simulation (requests whose gap level varies
lognormally between requests, 20-200 gaps each) the plain percentile bootstrap's one-sided 0.95 upper bound of
P95 covered 0.53 at 2 requests, 0.64-0.78 at 10 and only 0.82-0.89 at 30-100: it is too narrow at any n. Hence
the bound is read at a calibrated level (`_ITL_TAIL_SHARE`) and not below 30 requests, where that level covered
0.90-0.94 (0.94-0.97 at 50-100 with moderate spread between requests)."""
_ITL_TAIL_SHARE = 0.2
"""The bootstrap bound is its 1 - (1 - confidence) * 0.2 percentile (0.99 for a 0.95 bound): calibrated above."""


_DRAWS_AT_ONCE = 1 << 18
"""Group draws held at once (int64, a few arrays of it): 1000 resamples of 100,000 requests would otherwise hold
800 MB per array."""


def _pooled_percentiles(values: np.ndarray, gid: np.ndarray, sizes: np.ndarray, counts: np.ndarray, q: float) -> np.ndarray:
    """For each row of `counts` (how many times each group is drawn), the q-th percentile ('linear', as
    `percentile`) of the pooled resample, without building it: `values` is every gap sorted ascending and
    `gid` its group, so the pooled sorted resample repeats values[j] counts[gid[j]] times, and its m-th element
    (0-based) is values[j] for the first j whose cumulative weight exceeds m."""
    import numpy as np

    out = np.empty(len(counts))
    weights = np.empty(len(values), dtype=np.int64)
    cum = np.empty(len(values), dtype=np.int64)
    frac_q = q / 100.0
    for r, row in enumerate(counts):
        total = int(row @ sizes)
        pos = (total - 1) * frac_q
        lo = math.floor(pos)
        hi = min(lo + 1, total - 1)
        np.take(row, gid, out=weights)
        np.cumsum(weights, out=cum)
        j_lo, j_hi = np.searchsorted(cum, (lo, hi), side="right")
        x_lo, x_hi = values[j_lo], values[j_hi]
        out[r] = x_lo + (x_hi - x_lo) * (pos - lo)
    return out


def cluster_bootstrap(
    groups: Sequence[Sequence[float]], statistic_q: float, confidence: float = 0.95, resamples: int = 1000, seed: int = 0,
    min_groups: int = ITL_MIN_REQUESTS,
) -> tuple[float, float] | None:
    """Bootstrap bounds for the q-th percentile (`statistic_q`, 0..100) of the pooled samples when samples come
    in correlated groups, e.g. one request's inter-token gaps: the resampling unit is the GROUP (draw as many
    groups as there are, with replacement, and pool their gaps), so the spread between requests shows in the
    interval instead of being averaged away as if every gap were independent.

    Returns (lower, upper), EACH a one-sided bound at `confidence`: the tail percentiles of the bootstrap
    distribution at the calibrated level (see `ITL_MIN_REQUESTS`). None with fewer than `min_groups` (default
    ITL_MIN_REQUESTS) non-empty groups. Seeded (numpy
    default_rng(seed)): the same input gives the same bounds.

    Vectorised: the gaps are sorted once; a resample's pooled percentile is a weighted percentile of the sorted
    gaps (weight = how many times the gap's group was drawn), read off cumulative weights, so no resample is
    materialised (100k gaps x 1000 resamples: well under a second)."""
    _check_confidence(confidence)
    if not 0 <= statistic_q <= 100:
        raise ValueError(f"statistic_q must be in [0, 100], got {statistic_q!r}")
    if sum(1 for group in groups if len(group)) < max(2, min_groups) or resamples < 1:
        return None  # decided before numpy loads: a run without inter-token gaps (most) never needs it
    import numpy as np

    # the gaps pooled straight into one array: no array a request held at once (about 500 bytes a request)
    sizes = np.fromiter((np.size(group) for group in groups), dtype=np.int64, count=len(groups))
    values = np.fromiter(itertools.chain.from_iterable(np.ravel(group) for group in groups), dtype=float,
                         count=int(sizes.sum()))
    sizes = sizes[sizes > 0]
    if len(sizes) < max(2, min_groups) or resamples < 1:
        return None
    g = len(sizes)
    # sorted one array at a time, the order let go of at once: 24 bytes a gap at most here, not 40
    order = np.argsort(values, kind="stable")
    values = values[order]
    gid = np.repeat(np.arange(g, dtype=np.int32 if g < 2**31 else np.int64), sizes)[order]
    del order
    rng = np.random.default_rng(seed)
    stats = np.empty(resamples)
    rows = max(1, _DRAWS_AT_ONCE // g)  # a block of resamples at a time: memory flat in the number of requests
    for first in range(0, resamples, rows):  # blocks draw the same stream as one (resamples, g) draw would
        block = min(rows, resamples - first)
        draws = rng.integers(0, g, size=(block, g)) + g * np.arange(block)[:, None]
        counts = np.bincount(draws.ravel(), minlength=block * g).reshape(block, g).astype(np.int64)
        stats[first:first + block] = _pooled_percentiles(values, gid, sizes, counts, statistic_q)
    alpha = (1 - confidence) * _ITL_TAIL_SHARE
    lower, upper = np.percentile(stats, [100 * alpha, 100 * (1 - alpha)])
    return float(lower), float(upper)

