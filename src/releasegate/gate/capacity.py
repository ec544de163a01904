"""Capacity at a latency objective: what a sweep of open-loop steps says, recomputed from the run record.

A sweep (`load.sweep`, run by `sweep.run_sweep`) sends `requests_per_step` requests per step at rising rates.
Each step either meets the objective (the 95% upper bound of every latency percentile the objective names
within its limit, the error rate, empty answers included, within its limit, the server completing what was
offered: see KEEP_UP), breaks it, or decides nothing (too few answered requests for the bounds, or a client
saturated enough to have made the verdict). The capacity is the highest rate such that every step at or below
it met the objective; the first step above it must have broken it. Anything else (the lowest rate already
broke, a step that decided nothing at the boundary) leaves the capacity unknown, so a `capacity_rps` criterion
is insufficient, never a pass. A sweep that met the objective up to `max_rps` gives `max_rps` as a floor
(`at_least`), gated as one (`capacity_range`, decided in `decision.criterion`): the rubric refuses `<=` criteria on it, and a `>=` threshold
above the floor is undecided, not failed.
"""

from __future__ import annotations

from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..decision.criterion import CapacityRange
from ..errors import ErrorKind, InputError  # InputError: a hand-edited run.json, one line, not a traceback
from ..inputs.load_profile import OBJECTIVE_SAMPLES, objective_limits
from ..record.capacity_sweep import CapacityStep, CapacitySweep, ObjectiveFigure, SignalThreshold, as_sweep
from ..record.evidence import answered, attempt_counts
from ..record.gate_report import load_report
from ..record.metrics import MetricValue, measured
from ..record.records import RunDir
from ..stats.intervals import percentile, percentile_bounds, percentile_min_n
from .capacity_pace import KEEP_UP, behind_why, completion_share, e2e_growth_ms, growth_ms, kept_up, unknown_why
from .health import client_saturation
from .run_view import Attempts, ClientFigures, client_figures, load_phase_of
from .step_figures import Objective, StepFigures, SweepRecord

if TYPE_CHECKING:
    from ..record.records import RunInfo

__all__ = ["saved_sweep", "CONFIDENCE", "MIN_STEP_SAMPLES", "KEEP_UP", "STEP_TAG", "SIGNALS",
           "step_figures", "figures_of", "step_verdict", "step_signals", "capacity_sweep", "capacity_view", "capacity_metric",
           "capacity_range", "gated_records", "as_sweep"]

CONFIDENCE = 0.95
"""A step meets the objective when the one-sided upper bound at this confidence of every percentile it names is
within its limit (stats.percentile_bounds: an order statistic), so the rate it reports holds when measured
again, not only on the sample the sweep happened to draw."""
MIN_STEP_SAMPLES = percentile_min_n(95, CONFIDENCE)
"""Answered requests a step needs for that bound: 59."""
STEP_TAG = "sweep_step"
"""The tag of a load record that says which sweep step sent it."""
SIGNALS = {"queue": "queue length (waiting)", "running": "requests running", "kv_cache": "KV cache use"}
"""Server signals read at every step (server_metrics' normalised names), in the words of the reports."""


def step_figures(records: list[Any], seconds: float | None, span_s: float | None = None, slo: dict[str, Any] | None = None) -> dict[str, Any]:
    """One step's figures (`figures_of`) in their JSON form."""
    return figures_of(records, seconds, span_s, slo).model_dump()


