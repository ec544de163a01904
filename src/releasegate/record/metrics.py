"""Metrics computed from the run record, for all cases or a slice. Definitions are in docs/metrics.md."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ..stats.intervals import cluster_bootstrap, percentile, percentile_bounds, pooled_percentile, wilson_bounds
from ..stats.sample_weights import Strata, is_weighted, sample_only, stratum_counts, weighted_share
from .cost_metrics import COUNTED_SOURCES, cost_metric, timing_derived_cost, token_sources, uncounted
from .evidence import answered, attempt_outcomes, attempts_note
from .leakage_metrics import LEAKAGE_BOUNDED, LEAKAGE_METRICS
from .metric_value import MetricValue, measured
from .stream_reading import DEFAULT_MAX_ITL_BATCHED_SHARE, batched_stream, stream_timed
from .tool_metrics import TOOL_METRICS

if TYPE_CHECKING:
    from .ledger import LedgerLine
    from .records import CaseRecord

    Attempted = CaseRecord | LedgerLine
    """What an error metric counts: case records, and the attempts ledger's lines for attempts no record holds."""

Scores = dict[str, dict[str, Any]]
"""Case id -> its scores by family (answer, format, forbidden, pairwise), as `scorers.score_records` makes them."""

__all__ = [
    "KNOWN_METRICS", "MetricValue", "select", "compute_metric", "is_phased", "LATENCY_METRICS", "measured",
    "percentile_of", "ERROR_METRICS", "BOUNDED_METRICS", "latency_exclusions", "left_out_note", "stratum_counts", "sample_only",
    "uncounted", "token_sources", "STABILITY_METRICS", "LOAD_PHASE_METRICS", "timing_derived_cost", "batched_stream",
    "stream_timed", "DEFAULT_MAX_ITL_BATCHED_SHARE", "COUNTED_SOURCES"]

_RATES = {
    "accuracy": ("higher", "share of cases whose answer scorer passes (failed requests count as wrong)"),
    "format_compliance": ("higher", "share of cases passing all their format checks (failed requests fail)"),
    "forbidden_rate": ("lower", "share of outputs hitting any forbidden rule"),
    "error_rate": ("lower", "share of requests that failed, every phase (quality cases and load phase) together"),
    "error_rate_quality": ("lower", "share of the quality cases' requests that failed"),
    "error_rate_load": ("lower", "share of the load phase's requests that failed"),
    "judge_error_rate": ("lower", "share of judge-scored outputs with no judge verdict (judge errors, replies with no "
                                  "verdict, not judged)"),
    "pairwise_win_rate": ("higher", "judge.baseline: share of cases the judge preferred this run's output in both orders "
                                    "(ties and order-inconsistent cases count half)"),
    "pairwise_loss_rate": ("lower", "judge.baseline: share of cases the judge preferred the baseline's output in both "
                                    "orders"),
    "order_inconsistency_rate": ("lower", "judge.baseline: share of compared cases whose preferred output changed with "
                                          "the order they were shown in"),
}
PAIRWISE_METRICS = ("pairwise_win_rate", "pairwise_loss_rate", "order_inconsistency_rate")
ERROR_METRICS = ("error_rate", "error_rate_quality", "error_rate_load")
LATENCY_METRICS = {
    "ttft_ms": "time to first token (from the actual send)",
    "tpot_ms": "time per output token",
    "itl_ms": "inter-token latency (streaming backends)",
    "e2e_ms": "end-to-end latency (from the actual send)",
    "send_lag_ms": "scheduled send -> last request byte written (client queueing, TCP connect included)",
    "ttft_sched_ms": "time to first token from the scheduled send",
    "e2e_sched_ms": "end-to-end latency from the scheduled send",
}
PHASED_METRICS = {"output_tokens_per_s", "output_tokens_per_s_request_p50", "cost_per_1m_output_tokens", "cost_usd_total"}
KNOWN_METRICS: dict[str, tuple[str, str]] = {
    **_RATES,
    **{f"{base}_p{q}": ("lower", f"P{q} {what}, milliseconds") for base, what in LATENCY_METRICS.items()
       for q in (50, 95, 99)},
    "output_tokens_per_s": ("higher", "system throughput: total output tokens / generation wall time"),
    "output_tokens_per_s_request_p50": ("higher", "median per-request decode speed"),
    "cost_per_1m_output_tokens": ("lower", "USD per million output tokens"),
    "cost_usd_total": ("lower", "USD for the whole run (api mode) or its generation time (self-hosted)"),
    "capacity_rps": ("higher", "requests/s the capacity sweep (load.sweep) found within its objective"),
    "cache_hit_rate": ("higher", "response_cache_probe: share of cases a simulated cache in front of the model "
                                 "would answer, at the deployment's threshold"),
    "cache_wrong_hit_rate": ("lower", "response_cache_probe: share of the cases it could answer that any "
                                      "neighbour's answer at the threshold would harm, or that are stale"),
}
STABILITY_METRICS: dict[str, tuple[str, str]] = {
    "pass_all_k": ("higher", "generation.repeats: share of cases whose every draw passes its answer check (pass^k)"),
    "pass_any_k": ("higher", "generation.repeats: share of cases with at least one draw passing its answer check"),
    "flip_rate": ("lower", "generation.repeats: share of cases whose draws disagree on pass or fail"),
    "answer_agreement": ("higher", "generation.repeats: share of draws equal to their case's modal answer "
                                   "(normalised), bounded per case"),
    "load_flip_rate": ("lower", "share of cases whose answer under the load phase differs from their quality-phase "
                                "answer (normalised)"),
    "load_accuracy_delta": ("higher", "accuracy under load minus accuracy alone, on the cases answered in both "
                                      "(paired bound)"),
    "forbidden_rate_delta": ("lower", "forbidden_rate minus the baseline run's, on the cases both answered (paired)"),
}
"""Criteria over repeated draws and over the same cases' answers under load (`gate.stability`)."""
KNOWN_METRICS.update(STABILITY_METRICS | LEAKAGE_METRICS, **TOOL_METRICS)  # tools: gate.tools_feature; leakage: record.leakage_metrics
BOUNDED_METRICS = set(_RATES) | set(STABILITY_METRICS) | set(TOOL_METRICS) | set(LEAKAGE_BOUNDED) | {"cache_hit_rate", "cache_wrong_hit_rate"} | {name for name in KNOWN_METRICS if name.rpartition("_p")[0] in LATENCY_METRICS}
"""Metrics with one-sided bounds, so a criterion on them can take a `confidence`."""
LOAD_PHASE_METRICS = ("accuracy", "format_compliance", "forbidden_rate")
"""Quality rates a criterion can ask of the load phase's answers (`phase: load`), scored with the same checks."""


