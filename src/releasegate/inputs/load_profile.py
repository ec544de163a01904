"""The `load:` section of a config: a closed-loop, open-loop or replayed load profile, or a capacity sweep."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any

from ..data_classes import dataclass
from ..errors import InputError
from .backend_facts import capabilities
from .files import KeyAt, is_file, resolve_under

__all__ = ["LoadConfig", "SweepConfig", "parse_load", "OBJECTIVE_SAMPLES", "OBJECTIVE_PERCENTILES", "objective_limits"]

OBJECTIVE_SAMPLES = {"ttft_ms": "ttft_sched_ms", "tpot_ms": "tpot_ms", "e2e_ms": "e2e_sched_ms"}
"""The latencies a sweep's objective (`load.sweep.slo`) can limit, and the record timing each is measured by:
TTFT and E2E from the scheduled send (client and server queueing count), TPOT as measured."""
OBJECTIVE_PERCENTILES = (50, 90, 95, 99)
"""The percentiles an objective key can name: `<latency>_p<percentile>`, e.g. `e2e_ms_p50`."""
_UPPER_BOUND_NEEDS = {50: 5, 90: 29, 95: 59, 99: 299}
"""Requests the 95% upper bound of each percentile needs (stats.percentile_min_n): a step must have them."""


@dataclass(frozen=True)
class LoadConfig:
    """A load profile: closed loop (concurrency), open loop (rate + arrival), or a replayed traffic log."""

    concurrency: int | None = None
    rate: float | None = None
    arrival: str = "poisson"
    burstiness: float = 1.0
    replay: Path | None = None
    requests: int | None = None
    duration_s: float | None = None
    warmup: int = 0
    seed: int = 0
    sweep: SweepConfig | None = None
    """A capacity sweep (`load.sweep`) instead of one fixed load: open-loop steps of rising rate."""


@dataclass(frozen=True)
class SweepConfig:
    """`load.sweep`: raise the open-loop rate step by step until the latency objective breaks (see capacity)."""

    start_rps: float
    max_rps: float
    factor: float = 2.0
    requests_per_step: int = 60
    step_s: float = 5.0
    """A step sends at least rate x step_s requests: long enough at high rates for an overload to show as a
    growing queue (a short burst above capacity can still meet the objective)."""
    refine: int = 3
    """Bisection steps between the last rate that met the objective and the first that broke it."""
    slo: dict[str, Any] = field(default_factory=dict)
    """The objective every step must meet: limits in ms on latency percentiles (`ttft_ms_p95`, `e2e_ms_p50`, ...:
    see `objective_limits`) and `error_rate`, the share of failed requests, empty answers included (default
    0.01)."""


def objective_limits(slo: dict[str, Any]) -> dict[str, tuple[str, int, float]]:
    """The latency limits of an objective: {key: (latency, percentile, limit ms)}, e.g. 'e2e_ms_p50' ->
    ('e2e_ms', 50, 2000.0); `error_rate` and anything else left out."""
    out = {}
    for key, limit in slo.items():
        latency, _, q = key.rpartition("_p")
        if latency in OBJECTIVE_SAMPLES and q.isdigit() and int(q) in OBJECTIVE_PERCENTILES:
            out[key] = (latency, int(q), float(limit))
    return out


def parse_load(raw: dict[str, Any] | None, target: dict[str, Any], here: Path, at: KeyAt) -> LoadConfig | None:
    """The `load:` section (openai backend only); None (no load phase) when the config has none."""
    if raw is None:
        return None
    if not capabilities(target["backend"]).load_phase:
        raise InputError("a load phase needs the openai backend", **at("load"), hint="remove load: or serve the model")
    shapes = [k for k in ("concurrency", "rate", "replay", "sweep") if k in raw]
    if not shapes:
        raise InputError("load needs concurrency, rate, replay or sweep", **at("load"))
    if "replay" in raw and "rate" in raw:
        raise InputError("replay sets its own arrival times; drop rate", **at("load", "rate"))
    if "replay" not in raw and "sweep" not in raw and "requests" not in raw and "duration_s" not in raw:
        raise InputError("load needs requests or duration_s (when to stop)", **at("load"))
    replay = resolve_under(here, raw["replay"]) if "replay" in raw else None
    if replay is not None and not is_file(replay):
        raise InputError(f"traffic log not found: {replay}", **at("load", "replay"))
    keys = ("concurrency", "rate", "arrival", "burstiness", "requests", "duration_s", "warmup", "seed")
    return LoadConfig(**{k: raw[k] for k in keys if k in raw}, replay=replay, sweep=_sweep(raw, at))


def _sweep(raw: dict[str, Any], at: KeyAt) -> SweepConfig | None:
    """`load.sweep`: the rates come from the sweep, so a fixed rate, log or length beside it is refused."""
    sweep = raw.get("sweep")
    if sweep is None:
        return None
    for key in ("rate", "replay", "requests", "duration_s"):
        if key in raw:
            raise InputError(f"a sweep sets its own rates and lengths; drop load.{key}", **at("load", key),
                             hint="size each step with sweep.requests_per_step")
    if sweep["max_rps"] < sweep["start_rps"]:
        raise InputError("max_rps is below start_rps", **at("load", "sweep", "max_rps"))
    config = SweepConfig(**{k: sweep[k] for k in ("start_rps", "max_rps", "factor", "requests_per_step", "step_s",
                                                 "refine") if k in sweep}, slo={"error_rate": 0.01, **sweep["slo"]})
    _check_step_size(config, at)
    return config


def _check_step_size(sweep: SweepConfig, at: KeyAt) -> None:
    """A step must hold enough requests for the upper bound of every percentile its objective names (a P99's
    needs 299), or no step could ever meet it."""
    for key, (_, q, _) in objective_limits(sweep.slo).items():
        if sweep.requests_per_step < _UPPER_BOUND_NEEDS[q]:
            raise InputError(f"slo.{key} needs requests_per_step >= {_UPPER_BOUND_NEEDS[q]} for its 95% upper bound",
                             **at("load", "sweep", "slo", key), hint=f"set requests_per_step: {_UPPER_BOUND_NEEDS[q]}")