def figures_of(records: list[Any], seconds: float | None, span_s: float | None = None,
               slo: dict[str, Any] | None = None) -> StepFigures:
    """One step's figures: requests, failures (empty answers among them), P95 TTFT (scheduled and actual send),
    P95 TPOT and E2E, each objective percentile with its upper bound, the achieved rate (over the step, its drain
    included), the rates offered and completed, the backlog's and E2E's growth over the step and whether the
    server kept up (see KEEP_UP; None without what it needs)."""
    done = [r for r in measured(records) if answered(r)]
    ttft_sched, tpot, e2e = (_samples(done, OBJECTIVE_SAMPLES[m]) for m in ("ttft_ms", "tpot_ms", "e2e_ms"))
    ttft = _samples(done, "ttft_ms")
    tally = Attempts(**attempt_counts(records))  # every attempt counts, an empty answer as a failure (`evidence`)
    tokens = sum(r.tokens.output or 0 for r in done)
    growth, e2e_growth = growth_ms(done, "ttft_sched_ms"), e2e_growth_ms(done)
    share = completion_share(span_s, e2e_growth, len(done))
    offered = (len(records) - 1) / span_s if span_s and len(records) > 1 else None
    figures = StepFigures(
        requests=tally.attempts, answered=len(done), failed=tally.failed, seconds=seconds,
        empty=tally.errors.get(ErrorKind.EMPTY_RESPONSE, 0), error_rate=tally.rate, errors=tally.errors,
        ttft_sched_ms_p95=percentile(ttft_sched, 95), ttft_ms_p50=percentile(ttft, 50),
        ttft_ms_p95=percentile(ttft, 95), tpot_ms_p95=percentile(tpot, 95), n_tpot=len(tpot),
        e2e_sched_ms_p50=percentile(e2e, 50), e2e_sched_ms_p95=percentile(e2e, 95),
        ttft_sched_ms_p95_upper=_upper(ttft_sched), tpot_ms_p95_upper=_upper(tpot),
        objective=_objective(done, slo or {}),
        achieved_rps=len(done) / seconds if seconds else None,
        offered_rps=offered, completed_rps=offered * share if offered and share is not None else None,
        completion_share=share, span_s=span_s, backlog_growth_ms=growth, e2e_growth_ms=e2e_growth,
        output_tokens_per_s=tokens / seconds if seconds else None,
    )
    figures.kept_up = kept_up(figures)
    return figures


def _samples(done: list[Any], field: str) -> list[float]:
    return [v for r in done if (v := getattr(r.timing, field)) is not None]


def _upper(samples: list[float], q: float = 95) -> float | None:
    return percentile_bounds(samples, q, CONFIDENCE)[1] if samples else None


def _objective(done: list[Any], slo: dict[str, Any]) -> dict[str, ObjectiveFigure]:
    """Each latency percentile the objective names: its value, its one-sided upper bound and n."""
    out = {}
    for key, (metric, q, _) in objective_limits(slo).items():
        samples = _samples(done, OBJECTIVE_SAMPLES[metric])
        out[key] = ObjectiveFigure(value=percentile(samples, q), upper=_upper(samples, q), n=len(samples))
    return out


def step_verdict(figures: StepFigures | dict[str, Any], slo: dict[str, Any], client: dict[str, Any] | None,
                 max_lag_share: float) -> tuple[str, str]:
    """('meets' | 'breaks' | 'undecided', why). Errors (empty answers included) decide first (they need no latency
    sample); then a step with too few answered requests decides nothing; then the latency limits and whether the
    server kept up, unless the client was saturated (health.client_saturation at the rubric's `max_lag_share`)
    by enough to have made the verdict."""
    step = figures if isinstance(figures, StepFigures) else StepFigures.model_validate(figures)
    limit = Objective.model_validate(slo).error_rate
    if step.error_rate is None:
        return "undecided", "no request was recorded"
    if step.error_rate > limit:
        empty = f" ({step.empty} empty answers among them)" if step.empty else ""
        return "breaks", f"error rate {step.error_rate:.3g} > {limit:g}{empty}"
    needed = _needed(slo)
    if step.answered < needed:
        return "undecided", f"{step.answered} answered requests (the objective's bounds need {needed})"
    return _latency_verdict(step, slo, client_figures(client), max_lag_share)