def percentile_of(name: str) -> float | None:
    """ttft_ms_p95 -> 95.0; None for a metric that is not a latency percentile."""
    base, _, q = name.rpartition("_p")
    return float(q) if base in LATENCY_METRICS and q.isdigit() else None


def select(records: Iterable[CaseRecord], slice_: dict[str, Any] | None) -> list[CaseRecord]:
    """The records in a slice: every key (a tag or 'suite') must match; values compared as text."""
    if not slice_:
        return list(records)
    return [r for r in records if all(str(r.slice_value(k)) == str(v) for k, v in slice_.items())]


_MAX_SLICE_VALUES = 20  # a tag with more distinct values is an id, not a slice


def slices_of(records: list[CaseRecord], keys: list[str] | None = None) -> list[dict[str, str]]:
    """Every single-key slice worth a row, e.g. {'task': 'x'}: one per value of each key (default: the suite and
    every tag) that has few distinct values (a key with many is an id, not a slice)."""
    keys = ["suite"] + sorted({k for r in records for k in r.tags}) if keys is None else keys
    out: list[dict[str, str]] = []
    for key in keys:
        values = sorted({str(r.slice_value(key)) for r in records if r.slice_value(key) is not None})
        if len(values) <= _MAX_SLICE_VALUES:
            out += [{key: value} for value in values]
    return out


def compute_metric(name: str, given: Sequence[Attempted], scores: Scores, run: dict[str, Any]) -> MetricValue:
    """One metric over the records `given` (an error metric's may hold the attempts ledger's lines too); `scores`
    maps case id -> scores; `run` holds run-level facts, and may hold `left_out`: `left_out_note(given)` worked
    out once by a caller that asks for many latency figures over the same records."""
    confidence = run.get("confidence") or 0.95
    if name in ERROR_METRICS:  # the caller passes the phase's records: every attempt of each counts
        return _error_rate(given, confidence)
    records = cast("list[CaseRecord]", given)  # only error metrics are given ledger lines
    if name in _RATES:
        return _rate(name, records, scores, confidence, run.get("strata"))
    q = percentile_of(name)
    if q is not None:
        return _latency(name.rpartition("_p")[0], q, records, confidence, bounds=q >= 95 or bool(run.get("confidence")),
                        note=run.get("left_out"))
    if name == "output_tokens_per_s":
        return _system_throughput(records, run)
    if name == "output_tokens_per_s_request_p50":
        speeds = [s for s in map(_request_speed, records) if s is not None]
        return MetricValue(percentile(speeds, 50), len(speeds))
    if name in ("cost_per_1m_output_tokens", "cost_usd_total"):
        return cost_metric(name, records, run)
    raise KeyError(name)


