"""The gate's view of the response-cache probe (run.json `response_cache_probe`, see gate.cache_probe): the
metrics `cache_hit_rate` (hits over the cases the cache saw) and `cache_wrong_hit_rate` (the share of hits that are
harmful) at the deployment's threshold, and the evidence `decision.cache` recommends a threshold from.

Rows recorded before harm was told from wrongness (no `harmful_hits`) are read with every wrong hit harmful: the
old count is an upper bound of the new one, so an old run never reads safer than it was."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from ..decision.cache import MIN_HITS, recommend_threshold
from ..model_base import Model
from ..record.capacity_sweep import Number
from ..record.decision_evidence import CacheEvidence, CacheRow
from ..record.metrics import MetricValue
from ..stats.intervals import wilson_bounds

if TYPE_CHECKING:
    from ..inputs.rubric import Criterion

__all__ = ["CACHE_METRICS", "cache_metric", "cache_section", "WRONG_HIT_CONFIDENCE"]


class ProbeRow(Model):
    """One threshold of the probe (run.json `response_cache_probe.rows`), as the gate reads it; numbers keep
    their JSON type (`record.run_parts.ProbeRow` checks the stored shape)."""

    model_config = ConfigDict(extra="allow")

    threshold: Number | None = None
    n: int
    hits: int
    wrong_hits: int
    hit_rate: Number | None = None
    hittable: int | None = None
    right_hits: int | None = None
    harmful_hits: int | None = None
    unknown_hits: int = 0
    harmful_share: Number | None = None
    effective_hits: Number | None = None
    wrong_hit_upper: Number | None = None


class CacheProbeFacts(Model):
    """run.json `response_cache_probe`, as the gate reads it."""

    model_config = ConfigDict(extra="allow")

    mode: str = ""
    threshold: Number | None = None
    rows: list[ProbeRow] = []
    error: str | None = None


CACHE_METRICS = ("cache_hit_rate", "cache_wrong_hit_rate")
WRONG_HIT_CONFIDENCE = 0.95
"""The bound's confidence when the rubric names none: the upper bound decides a harmful-hit criterion."""
_NO_PROBE = "no response-cache probe ran (response_cache_probe:)"


def cache_metric(name: str, probe: dict[str, Any] | None, confidence: float | None = None) -> MetricValue:
    """A `cache_*` metric at the deployment's threshold (exact mode: the exact cache), with Wilson bounds at the
    (effective) n it is a share of; a harmful share with a hit whose check could not be made is unknown."""
    facts = CacheProbeFacts.model_validate(probe) if probe else None
    row = _deployed(facts)
    confidence = confidence or WRONG_HIT_CONFIDENCE
    if row is None:
        failed = facts.error if facts else None
        return MetricValue(None, 0, note=f"the response-cache probe failed: {failed}" if failed else _NO_PROBE)
    if name == "cache_hit_rate":
        n, rate = row.n, row.hit_rate
        bounds = wilson_bounds(rate * n, n, confidence) if n and rate is not None else None
        return MetricValue(rate, n, bounds, confidence=confidence)
    figures = _harm(row)
    if figures.unknown_hits:
        return MetricValue(None, figures.hits, note=f"{figures.unknown_hits} hit(s) could not be checked (no judge "
                                                    "verdict or token count): the harmful share is unknown")
    if not figures.hits:
        return MetricValue(None, 0, note="the cache served no hit: no share of hits to bound")
    share, effective = _share(row, figures), _n(row, figures)
    return MetricValue(share, figures.hits, wilson_bounds(share * effective, effective, confidence), confidence=confidence)


def _share(row: ProbeRow, harm: CacheRow) -> float:
    """The harmful share of the hits (weighted under a sample)."""
    return row.harmful_share if row.harmful_share is not None else harm.harmful_hits / harm.hits


def _n(row: ProbeRow, harm: CacheRow) -> float:
    """The (effective) number of hits the share is of."""
    return row.effective_hits or harm.hits


def cache_section(probe: dict[str, Any] | None, criteria: Sequence[Criterion]) -> dict[str, Any] | None:
    """The report's `response_cache_probe`: the probe's figures, every row's harmful-hit upper bound at the
    criterion's confidence, and the threshold `decision.cache` recommends."""
    if probe is None:
        return None
    facts = CacheProbeFacts.model_validate(probe)
    limit_on = next((c for c in criteria if c.metric == "cache_wrong_hit_rate"), None)
    confidence = (limit_on.confidence if limit_on is not None else None) or WRONG_HIT_CONFIDENCE
    recorded: list[dict[str, Any]] = probe["rows"]  # kept as recorded, each with its bound added
    bounds = [_upper(row, confidence) for row in facts.rows]
    rows = [{**raw, "wrong_hit_upper": upper, "confidence": confidence} for raw, upper in zip(recorded, bounds)]
    harms = [replace(_harm(row), harmful_upper=upper) for row, upper in zip(facts.rows, bounds)]
    evidence = CacheEvidence(rows=tuple(harms), limit=limit_on.threshold if limit_on else None,
                             min_hits=max(MIN_HITS, limit_on.min_samples if limit_on else 0), error=facts.error)
    recommended = recommend_threshold(evidence, exact=facts.mode == "exact")
    chosen = next((r for r in facts.rows if recommended.row is not None and r.threshold == recommended.threshold), None)
    return {**probe, "rows": rows, **recommended.as_section(chosen.hit_rate if chosen else None)}


def _deployed(probe: CacheProbeFacts | None) -> ProbeRow | None:
    if not probe or not probe.rows:
        return None
    if probe.mode == "exact":
        return probe.rows[0]
    return next((r for r in probe.rows if r.threshold == probe.threshold), None)


def _harm(row: ProbeRow | dict[str, Any]) -> CacheRow:
    """A row as `decision.cache` reads it: a row recorded before harm was counted reads every wrong hit as harmful
    and every case it could serve as a hit."""
    given = row if isinstance(row, ProbeRow) else ProbeRow.model_validate(row)
    harmful = given.harmful_hits if given.harmful_hits is not None else given.wrong_hits
    judged = given.hittable if given.hittable is not None else given.hits  # every case the cache could serve, whatever the fill order
    return CacheRow(threshold=given.threshold, hits=judged,
                    right_hits=given.right_hits if given.right_hits is not None else judged - harmful,
                    harmful_hits=harmful, unknown_hits=given.unknown_hits, harmful_upper=given.wrong_hit_upper)


def _upper(row: ProbeRow, confidence: float) -> float | None:
    """The row's harmful-hit upper bound at `confidence` (`wrong_hit_upper`, the name reports read)."""
    harm = _harm(row)
    if harm.unknown_hits or not harm.hits:
        return None
    bounds = wilson_bounds(_share(row, harm) * _n(row, harm), _n(row, harm), confidence)
    return bounds[1] if bounds else None