def _latency_verdict(step: StepFigures, slo: dict[str, Any], client: ClientFigures | None,
                     max_lag_share: float) -> tuple[str, str]:
    """The verdict of a step with its errors within the objective and enough answers: see `step_verdict`."""
    broken: list[tuple[float, float]] = []  # (value, limit) of each figure whose bound broke its limit
    close: list[tuple[float, float]] = []  # (upper bound, limit) of each TPOT that met it
    why = []
    for key, (_, q, limit) in objective_limits(slo).items():
        measured_here = step.objective.get(key) or ObjectiveFigure()
        value, upper = measured_here.value, measured_here.upper
        if value is None or upper is None:
            return "undecided", f"too few samples for {key} (its bound needs {percentile_min_n(q, CONFIDENCE)})"
        if upper > limit:
            broken.append((value, limit))
            why.append(f"{key} {value:.4g} > {limit:g}" if value > limit else
                       f"{key} {value:.4g}, but its {CONFIDENCE:.0%} upper bound {upper:.4g} > {limit:g}")
        elif key.startswith("tpot_ms"):
            close.append((upper, limit))
    if not broken and step.kept_up is None:  # a step meets only when it shows the server kept up
        return "undecided", f"whether the server kept up is unknown ({unknown_why(step)})"
    behind = step.kept_up is not None and step.kept_up < KEEP_UP
    verdict = "breaks" if broken or behind else "meets"
    if behind:
        why.append(behind_why(step))
    lag = client.loop_lag_ms.p99 if client and client.loop_lag_ms else None
    saturated = client_saturation(lag, step.ttft_ms_p50, max_lag_share, cpu_share=client.cpu_share if client else None)
    if saturated and not _stands(verdict, broken, close, lag or 0.0, step):  # saturated: lag known
        return "undecided", saturated
    return verdict, "; ".join(why)


def _needed(slo: dict[str, Any]) -> int:
    """Answered requests a step needs: MIN_STEP_SAMPLES, or more for the upper bound of a higher percentile."""
    return max([MIN_STEP_SAMPLES] + [percentile_min_n(q, CONFIDENCE) for _, q, _ in objective_limits(slo).values()])


def _stands(verdict: str, broken: list[tuple[float, float]], close: list[tuple[float, float]], lag: float,
            step: StepFigures) -> bool:
    """Whether a late client (event-loop lag p99 `lag` ms) could not have made the verdict. TTFT and E2E from the
    scheduled send, the step's length and when its answers came back are only ever made later by a late client;
    TPOT can move either way, by at most the lag (the first and last token read late). So a step meets when its
    TPOT meets even with the lag added, and breaks when a figure breaks even with the lag taken off."""
    if verdict == "breaks":
        behind = kept_up(step, late_ms=lag)
        return any(value - lag > limit for value, limit in broken) or (behind is not None and behind < KEEP_UP)
    return all(upper + lag <= limit for upper, limit in close)


def step_signals(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and max of each server signal over one step's /metrics samples (those taken during it, else all)."""
    during = [s for s in samples if s.get("phase") == "during"] or samples
    out = {}
    for key in SIGNALS:
        values = [s[key] for s in during if key in s]
        if values:
            out[key] = {"mean": fmean(values), "max": max(values), "n": len(values)}
    return out


def capacity_sweep(info: RunInfo, load_records: list[Any], max_lag_share: float = 0.1) -> CapacitySweep | None:
    """The sweep of a run: every step with its figures and verdict, the capacity, the signals at the capacity
    and at the break, and the autoscaling thresholds they give. None when the load phase was no sweep."""
    sweep = _recorded_sweep(info)
    if sweep is None:
        return None
    by_step: dict[int, list[Any]] = {}
    for r in load_records:
        by_step.setdefault(r.tags.get(STEP_TAG), []).append(r)
    steps = []
    try:
        for entry in sorted(sweep.steps or [], key=lambda e: (e.rate, e.step)):
            figures = figures_of(by_step.get(entry.step, []), entry.seconds, entry.span_s, sweep.slo)
            verdict, why = step_verdict(figures, sweep.slo, entry.client, max_lag_share)
            steps.append(CapacityStep.model_validate(
                {"step": entry.step, "rate": entry.rate, "seconds": entry.seconds, **figures.model_dump(),
                 "signals": entry.signals or {}, "verdict": verdict, "why": why}))
        return CapacitySweep.model_validate({"slo": sweep.slo, "max_rps": sweep.max_rps, "steps": steps,
                                             **_capacity(steps, sweep.max_rps)})
    except ValidationError as exc:  # a run.json edited or written elsewhere: its sweep is not one check records
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"its capacity sweep does not read: {where}: {first['msg']}", file="run.json",
                         field="load_phase.sweep", hint="judge the run as `check` wrote it") from None