def is_phased(name: str) -> bool:
    """Latency, throughput and cost metrics: measured on the quality cases, the load phase, or both."""
    return name in PHASED_METRICS or name.rpartition("_p")[0] in LATENCY_METRICS


def latency_exclusions(records: list[CaseRecord]) -> dict[str, Any]:
    """How many requests a latency figure over `records` leaves out, and why. `requests` counts every attempt
    (`evidence.attempt_outcomes`: earlier journal lines and in-run retries too; a retried request's wait is inside
    its case's sample, which runs from the first send), `failed` every failed one by error kind, empty answers
    (`empty_response`) included."""
    return _exclusions(records)._asdict()


class _Exclusions(NamedTuple):
    requests: int
    measured: int
    failed: dict[str, int]
    cached: int


def _exclusions(records: list[CaseRecord]) -> _Exclusions:
    outcomes = attempt_outcomes(records)
    failed = Counter(kind for kind in outcomes if kind is not None)
    cached = sum(bool(getattr(r, "cached", False)) for r in records if answered(r))
    return _Exclusions(len(outcomes), len(measured(records)), dict(sorted(failed.items())), cached)


def left_out_note(records: list[CaseRecord]) -> str:
    """'98 of 100 requests; left out: 2 failed (timeout)' for a latency figure over `records`; '' when it leaves
    out none."""
    ex = _exclusions(records)
    if not ex.requests - ex.measured:
        return ""
    why = [f"{n} failed ({kind})" for kind, n in sorted(ex.failed.items())]
    if ex.cached:
        why.append(f"{ex.cached} cached")
    return f"{ex.measured} of {ex.requests} requests; left out: " + ", ".join(why)


def _latency(base: str, q: float, records: list[CaseRecord], confidence: float, *, bounds: bool,
             note: str | None = None) -> MetricValue:
    """A latency percentile; per-request figures get order-statistic bounds, inter-token gaps a bootstrap that
    resamples whole requests (the gaps of one request are not independent). n counts requests."""
    done = measured(records)
    note = left_out_note(records) if note is None else note
    if base == "itl_ms":
        groups = [r.timing.itl_ms for r in done if r.timing.itl_ms]
        limits: tuple[float | None, float | None] | None = (
            cluster_bootstrap(groups, q, confidence=confidence) if bounds else None)
        return MetricValue(pooled_percentile(groups, q), len(groups), limits, note, confidence)
    samples = [v for r in done if (v := getattr(r.timing, base)) is not None]
    limits = percentile_bounds(samples, q, confidence) if bounds and samples else None
    return MetricValue(percentile(samples, q), len(samples), limits, note, confidence)


def _rate(name: str, records: list[CaseRecord], scores: Scores, confidence: float = 0.95,
          strata: Strata | None = None) -> MetricValue:
    """A share over `records`; cases of a stratified sample weigh as many source rows as they stand for
    (`_proportion`), `strata` being the run's cases per stratum (`stratum_counts`; default: of `records`). Error
    rates count requests sent (every attempt), unweighted: they measure the server, not the suite's source."""
    strata = strata if strata is not None else stratum_counts(records)
    if name in PAIRWISE_METRICS:
        return _pairwise(name, records, scores, confidence)
    if name == "judge_error_rate":
        done = [r for r in records if answered(r) and (r.answer or {}).get("type") == "judge"]
        hits = [scores[r.case_id].get("answer", {}).get("judge", {}).get("passed") is None for r in done]
        return _proportion(hits, done, confidence, strata)
    if name == "forbidden_rate":
        done = [r for r in records if answered(r)]
        found = [scores[r.case_id].get("forbidden", {}) for r in done]
        if missing := [r.case_id for r, f in zip(done, found) if f.get("unknown")]:  # no guard verdict: not 'clean'
            return MetricValue(None, len(done), note=f"{len(missing)} answer(s) have no guard verdict, e.g. {missing[0]}")
        return _proportion([bool(f.get("hit")) for f in found], done, confidence, strata)
    key = "answer" if name == "accuracy" else "format"
    # a failed request (an empty answer too) counts as wrong where the check applies
    judged = [r for r in records if key in scores[r.case_id] or (not answered(r) and _has_check(r, key))]
    unknown = sum(bool(scores[r.case_id].get(key, {}).get("unknown")) for r in judged)
    passed = [bool(scores[r.case_id].get(key, {}).get("passed")) for r in judged]
    if unknown:  # a check that could not be made (no token count) is not a pass, and not a model failure either
        unjudged = sum(scores[r.case_id].get(key, {}).get("judge", {}).get("passed", True) is None for r in judged)
        why = f"{unjudged} with no judge verdict" if unjudged == unknown else "e.g. token count unknown, no judge verdict"
        return MetricValue(None, len(judged), note=f"{unknown} case(s) could not be checked ({why})")
    return _proportion(passed, judged, confidence, strata)


