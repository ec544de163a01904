"""Run a capacity sweep as the load phase of `check`: open-loop steps of rising rate until the objective breaks.

The rate starts at `start_rps` and is multiplied by `factor` after every step that met the objective, up to
`max_rps`; the first step that breaks it ends the rise, and `refine` bisection steps between the last good and
the first bad rate sharpen the answer. A step that decides nothing (see capacity.step_verdict) ends the sweep:
what lies above it is unknown. Each step waits for its own requests, so the next one starts on an idle server.
Every step's requests go to load.jsonl, tagged with the step; run.json's `load_phase.sweep` keeps each step's
rate, length, server signals and client lateness, from which `capacity.capacity_view` judges the sweep again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..backends import Backend, Generation, Request
from ..border.files import read_text
from ..data_classes import dataclass
from ..errors import ErrorKind, InputError
from ..gate.capacity import STEP_TAG, capacity_sweep, step_signals
from ..inputs.files import MAX_YAML_BYTES as MAX_RUBRIC_BYTES
from ..record.capacity_sweep import CapacitySweep
from ..record.records import CaseRecord, RunDir, RunInfo
from ..scale.traffic import arrival_offsets, load_record, nth_request
from .load_runner import load_runner
from .progress import PlainProgress, count_kept
from .server_scrape import samples_line, summarise, target_scraper
from .stopping import stop_if_dead

if TYPE_CHECKING:
    from rich.progress import Progress

    from ..inputs.config import Config
    from ..inputs.load_profile import SweepConfig
    from ..inputs.suites import Case

Step = Callable[[float], str]
"""One step of the sweep at a rate (req/s): its verdict, 'meets', 'breaks' or 'undecided'."""

__all__ = ["run_sweep"]

_DEFAULT_CAP = 256


def run_sweep(backend: Backend | None, config: Config, cases: list[Case], run: RunDir, info: RunInfo,
              bar: Progress | PlainProgress, kept: Callable[[Generation], object] = lambda gen: None,
              session: int | None = None) -> None:
    """Run the sweep of `config.load.sweep` and record it (load.jsonl, server_metrics.jsonl, run.json); `kept` is
    given each completed request (the attempts ledger of `session`, whose lines run.json then names as load.jsonl's)."""
    load = config.load
    assert load is not None and load.sweep is not None  # run only for a sweep (load_phase)
    sweep, runner = load.sweep, load_runner(backend)
    pool = [Request(c.id, list(c.messages) if c.messages else None, c.prompt) for c in cases]
    steps: list[SweepStep] = []
    samples: list[dict[str, Any]] = []
    recorded: list[CaseRecord] = []
    seconds = 0.0
    lag_share = _lag_share(run)
    task = bar.add_task("load: capacity sweep", total=None)

    def step(rate: float) -> str:
        nonlocal seconds
        k = len(steps)
        warmup = [nth_request(pool, i, "warmup") for i in range(load.warmup)] if k == 0 else []
        count = max(sweep.requests_per_step, math.ceil(rate * sweep.step_s))
        requests = [nth_request(pool, i, f"s{k:02d}") for i in range(count)]
        offsets = arrival_offsets(len(requests), rate=rate, arrival=load.arrival, burstiness=load.burstiness,
                                  seed=load.seed + k)
        # a few /metrics samples inside even a short step
        scraper = target_scraper(config.target, interval=min(0.5, max(0.05, offsets[-1] / 8)))
        bar.update(task, description=f"load: capacity sweep, step {k + 1} at {rate:.4g} req/s")
        with scraper:
            done = runner.run_load(requests, offsets=offsets, concurrency=load.concurrency or _DEFAULT_CAP,
                                    max_new_tokens=config.max_new_tokens, warmup=warmup,
                                    on_start=lambda: scraper.mark("start"),
                                    on_done=lambda gen: count_kept(bar, task, gen, kept))
        stop_if_dead(backend, f"capacity sweep, step {k + 1} at {rate:.4g} req/s")
        records = [load_record(r, g, {STEP_TAG: k}) for r, g in done.results if g.error != ErrorKind.NOT_SENT]
        run.append(records, "load.jsonl")
        recorded.extend(records)
        samples.extend({**s, "step": k} for s in scraper.samples)
        seconds += done.seconds
        steps.append(SweepStep(k, rate, done.seconds, offsets[-1], len(records), step_signals(scraper.samples),
                               done.client, scraper.error))
        # run.json gets the sweep once it is whole (a stop in a later step, even os._exit, leaves none)
        so_far = info.model_copy(update={"load_phase": _phase(config, steps, samples, seconds)})
        judged = _judged(so_far, recorded, lag_share).step_at(k)
        assert judged is not None  # the step just run
        return judged.verdict

    info.load_phase = None  # measured whole or not at all: a resume runs it again
    _search(step, sweep)
    # the ledger's lines of this session are load.jsonl's (`record.ledger`)
    info.load_phase = {**_phase(config, steps, samples, seconds), **({} if session is None else {"session": session})}
    info.load_phase = {**info.load_phase, "client": _client_at_capacity(_judged(info, recorded, lag_share), steps)}
    run.write_text("server_metrics.jsonl", "".join(samples_line(s) for s in samples))
    run.write_info(info)


def _search(step: Step, sweep: SweepConfig) -> None:
    """The steps of the sweep: rising until a step misses the SLO, then `refine` halvings between the last
    rate that met it and the first that did not."""
    good, bad = _rise(step, sweep)
    for _ in range(sweep.refine if good is not None and bad is not None else 0):
        assert good is not None and bad is not None  # the range is empty otherwise
        middle = (good + bad) / 2
        verdict = step(middle)
        if verdict == "undecided":
            break
        good, bad = (middle, bad) if verdict == "meets" else (good, middle)


def _judged(info: RunInfo, recorded: list[CaseRecord], lag_share: float) -> CapacitySweep:
    """`capacity_sweep` of the sweep being run (it has a step: `info.load_phase` holds the steps so far)."""
    judged = capacity_sweep(info, recorded, lag_share)
    assert judged is not None
    return judged


def _client_at_capacity(judged: CapacitySweep, steps: list[SweepStep]) -> dict[str, Any] | None:
    """The load phase's client lateness, which the gate holds the latency figures against: the latest of the
    steps at or below the capacity (those figures come from its step), else of every step."""
    capacity = judged.capacity_rps
    if capacity is None:
        return _latest([s.client for s in steps if s.client])
    rates = {s.step: s.rate for s in judged.steps}
    return _latest([s.client for s in steps if rates[s.step] <= capacity and s.client])


@dataclass(frozen=True)
class SweepStep:
    """One step as run.json's `load_phase.sweep.steps` records it (`as_record`)."""

    step: int
    rate: float
    seconds: float
    span_s: float
    requests: int
    signals: dict[str, Any]
    client: dict[str, Any] | None
    metrics_error: str | None

    def as_record(self) -> dict[str, Any]:
        return {"step": self.step, "rate": self.rate, "seconds": self.seconds, "span_s": self.span_s,
                "requests": self.requests, "signals": self.signals, "client": self.client,
                "metrics_error": self.metrics_error}


def _rise(step: Step, sweep: SweepConfig) -> tuple[float | None, float | None]:
    """Raise the rate by `factor` until a step breaks the objective (or decides nothing, or max_rps is met)."""
    good, rate = None, sweep.start_rps
    while True:
        verdict = step(rate)
        if verdict == "breaks":
            return good, rate
        if verdict != "meets" or rate >= sweep.max_rps:
            return (rate if verdict == "meets" else good), None
        good, rate = rate, min(rate * sweep.factor, sweep.max_rps)


def _phase(config: Config, steps: list[SweepStep], samples: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """run.json's load_phase for a sweep: the totals the run's health checks read, and every step."""
    load = config.load
    assert load is not None and load.sweep is not None
    sweep = load.sweep
    total = sum(s.requests for s in steps)
    worst = _latest([s.client for s in steps if s.client])
    server = {**summarise(samples, client_ttft_ms=[], concurrency=load.concurrency, profile="capacity sweep"),
              "reading": "per step: see the capacity sweep's signals and scale-out thresholds"}  # not one load
    return {
        "profile": f"capacity sweep from {sweep.start_rps:g} req/s (x{sweep.factor:g}, up to {sweep.max_rps:g}), "
                   f"steps of {sweep.requests_per_step}+ requests and {sweep.step_s:g}+ s, {len(steps)} steps",
        "seconds": seconds, "requests": total, "warmup": load.warmup, "concurrency": load.concurrency or _DEFAULT_CAP,
        "planned": total, "cut_short": None,
        "server_metrics": server if samples else {"error": next((s.metrics_error for s in steps), None)},
        "client": worst,  # the latest client of every step; at the end, of those up to the capacity
        "sweep": {"slo": dict(sweep.slo), "start_rps": sweep.start_rps, "max_rps": sweep.max_rps,
                  "factor": sweep.factor, "requests_per_step": sweep.requests_per_step, "step_s": sweep.step_s,
                  "refine": sweep.refine,
                  "arrival": load.arrival, "steps": [s.as_record() for s in steps]},
    }


def _latest(clients: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The client summary whose event loop ran latest (lag p99)."""
    return max(clients, key=lambda c: ((c.get("loop_lag_ms") or {}).get("p99") or 0), default=None)


def _lag_share(run: RunDir) -> float:
    """The rubric's max_client_lag_share, from the run's rubric snapshot: the sweep decides its steps as the
    gate will judge them (a step whose client was saturated decides nothing)."""
    import yaml

    try:
        data = yaml.safe_load(read_text(run.path / "rubric.yaml", what="rubric snapshot", max_bytes=MAX_RUBRIC_BYTES))
    except (InputError, yaml.YAMLError, RecursionError):
        data = None
    share = data.get("max_client_lag_share") if isinstance(data, dict) else None
    return float(share) if isinstance(share, (int, float)) else 0.1