def _recorded_sweep(info: RunInfo) -> SweepRecord | None:
    """run.json's `load_phase.sweep` read into its type (None: the load phase was no sweep)."""
    sweep = load_phase_of(info).sweep
    if not sweep:
        return None
    try:
        return SweepRecord.model_validate(sweep)
    except ValidationError:
        raise InputError("its capacity sweep has no slo, or a step without its step number and rate", file="run.json",
                         field="load_phase.sweep", hint="judge the run as `check` wrote it") from None


def capacity_view(info: RunInfo, load_records: list[Any], max_lag_share: float = 0.1) -> dict[str, Any] | None:
    """`capacity_sweep` in its JSON form (what report.json holds under `capacity`)."""
    sweep = capacity_sweep(info, load_records, max_lag_share)
    return None if sweep is None else sweep.as_json()


def _capacity(steps: list[CapacityStep], max_rps: float | None) -> dict[str, Any]:
    """The highest rate with every step at or below it meeting the objective, and the step that broke above."""
    good = None
    for step in _worst_per_rate(steps):
        if step.verdict == "meets":
            good = step
            continue
        if step.verdict == "undecided":
            return _unknown(f"the step at {step.rate:.4g} req/s decided nothing ({step.why})", good)
        if good is None:
            return _unknown(f"the objective broke already at the lowest rate, {step.rate:.4g} req/s "
                            f"({step.why}): start the sweep lower", None)
        return _found(steps, good, step)
    if good is None:
        return _unknown("the sweep ran no step", None)
    at_max = max_rps is not None and good.rate >= max_rps
    why = (f"met the objective up to max_rps ({good.rate:.4g} req/s): the capacity is at least that"
           if at_max else f"no step above {good.rate:.4g} req/s broke the objective (the sweep stopped early)")
    return {**_found(steps, good, None), "at_least": True, "why": why}


_WORSE = {"meets": 0, "undecided": 1}
"""A rate swept more than once is as good as its worst step (any other verdict: it broke the objective)."""


def _worst_per_rate(steps: list[CapacityStep]) -> list[CapacityStep]:
    """One step per rate, in rising rate: the worst of the steps run at it, so a rate that broke the objective
    once is never met because another step at it met it."""
    worst: dict[float, CapacityStep] = {}
    for step in steps:
        kept = worst.get(step.rate)
        if kept is None or _WORSE.get(step.verdict, 2) > _WORSE.get(kept.verdict, 2):
            worst[step.rate] = step
    return [worst[rate] for rate in sorted(worst)]


def _unknown(why: str, good: CapacityStep | None) -> dict[str, Any]:
    return {"capacity_rps": None, "at_least": False, "why": why, "capacity_step": None, "break_step": None,
            "break_rps": None, "thresholds": {}, "highest_met_rps": good.rate if good else None}


