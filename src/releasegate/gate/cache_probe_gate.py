"""The gate's view of the response-cache probe (run.json `response_cache_probe`, see gate.cache_probe): the
metrics `cache_hit_rate` and `cache_wrong_hit_rate` at the deployment's threshold, and the recommended
threshold: the highest hit rate whose wrong-hit upper bound (at the criterion's confidence) stays under the
rubric's `cache_wrong_hit_rate` limit, or none."""

from __future__ import annotations

from ..record.metrics import MetricValue
from ..stats.intervals import wilson_bounds
from .cache_probe import recommend

__all__ = ["CACHE_METRICS", "cache_metric", "cache_section", "WRONG_HIT_CONFIDENCE"]

CACHE_METRICS = ("cache_hit_rate", "cache_wrong_hit_rate")
WRONG_HIT_CONFIDENCE = 0.95
"""The bound's confidence when the rubric names none: the upper bound decides a wrong-hit criterion."""
_NO_PROBE = "no response-cache probe ran (response_cache_probe:)"


def cache_metric(name: str, probe: dict | None, confidence: float | None = None) -> MetricValue:
    """A `cache_*` metric at the deployment's threshold (exact mode: the exact cache), with Wilson bounds."""
    row = _deployed(probe)
    if row is None:
        failed = (probe or {}).get("error")
        return MetricValue(None, 0, note=f"the response-cache probe failed: {failed}" if failed else _NO_PROBE)
    count = row["hits"] if name == "cache_hit_rate" else row["wrong_hits"]
    confidence = confidence or WRONG_HIT_CONFIDENCE
    n = row["n"]
    return MetricValue(count / n if n else None, n, wilson_bounds(count, n, confidence), confidence=confidence)


def cache_section(probe: dict | None, criteria) -> dict | None:
    """The report's `response_cache_probe`: the probe's figures, every row's upper bound at the wrong-hit
    criterion's confidence, and the recommended threshold under its limit."""
    if probe is None:
        return None
    limit_on = next((c for c in criteria if c.metric == "cache_wrong_hit_rate"), None)
    confidence = (limit_on.confidence if limit_on is not None else None) or WRONG_HIT_CONFIDENCE
    rows = [_bounded(r, confidence) for r in probe["rows"]]
    recommended = _recommended(rows, probe["mode"], limit_on)
    if probe.get("error"):
        recommended = {**recommended, "threshold": None, "why": f"the probe failed: {probe['error']}"}
    return {**probe, "rows": rows, "recommended": recommended}


def _deployed(probe: dict | None) -> dict | None:
    if not probe or not probe.get("rows"):
        return None
    if probe["mode"] == "exact":
        return probe["rows"][0]
    return next((r for r in probe["rows"] if r["threshold"] == probe["threshold"]), None)


def _bounded(row: dict, confidence: float) -> dict:
    bounds = wilson_bounds(row["wrong_hits"], row["n"], confidence)
    return {**row, "wrong_hit_upper": bounds[1] if bounds else None, "confidence": confidence}


def _recommended(rows: list[dict], mode: str, limit_on) -> dict:
    if limit_on is None:
        return {"threshold": None, "limit": None, "why": "the rubric has no cache_wrong_hit_rate criterion"}
    best = recommend(rows, limit_on.threshold)
    limit = limit_on.threshold
    if best is None:
        return {"threshold": None, "limit": limit, "why": f"no threshold keeps the wrong-hit upper bound under {limit:g}"}
    what = "the exact cache" if mode == "exact" else f"threshold {best['threshold']:g}"
    return {"threshold": best["threshold"], "limit": limit, "hit_rate": best["hit_rate"],
            "wrong_hit_upper": best["wrong_hit_upper"],
            "why": f"{what}: the highest hit rate ({best['hit_rate']:.1%}) whose wrong-hit upper bound "
                   f"({best['wrong_hit_upper']:.3g}) is under {limit:g}"}
