"""The `load:` section of a config: a closed-loop, open-loop or replayed load profile, or a capacity sweep."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from .files import is_file, resolve_under

__all__ = ["LoadConfig", "SweepConfig", "parse_load"]


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
    slo: dict = field(default_factory=dict)
    """The latency objective: `ttft_ms_p95`, `tpot_ms_p95` (limits in ms) and `error_rate` (default 0.01)."""


def parse_load(raw: dict | None, target: dict, here: Path, at) -> LoadConfig | None:
    """The `load:` section (openai backend only); None (no load phase) when the config has none."""
    if raw is None:
        return None
    if target["backend"] != "openai":
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


def _sweep(raw: dict, at) -> SweepConfig | None:
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
    return SweepConfig(**{k: sweep[k] for k in ("start_rps", "max_rps", "factor", "requests_per_step", "step_s", "refine")
                          if k in sweep}, slo={"error_rate": 0.01, **sweep["slo"]})
