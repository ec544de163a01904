"""The response-cache probe's recommendation: the similarity threshold a deployment may use, from `CacheEvidence`.

A threshold qualifies when the one-sided upper bound of the share of its hits that are harmful (`gate.cache_probe`:
the served answer fails the case's checks while the model's own answer passes them, or a stale time-sensitive
answer) is under the rubric's `cache_wrong_hit_rate` limit, on at least `min_hits` hits, and no hit's check was
unknown. Among those, the one with the most right hits (ties: the higher threshold, the safer one): a cache is
worth what it answers right, not what it answers. No limit in the rubric, a probe that failed, or no qualifying
threshold: no recommendation.
"""

from __future__ import annotations

import math
from typing import Any

from ..data_classes import dataclass
from ..record.decision_evidence import CacheEvidence, CacheRow

__all__ = ["Recommendation", "recommend_threshold", "MIN_HITS"]

MIN_HITS = 10
"""Fewest hits a threshold is recommended on (a criterion's `min_samples` raises it): a bound from a handful of
hits says nothing of the traffic a deployment would serve from the cache."""


@dataclass(frozen=True)
class Recommendation:
    threshold: float | None
    limit: float | None
    why: str
    row: CacheRow | None = None

    def as_section(self, hit_rate: float | None = None) -> dict[str, Any]:
        """The report's `recommended` entry."""
        row = self.row
        return {"recommended": {
            "threshold": self.threshold, "limit": self.limit, "why": self.why, "hit_rate": hit_rate,
            "wrong_hit_upper": row.harmful_upper if row else None, "right_hits": row.right_hits if row else None,
            "hits": row.hits if row else None}}


def recommend_threshold(e: CacheEvidence, *, exact: bool) -> Recommendation:
    if e.error:
        return Recommendation(None, e.limit, f"the probe failed: {e.error}")
    if e.limit is None:
        return Recommendation(None, None, "the rubric has no cache_wrong_hit_rate criterion")
    ok = [r for r in e.rows if _qualifies(r, e.limit, e.min_hits)]
    if not ok:
        return Recommendation(None, e.limit, f"no threshold keeps the harmful-hit upper bound under {e.limit:g} on "
                                             f"at least {e.min_hits} hits with every check made")
    best = max(ok, key=lambda r: (r.right_hits, r.threshold if r.threshold is not None else math.inf))
    what = "the exact cache" if exact else f"threshold {best.threshold:g}"
    return Recommendation(
        best.threshold, e.limit,
        f"{what}: the most right hits ({best.right_hits} of {best.hits}) whose harmful-hit upper bound "
        f"({best.harmful_upper:.3g}) is under {e.limit:g}", best)


def _qualifies(row: CacheRow, limit: float, min_hits: int) -> bool:
    return (row.harmful_upper is not None and row.harmful_upper < limit and row.hits >= min_hits
            and not row.unknown_hits)
