"""The response-cache probe's section of the gate report (report.json `response_cache_probe`): the simulated
cache's figures at every threshold, the wrong hits at the deployment's threshold and the recommended threshold
(see releasegate.gate.cache_probe)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..model_base import Model

__all__ = ["CacheProbeSection", "CacheProbeRow", "CacheWrongHit", "CacheWrongCase", "CacheRecommendation"]


class _Model(Model):
    model_config = ConfigDict(extra="allow")


class CacheWrongCase(_Model):
    """A case with at least one wrong answer among those it could be served (every answered neighbour at or above
    the threshold), named by its worst neighbour."""

    case_id: str
    """The new case."""
    cached_case_id: str
    """Its worst neighbour: a wrong answer it could be served, the most similar first."""
    similarity: float
    """Cosine similarity of the two questions (1.0 in exact mode)."""
    within_group: bool
    """Whether both cases are in one paraphrase group (false: a hit across groups, the dangerous kind)."""
    harmful: bool = True
    """Whether the model's own answer passed where the served one failed, or the case is stale (false: the model
    was wrong too)."""
    stale: bool = False
    """Time-sensitive, under a TTL longer than `time_sensitive_max_age_s`: any answer it is served may be too old."""
    wrong_neighbours: int | None = None
    """How many of the answers it could be served are wrong for it (every one when it is stale); null in runs
    recorded before it was counted."""
    donors: int | None = None
    """How many answers it could be served."""


class CacheWrongHit(CacheWrongCase):
    """A wrong case with its texts: the new question, its worst neighbour's question and both answers."""

    question: str
    cached_question: str
    answer: str | None = None
    """The model's own answer to the new question."""
    cached_answer: str | None = None
    """The answer the cache served instead."""


class CacheProbeRow(_Model):
    """The simulated cache at one threshold."""

    threshold: float | None
    """The similarity threshold; null in exact mode."""
    n: int
    """Cases the cache saw."""
    hits: int
    hit_rate: float | None
    hittable: int | None = None
    """Cases another answered case matches at this threshold: each could be a hit, served any such neighbour's
    answer, whichever reaches the cache first; the harmful share is over these."""
    right_hits: int | None = None
    """Hittable cases whose every possible served answer passes the case's checks, and not stale."""
    harmful_hits: int | None = None
    """Hittable cases with at least one possible served answer that fails the case's checks while the model's own
    answer passes them, or stale time-sensitive cases (null in runs recorded before harm was counted)."""
    unknown_hits: int = 0
    """Hits whose checks could not be made: the harmful share is then unknown."""
    harmful_share: float | None = None
    """Harmful over hittable cases (weighted under a sample): what `cache_wrong_hit_rate` gates."""
    effective_hits: float | None = None
    """Kish's effective n of the hits (their count unless weighted)."""
    wrong_hits: int
    """Cases with at least one wrong answer among those they could be served: failing their checks (harmful or
    not: the model may have been wrong too), or stale."""
    wrong_hit_rate: float | None
    """Those cases over every case the cache saw (weighted under a sample); a higher threshold never raises it."""
    wrong_hit_upper: float | None
    """The one-sided Wilson upper bound of the harmful share, at `confidence`."""
    confidence: float = 0.95
    within_group: int = 0
    """Hits inside one paraphrase group (expected)."""
    across_group: int = 0
    """Hits across groups (or on cases in no group)."""
    wrong_across_group: int = 0
    tokens_saved: dict[str, int] = {}
    """{'input', 'output'}: the hit cases' own tokens, not generated."""
    cost_saved_usd: float | None = None
    """Those tokens at the API prices of `cost:`; null when the run is not priced per token."""
    stale_time_sensitive: int = 0
    """Time-sensitive cases that could hit while the TTL exceeds `time_sensitive_max_age_s`: some arrival order
    serves them an answer older than that (harmful)."""
    stale_cases: list[str] = []
    wrong: list[CacheWrongHit] = []
    """The most dangerous wrong cases first, with their texts: harmful, across groups, then the most similar (at
    most 20)."""
    wrong_cases: list[CacheWrongCase] = []
    """Every case with a wrong possible answer (at most 1,000), in the same order, with its worst neighbour and
    how many of its possible answers are wrong."""


class CacheRecommendation(_Model):
    """The threshold to deploy: the most right hits whose harmful-hit upper bound stays under the rubric's limit,
    on enough hits (`decision.cache`)."""

    threshold: float | None
    """Null: none qualifies (or, in exact mode, the exact cache itself does)."""
    limit: float | None
    """The rubric's `cache_wrong_hit_rate` threshold; null when the rubric has none."""
    hit_rate: float | None = None
    wrong_hit_upper: float | None = None
    right_hits: int | None = None
    hits: int | None = None
    why: str = ""


class CacheProbeSection(_Model):
    """A cache in front of the deployed model, simulated on the run's own answers."""

    mode: str
    """`exact` or `semantic`."""
    threshold: float | None = None
    """The deployment's threshold (where the `cache_*` metrics are taken); null in exact mode."""
    ttl_s: float | None = None
    """The TTL the probe assumed (null: entries never expire)."""
    arrival_interval_s: float = 1.0
    time_sensitive_max_age_s: float = 0.0
    group_tag: str | None = None
    embeddings: dict[str, Any] | None = None
    """What made the embeddings ({'source', 'fingerprint', 'computed', 'seconds', 'tokens', 'latency_ms_p50'}):
    the cost and latency a semantic cache adds; null in exact mode."""
    error: str | None = None
    """Why the probe has no figures (its embeddings could not be had), or null."""
    rows: list[CacheProbeRow] = []
    """Every threshold simulated, highest first."""
    recommended: CacheRecommendation | None = None