def _found(steps: list[CapacityStep], good: CapacityStep, broke: CapacityStep | None) -> dict[str, Any]:
    why = f"{good.rate:.4g} req/s met the objective, {broke.rate:.4g} req/s broke it ({broke.why})" if broke else ""
    return {"capacity_rps": good.rate, "at_least": broke is None, "why": why, "capacity_step": good.step,
            "break_step": broke.step if broke else None, "break_rps": broke.rate if broke else None,
            "thresholds": _thresholds(steps, good, broke), "achieved_rps": good.achieved_rps,
            "completed_rps": good.completed_rps}


def _mean(step: CapacityStep | None, key: str) -> float | None:
    signal = step.signals.get(key) if step else None
    return signal.mean if signal else None


def _thresholds(steps: list[CapacityStep], good: CapacityStep, broke: CapacityStep | None) -> dict[str, Any]:
    """Per server signal: its mean at the lowest rate, at the capacity and at the first step that broke, and the
    scale-out threshold: the mean at the capacity, when the signal had risen to it from the lowest rate (it
    tracks load); else the mean where the objective broke, when it rose there; else none (the signal does not
    follow load here: llama.cpp's running requests stop at its slot count, for one)."""
    out = {}
    for key, label in SIGNALS.items():
        at_low, at_cap, at_break = _mean(steps[0], key), _mean(good, key), _mean(broke, key)
        if at_cap is None:
            continue
        if at_low is not None and at_cap > at_low:
            threshold: float | None = at_cap
        elif at_break is not None and at_break > at_cap:
            threshold = at_break
        else:
            threshold = None
        out[key] = SignalThreshold(label=label, at_lowest_rate=at_low, at_capacity=at_cap, at_break=at_break,
                                   scale_out_above=threshold)
    return out


def gated_records(view: CapacitySweep | dict[str, Any] | None, load_records: list[Any]) -> tuple[list[Any], list[Any]]:
    """(records of the steps at or below the capacity, records of the capacity step): what error rates and
    latency, throughput and cost are judged on for a sweep. The lowest rate's step always counts for the error
    rates (a server failing there failed, whatever else the sweep found); with the capacity unknown there is no
    step to take latency, throughput and cost from."""
    sweep = as_sweep(view)
    if sweep is None:
        return load_records, load_records
    rates = {s.step: s.rate for s in sweep.steps}
    ceiling = max([sweep.capacity_rps or 0.0] + [min(rates.values(), default=0.0)])
    below = [r for r in load_records if rates.get(r.tags.get(STEP_TAG), float("inf")) <= ceiling]
    at = [r for r in load_records if r.tags.get(STEP_TAG) == sweep.capacity_step]
    return below, at


def capacity_metric(view: CapacitySweep | dict[str, Any] | None) -> MetricValue:
    """`capacity_rps`: the sweep's capacity (n: answered requests of its step), or no value with the reason."""
    sweep = as_sweep(view)
    if sweep is None:
        return MetricValue(None, 0, note="no capacity sweep ran (load.sweep)")
    step = sweep.step_at(sweep.capacity_step)
    if sweep.capacity_rps is None or step is None:
        return MetricValue(None, 0, note=sweep.why)
    return MetricValue(sweep.capacity_rps, step.answered, note=sweep.why)


def capacity_range(view: CapacitySweep | dict[str, Any] | None) -> CapacityRange:
    """What the sweep showed of the capacity, for `decision.criterion` to gate a `capacity_rps` criterion on."""
    sweep = as_sweep(view)
    if sweep is None:
        return CapacityRange(None, False)
    return CapacityRange(sweep.break_rps, bool(sweep.at_least))


def saved_sweep(run_dir: str | Path) -> dict[str, Any]:
    """The capacity sweep of a saved run as judged in its report.json (`releasegate capacity`), in its JSON form."""
    sweep = load_report(RunDir(run_dir)).capacity
    if not sweep:
        raise InputError("this run's load phase was no capacity sweep", file=run_dir,
                         hint="add load: {sweep: ...} to the config and run check")
    return sweep.as_json()
