"""Metrics computed from the run record, for all cases or a slice. Definitions are in README.md."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .stats import bootstrap, percentile, wilson, z_value

__all__ = ["KNOWN_METRICS", "MetricValue", "select", "compute_metric", "is_phased", "LATENCY_METRICS", "measured"]

_RATES = {
    "accuracy": ("higher", "share of cases whose answer scorer passes (failed requests count as wrong)"),
    "format_compliance": ("higher", "share of cases passing all their format checks (failed requests fail)"),
    "forbidden_rate": ("lower", "share of outputs hitting any forbidden rule"),
    "error_rate": ("lower", "share of requests that failed"),
}
LATENCY_METRICS = {
    "ttft_ms": "time to first token (from the actual send)",
    "tpot_ms": "time per output token",
    "itl_ms": "inter-token latency (streaming backends)",
    "e2e_ms": "end-to-end latency (from the actual send)",
    "send_lag_ms": "scheduled send -> actual send (client queueing)",
    "ttft_sched_ms": "time to first token from the scheduled send",
    "e2e_sched_ms": "end-to-end latency from the scheduled send",
}
PHASED_METRICS = {"output_tokens_per_s", "output_tokens_per_s_request_p50", "cost_per_1m_output_tokens", "cost_usd_total"}
KNOWN_METRICS: dict[str, tuple[str, str]] = dict(_RATES)
for _base, _what in LATENCY_METRICS.items():
    for _q in (50, 95, 99):
        KNOWN_METRICS[f"{_base}_p{_q}"] = ("lower", f"P{_q} {_what}, milliseconds")
KNOWN_METRICS["output_tokens_per_s"] = ("higher", "system throughput: total output tokens / generation wall time")
KNOWN_METRICS["output_tokens_per_s_request_p50"] = ("higher", "median per-request decode speed")
KNOWN_METRICS["cost_per_1m_output_tokens"] = ("lower", "USD per million output tokens")
KNOWN_METRICS["cost_usd_total"] = ("lower", "USD for the whole run (api mode) or its generation time (self-hosted)")


@dataclass(frozen=True)
class MetricValue:
    """A metric's value with its sample size and, where defined, a 95% interval."""

    value: float | None
    n: int
    interval: tuple[float, float] | None = None
    note: str = ""

    def as_dict(self) -> dict:
        out: dict = {"value": self.value, "n": self.n}
        if self.interval is not None:
            out["interval"] = [round(self.interval[0], 6), round(self.interval[1], 6)]
        if self.note:
            out["note"] = self.note
        return out


def select(records: Iterable, slice_: dict | None) -> list:
    """The records in a slice: every key (a tag or 'suite') must match; values compared as text."""
    if not slice_:
        return list(records)
    return [r for r in records if all(str(r.slice_value(k)) == str(v) for k, v in slice_.items())]


_MAX_SLICE_VALUES = 20  # a tag with more distinct values is an id, not a slice


def slices_of(records: list) -> list[dict]:
    """Every single-key slice worth a row: the suite and each tag with few distinct values, e.g. {'task': 'x'}."""
    keys = ["suite"] + sorted({k for r in records for k in r.tags})
    out = []
    for key in keys:
        values = sorted({str(r.slice_value(key)) for r in records if r.slice_value(key) is not None})
        if len(values) <= _MAX_SLICE_VALUES:
            out += [{key: value} for value in values]
    return out


def compute_metric(name: str, records: list, scores: dict[str, dict], run: dict) -> MetricValue:
    """One metric over `records`; `scores` maps case id -> scores; `run` holds run-level facts."""
    confidence = run.get("confidence") or 0.95
    if name in _RATES:
        return _rate(name, records, scores, confidence)
    base, _, q = name.rpartition("_p")
    if base in LATENCY_METRICS and q.isdigit():
        samples = _latency_samples(records, base)
        interval = None
        if float(q) >= 95 or run.get("confidence"):  # tails are noisy: always say how noisy
            interval = bootstrap(samples, lambda xs: percentile(xs, float(q)), confidence=confidence, resamples=1000)
        return MetricValue(percentile(samples, float(q)), len(samples), interval)
    if name == "output_tokens_per_s":
        return _system_throughput(records, run)
    if name == "output_tokens_per_s_request_p50":
        speeds = [_request_speed(r) for r in records]
        speeds = [s for s in speeds if s is not None]
        return MetricValue(percentile(speeds, 50), len(speeds))
    if name in ("cost_per_1m_output_tokens", "cost_usd_total"):
        from .cost import cost_metric

        return cost_metric(name, records, run)
    raise KeyError(name)


def is_phased(name: str) -> bool:
    """Latency, throughput and cost metrics: measured on the quality cases, the load phase, or both."""
    return name in PHASED_METRICS or name.rpartition("_p")[0] in LATENCY_METRICS


def measured(records: Iterable) -> list:
    """The records whose latency, throughput and cost this run measured: answered, and not from the response
    cache. The one rule every latency, throughput and cost figure goes through (cached outputs are never fast)."""
    return [r for r in records if r.output is not None and not getattr(r, "cached", False)]


def _latency_samples(records: list, base: str) -> list[float]:
    out: list[float] = []
    for r in measured(records):
        value = getattr(r.timing, base)
        if isinstance(value, list):
            out += value
        elif value is not None:
            out.append(value)
    return out


def _rate(name: str, records: list, scores: dict[str, dict], confidence: float = 0.95) -> MetricValue:
    if name == "error_rate":
        hits = sum(r.error is not None for r in records)
        return _proportion(hits, len(records), confidence)
    if name == "forbidden_rate":
        done = [r for r in records if r.output is not None]
        hits = sum(bool(scores[r.case_id].get("forbidden", {}).get("hit")) for r in done)
        value = _proportion(hits, len(done), confidence)
        if hits == 0 and done:
            return MetricValue(0.0, len(done), value.interval, note=f"0 hits; 95% upper bound about {3 / len(done):.3g}")
        return value
    key = "answer" if name == "accuracy" else "format"
    judged = [r for r in records if key in scores[r.case_id] or (r.output is None and _has_check(r, key))]
    passed = sum(bool(scores[r.case_id].get(key, {}).get("passed")) for r in judged)
    return _proportion(passed, len(judged), confidence)


def _has_check(record, key: str) -> bool:
    return bool(record.answer) if key == "answer" else bool(record.format)


def _proportion(hits: int, n: int, confidence: float = 0.95) -> MetricValue:
    return MetricValue(hits / n if n else None, n, wilson(hits, n, z_value(confidence)))


def _request_speed(record) -> float | None:
    t = record.timing
    if not measured([record]) or t.tpot_ms is None or t.tpot_ms <= 0:
        return None
    return 1000.0 / t.tpot_ms


def _system_throughput(records: list, run: dict) -> MetricValue:
    seconds = run.get("generation_seconds")
    tokens = [r.tokens.output for r in measured(records) if r.tokens.output is not None]
    if not run.get("all_records", True):
        return MetricValue(None, len(tokens), note="system throughput is defined for the whole run only")
    if not seconds or not tokens:
        return MetricValue(None, len(tokens), note="no measured generation time or token counts")
    return MetricValue(sum(tokens) / seconds, len(tokens))
