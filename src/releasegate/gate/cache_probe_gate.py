"""The gate's view of the response-cache probe (run.json `response_cache_probe`, see gate.cache_probe): the
metrics `cache_hit_rate` (hits over the cases the cache saw) and `cache_wrong_hit_rate` (the share of hits that are
harmful) at the deployment's threshold, and the evidence `decision.cache` recommends a threshold from.

Rows recorded before harm was told from wrongness (no `harmful_hits`) are read with every wrong hit harmful: the
old count is an upper bound of the new one, so an old run never reads safer than it was."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..decision.cache import MIN_HITS, recommend_threshold
from ..record.decision_evidence import CacheEvidence, CacheRow
from ..record.metrics import MetricValue
from ..stats.intervals import wilson_bounds

if TYPE_CHECKING:
    from ..inputs.rubric import Criterion

__all__ = ["CACHE_METRICS", "cache_metric", "cache_section", "WRONG_HIT_CONFIDENCE"]

CACHE_METRICS = ("cache_hit_rate", "cache_wrong_hit_rate")
WRONG_HIT_CONFIDENCE = 0.95
"""The bound's confidence when the rubric names none: the upper bound decides a harmful-hit criterion."""
_NO_PROBE = "no response-cache probe ran (response_cache_probe:)"


def cache_metric(name: str, probe: dict[str, Any] | None, confidence: float | None = None) -> MetricValue:
    """A `cache_*` metric at the deployment's threshold (exact mode: the exact cache), with Wilson bounds at the
    (effective) n it is a share of; a harmful share with a hit whose check could not be made is unknown."""
    row = _deployed(probe)
    confidence = confidence or WRONG_HIT_CONFIDENCE
    if row is None:
        failed = (probe or {}).get("error")
        return MetricValue(None, 0, note=f"the response-cache probe failed: {failed}" if failed else _NO_PROBE)
    if name == "cache_hit_rate":
        n, rate = row["n"], row["hit_rate"]
        return MetricValue(rate, n, wilson_bounds(rate * n, n, confidence) if n else None, confidence=confidence)
    figures = _harm(row)
    if figures.unknown_hits:
        return MetricValue(None, figures.hits, note=f"{figures.unknown_hits} hit(s) could not be checked (no judge "
                                                    "verdict or token count): the harmful share is unknown")
    if not figures.hits:
        return MetricValue(None, 0, note="the cache served no hit: no share of hits to bound")
    n = row.get("effective_hits") or figures.hits
    share = row.get("harmful_share")
    share = share if share is not None else figures.harmful_hits / figures.hits
    return MetricValue(share, figures.hits, wilson_bounds(share * n, n, confidence), confidence=confidence)


def cache_section(probe: dict[str, Any] | None, criteria: Sequence[Criterion]) -> dict[str, Any] | None:
    """The report's `response_cache_probe`: the probe's figures, every row's harmful-hit upper bound at the
    criterion's confidence, and the threshold `decision.cache` recommends."""
    if probe is None:
        return None
    limit_on = next((c for c in criteria if c.metric == "cache_wrong_hit_rate"), None)
    confidence = (limit_on.confidence if limit_on is not None else None) or WRONG_HIT_CONFIDENCE
    rows = [_bounded(r, confidence) for r in probe["rows"]]
    evidence = CacheEvidence(rows=tuple(_harm(r) for r in rows), limit=limit_on.threshold if limit_on else None,
                             min_hits=max(MIN_HITS, limit_on.min_samples if limit_on else 0), error=probe.get("error"))
    recommended = recommend_threshold(evidence, exact=probe["mode"] == "exact")
    chosen = next((r for r in rows if recommended.row is not None and r["threshold"] == recommended.threshold), None)
    return {**probe, "rows": rows, **recommended.as_section(chosen["hit_rate"] if chosen else None)}


def _deployed(probe: dict[str, Any] | None) -> dict[str, Any] | None:
    if not probe or not probe.get("rows"):
        return None
    if probe["mode"] == "exact":
        first: dict[str, Any] = probe["rows"][0]
        return first
    return next((r for r in probe["rows"] if r["threshold"] == probe["threshold"]), None)


def _harm(row: dict[str, Any]) -> CacheRow:
    harmful = row.get("harmful_hits", row.get("wrong_hits", 0))
    judged = row.get("hittable", row.get("hits", 0))  # every case the cache could serve, whatever the fill order
    return CacheRow(threshold=row.get("threshold"), hits=judged,
                    right_hits=row.get("right_hits", judged - harmful), harmful_hits=harmful,
                    unknown_hits=row.get("unknown_hits", 0), harmful_upper=row.get("wrong_hit_upper"))


def _bounded(row: dict[str, Any], confidence: float) -> dict[str, Any]:
    """The row with its harmful-hit upper bound at `confidence` (`wrong_hit_upper`, the name reports read)."""
    harm = _harm(row)
    if harm.unknown_hits or not harm.hits:
        return {**row, "wrong_hit_upper": None, "confidence": confidence}
    n = row.get("effective_hits") or harm.hits
    share = row.get("harmful_share")
    share = share if share is not None else harm.harmful_hits / harm.hits
    bounds = wilson_bounds(share * n, n, confidence)
    return {**row, "wrong_hit_upper": bounds[1] if bounds else None, "confidence": confidence}