def _error_rate(records: Sequence[Attempted], confidence: float) -> MetricValue:
    """Failed attempts over the requests sent (`evidence.attempt_outcomes`), empty answers among the failed. A
    cached record sent no request: it neither fails nor dilutes the rate (950 cached beside 50 sent, 10 failed:
    0.2, not 0.01); a run that sent none has no error rate."""
    outcomes = attempt_outcomes(records, cached=False)
    rate = _share(sum(kind is not None for kind in outcomes), len(outcomes), confidence)
    cached = sum(bool(getattr(r, "cached", False)) for r in records)
    notes = (attempts_note(records), f"{cached} cached case(s) sent no request" if cached else "")
    return MetricValue(rate.value, rate.n, rate.bounds, "; ".join(n for n in notes if n), confidence)


def _pairwise(name: str, records: list[CaseRecord], scores: Scores, confidence: float) -> MetricValue:
    pairs = [scores[r.case_id]["pairwise"] for r in records if "pairwise" in scores.get(r.case_id, {})]
    missing = sum(p["outcome"] is None for p in pairs)
    if missing:  # a comparison that failed is not a tie: undecided, as an unknown answer is
        return MetricValue(None, len(pairs), note=f"{missing} of {len(pairs)} comparison(s) have no judgment in both orders")
    count = {k: sum(p["outcome"] == k for p in pairs) for k in ("win", "loss", "tie", "inconsistent")}
    hits = {"pairwise_win_rate": count["win"] + 0.5 * (count["tie"] + count["inconsistent"]),
            "pairwise_loss_rate": count["loss"], "order_inconsistency_rate": count["inconsistent"]}[name]
    return _share(hits, len(pairs), confidence)


def _has_check(record: CaseRecord, key: str) -> bool:
    return bool(record.answer) if key == "answer" else bool(record.format)


def _share(hits: float, n: int, confidence: float = 0.95) -> MetricValue:
    return MetricValue(hits / n if n else None, n, wilson_bounds(hits, n, confidence), confidence=confidence)


def _proportion(hits: list[bool], records: list[CaseRecord], confidence: float, strata: Strata) -> MetricValue:
    """The share of `hits` over `records`. Cases of a weighted sample stand for population / (the run's cases of
    their stratum) source rows each (any other case for itself): the estimate is the weighted share, its bounds
    Wilson's at Kish's effective n, (sum of weights)^2 / sum of squared weights, so an equal-allocation sample
    is gated as the source it was drawn from, never as if its strata were equally large."""
    if not any(is_weighted(r) for r in records):
        return _share(sum(hits), len(records), confidence)
    value, effective_n, total = weighted_share(hits, records, strata)
    bounds = wilson_bounds(value * effective_n, effective_n, confidence)
    note = (f"population-weighted: {len(records)} sampled case(s) standing for {total:.0f} source row(s), "
            f"effective n {effective_n:.1f}")
    return MetricValue(value, len(records), bounds, note, confidence)


def _request_speed(record: CaseRecord) -> float | None:
    t = record.timing
    if not measured([record]) or t.tpot_ms is None or t.tpot_ms <= 0:
        return None
    return 1000.0 / t.tpot_ms


def _system_throughput(records: list[CaseRecord], run: dict[str, Any]) -> MetricValue:
    seconds = run.get("generation_seconds")
    tokens = [r.tokens.output for r in measured(records) if r.tokens.output is not None]
    if not run.get("all_records", True):
        return MetricValue(None, len(tokens), note="system throughput is defined for the whole run only")
    if not seconds or not tokens:
        return MetricValue(None, len(tokens), note="no measured generation time or token counts")
    return MetricValue(sum(tokens) / seconds, len(tokens))


def latency_phase(latency_from: str, load_records: list[CaseRecord]) -> str:
    """The phase latency is judged on: the rubric's `latency_from` (auto: the load phase when one ran; load or both
    without a load phase: the quality cases for both, and load stays load, whose figures are then undecided)."""
    if latency_from == "auto":
        return "load" if load_records else "quality"
    if latency_from in ("load", "both") and not load_records:
        return "quality" if latency_from == "both" else "load"
    return latency_from


def phase_records(phase: str, quality: list[CaseRecord], load: list[CaseRecord]) -> list[CaseRecord]:
    """The records of a latency phase (`latency_phase`): the quality cases, the load phase's, or both."""
    return {"quality": quality, "load": load, "both": quality + load}[phase]
