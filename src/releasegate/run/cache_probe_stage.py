"""`check`'s response-cache probe stage: the run's answers, in suite order, through a simulated cache in front of
the model (`gate.cache_probe`), embeddings from the configured source (`backends.embeddings`, cached in the run
directory's embeddings.jsonl). The figures go to run.json `response_cache_probe`; the gate takes its `cache_*`
metrics and the recommended threshold from there, so `gate RUN_DIR` needs no embedding model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict

from ..backends.embeddings import EMBEDDINGS_FILE, embed, stored_vectors
from ..errors import TargetError
from ..gate.cache_probe import ProbeSettings, degenerate, simulate_all
from ..gate.cache_probe_records import answer_passes, probe_cases
from ..inputs.files import stored_yaml
from ..model_base import Model
from ..record.judge_verdicts import saved_verdicts
from ..record.records import CaseRecord, RunDir, RunInfo
from ..record.run_parts import CostFacts
from ..stats.intervals import percentile

if TYPE_CHECKING:
    from ..inputs.cache_config import ResponseCacheProbeConfig
    from ..inputs.config import Config
    from ..inputs.rubric import Rubric
    from ..inputs.suites import Case

__all__ = ["run_response_cache_probe", "cache_probe_figures", "rederived_probe"]


def run_response_cache_probe(config: Config, rubric: Rubric, cases: list[Case], run: RunDir, info: RunInfo) -> None:
    """Simulate `config.response_cache_probe` on the run's records and record it (run.json). Embeddings that
    cannot be had (the endpoint down, a reply of another shape) are recorded as the probe's `error`: the run goes
    on, and the cache criteria have no figure to decide on (insufficient, never a pass)."""
    by_id = {r.case_id: r for r in run.read_records(required=False)}
    records = [by_id[c.id] for c in cases if c.id in by_id]  # suite order, as the cache would see them
    try:
        info.response_cache_probe = cache_probe_figures(config, rubric, records, run)
    except TargetError as exc:
        probe = _configured(config)
        info.response_cache_probe = {"mode": probe.mode, "threshold": probe.threshold, "rows": [],
                                     "error": str(exc)}
    run.write_info(info)


def cache_probe_figures(config: Config, rubric: Rubric, records: list[CaseRecord],
                        run: RunDir | None = None) -> dict[str, Any]:
    """The probe's figures on `records` (in suite order): its settings, the embeddings' cost, one row per
    threshold."""
    probe = _configured(config)
    probe_set = probe_cases(records, group_tag=probe.group_tag, time_sensitive_tag=probe.time_sensitive_tag)
    api = config.cost if config.cost is not None and config.cost.mode == "api" else None
    settings = ProbeSettings(
        mode=probe.mode, ttl_s=probe.ttl_s, arrival_s=probe.arrival_interval_s, fresh_s=probe.time_sensitive_max_age_s,
        input_usd_per_1m=api.input_usd_per_1m if api else None, output_usd_per_1m=api.output_usd_per_1m if api else None,
    )
    vectors, embedded = None, None
    if probe.mode == "semantic":
        assert probe.embeddings is not None  # semantic mode requires them (inputs.cache_config)
        done = embed([c.question for c in probe_set], probe.embeddings,
                     run.path / EMBEDDINGS_FILE if run is not None else None)
        vectors = done.vectors
        bad = degenerate(vectors)
        if bad is not None:  # vectors that place no question: the probe's error, never a cache that never hits
            raise TargetError(f"the embeddings from {probe.embeddings.describe()} cannot place questions: {bad}")
        embedded = {"source": probe.embeddings.describe(), "fingerprint": done.fingerprint, "computed": done.computed,
                    "seconds": done.seconds, "tokens": done.tokens,
                    "latency_ms_p50": percentile(done.latencies_ms, 50) if done.latencies_ms else None}
    verdicts = saved_verdicts(run) if run is not None else None  # guard rules: the guard's verdicts on the answers
    rows = simulate_all(probe_set, answer_passes(records, rubric.forbidden, verdicts), settings, probe.thresholds, vectors)
    return {"mode": probe.mode, "threshold": probe.threshold, "ttl_s": probe.ttl_s,
            "arrival_interval_s": probe.arrival_interval_s, "time_sensitive_max_age_s": probe.time_sensitive_max_age_s,
            "group_tag": probe.group_tag, "embeddings": embedded, "rows": rows}


def _configured(config: Config) -> ResponseCacheProbeConfig:
    probe = config.response_cache_probe
    assert probe is not None  # the stage runs only when the config has a probe (pipeline.check)
    return probe


def rederived_probe(run: RunDir, info: RunInfo, rubric: Rubric, records: list[CaseRecord]) -> dict[str, Any] | None:
    """The run's probe judged again under `rubric` (a what-if: its forbidden rules decide which served answers pass),
    from the run's records and the embeddings it stored; never a call to the embedding model. A probe that failed,
    or whose embeddings are not all stored, is recorded as the probe's error: its criteria undecided."""
    probe = info.response_cache_probe
    stored = StoredProbe.model_validate(probe) if probe else None
    if not probe or stored is None or stored.error:
        return probe
    raw = _snapshot(run).get("response_cache_probe") or {}
    cases = probe_cases(records, group_tag=stored.group_tag, time_sensitive_tag=raw.get("time_sensitive_tag"))
    vectors = None
    if stored.mode == "semantic":
        fingerprint = (stored.embeddings.fingerprint if stored.embeddings else None) or ""
        vectors = stored_vectors([c.question for c in cases], fingerprint, run.path / EMBEDDINGS_FILE)
        if vectors is None:
            return {**probe, "rows": [], "error": "the run's stored embeddings do not cover its cases: the probe "
                                                  "cannot be judged again without the embedding model"}
    cost = CostFacts.model_validate(info.cost) if info.cost else None
    api = cost if cost is not None and cost.mode == "api" else None
    settings = ProbeSettings(mode=stored.mode, ttl_s=stored.ttl_s, arrival_s=stored.arrival_interval_s,
                             fresh_s=stored.time_sensitive_max_age_s,
                             input_usd_per_1m=api.input_usd_per_1m if api else None,
                             output_usd_per_1m=api.output_usd_per_1m if api else None)
    thresholds = [r.threshold for r in stored.rows or () if r.threshold is not None]
    rows = simulate_all(cases, answer_passes(records, rubric.forbidden, saved_verdicts(run)), settings, thresholds, vectors)
    return {**probe, "rows": rows}


class _Stored(Model):
    model_config = ConfigDict(extra="allow")


class StoredEmbeddings(_Stored):
    fingerprint: str | None = None


class StoredThreshold(_Stored):
    threshold: int | float | None = None  # as stored: an int stays one


class StoredProbe(_Stored):
    """The probe's settings as run.json keeps them (`cache_probe_figures`), to judge it again as it ran."""

    mode: Literal["exact", "semantic"]
    error: object = None
    group_tag: str | None = None
    ttl_s: int | float | None = None
    arrival_interval_s: int | float = 1.0
    time_sensitive_max_age_s: int | float = 0.0
    embeddings: StoredEmbeddings | None = None
    rows: list[StoredThreshold] | None = None


def _snapshot(run: RunDir) -> dict[str, Any]:
    return stored_yaml(run.path / "config.yaml", what="config snapshot") or {}
