"""The report's measured sections that `GateReport` keeps as JSON (`load_phase`, `prefix_cache`) as the renderers
read them: once, where a renderer starts (`paired_models.read_section`), then by attribute.

Numbers keep their JSON type (`Number`), so a figure shown as it is reads the same as from the dict.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..model_base import Model
from ..record.capacity_sweep import Number

__all__ = ["SignalSummary", "TtftGap", "ServerMetrics", "SendLag", "LoadWorker", "LoadClient", "LoadPhaseView",
           "ProbeSide", "PrefixCacheProbe", "ChangedFile", "VerifiedRun", "Verification",
           "GuardCategory", "GuardRow", "EmbeddingsUsed"]


class _Model(Model):
    model_config = ConfigDict(extra="allow")  # a newer report read by an older renderer keeps what it does not know


class SignalSummary(_Model):
    """One server signal over the load phase (`run.server_scrape.summarise`)."""

    max: Number
    mean: Number
    last: Number


class TtftGap(_Model):
    """Mean client TTFT against the server's own (vLLM's histogram)."""

    client_mean_ms: Number | None = None
    server_mean_ms: Number | None = None
    gap_ms: Number | None = None


class ServerMetrics(_Model):
    """What the server's /metrics said over the load phase, or why it was not scraped (`error`)."""

    error: str | None = None
    server: str | None = None
    samples: int | None = None
    queue: SignalSummary | None = None
    running: SignalSummary | None = None
    kv_cache: SignalSummary | None = None
    ttft_gap_ms: TtftGap | None = None
    reading: str = ""

    @property
    def scraped(self) -> bool:
        """Samples were read: no `error` given, and something given."""
        return "error" not in self.model_fields_set and bool(self.model_fields_set | set(self.model_extra or {}))


class SendLag(_Model):
    p99: Number | None = None


class LoadWorker(_Model):
    """One Ray worker that sent part of the load (`scale:`)."""

    send_lag_ms: SendLag | None = None
    start_skew_ms: Number | None = None


class LoadClient(_Model):
    workers: list[LoadWorker] | None = None


class LoadPhaseView(_Model):
    """run.json's `load_phase` as the report keeps it."""

    profile: str = ""
    requests: int | None = None
    warmup: int = 0
    seconds: Number | None = None
    client: LoadClient | None = None
    server_metrics: ServerMetrics | None = None


class ProbeSide(_Model):
    """The warm or the cold requests of the prefix-cache probe."""

    n: int | None = None
    failed: int = 0
    ttft_ms_p50: Number | None = None
    ttft_ms_p95: Number | None = None
    prompt_tokens_mean: Number | None = None
    cached_tokens_mean: Number | None = None


class PrefixCacheProbe(_Model):
    """The prefix-cache probe (`run.prefix_cache.prefix_cache_summary`)."""

    pairs: int
    system_chars: int
    warm: ProbeSide
    cold: ProbeSide
    saved_ms_p50: Number | None = None
    cold_over_warm_p50: Number | None = None
    cached_tokens: Any = None
    """Where the cached prompt tokens were read ('server /metrics'), or why none were."""


class ChangedFile(_Model):
    """One row of `releasegate verify`: an input, package or run file (role 'run') that changed, then and now."""

    role: str
    path: str
    change: str
    before: str | None = None
    after: str | None = None
    note: str | None = None


class VerifiedRun(_Model):
    """The run's manifest as `verify` names it."""

    config: str = "."
    run_id: str = "?"
    created_at: str = "?"


class Verification(_Model):
    """`releasegate verify`'s result (`pipeline.verify`)."""

    changes: list[ChangedFile]
    checked: int
    sealed: list[str] = []


class GuardCategory(_Model):
    """A guard's misses and false alarms on one rubric category, against the reviewers' forbidden labels."""

    category: str
    misses: Number
    positives: Number
    miss_bounds: list[Number | None] | None = None
    false_alarms: Number
    negatives: Number
    false_alarm_bounds: list[Number | None] | None = None


class GuardRow(_Model):
    """A guard model (`llm_judge.guard_view.guard_section`)."""

    labelled: int
    min_labels: int
    calibrated: bool
    categories: list[GuardCategory] = []


class EmbeddingsUsed(_Model):
    """What made the response-cache probe's embeddings (`record.cache_probe_report.CacheProbeSection.embeddings`)."""

    source: str | None = None
    computed: int | None = None
    """Texts embedded."""
    seconds: Number | None = None
    latency_ms_p50: Number | None = None
    tokens: Number | None = None
