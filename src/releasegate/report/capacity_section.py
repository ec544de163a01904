"""The capacity sweep and the prefix-cache probe for people: summary lines and the table of steps, shared by
every report format."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from ..inputs.load_profile import objective_limits
from ..record.capacity_sweep import CapacityStep, CapacitySweep, as_sweep
from .formatting import format_money, format_value
from .paired_models import read_section

__all__ = ["sweep_table", "capacity_lines", "capacity_table", "objective_text", "prefix_cache_lines"]

_COLUMNS = ("rate req/s", "requests", "P95 TTFT (sched) ms", "P95 TPOT ms", "P95 E2E (sched) ms", "errors",
            "completed req/s", "kept up", "queue", "running", "KV use", "verdict")
_LATENCY_WORDS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "E2E"}


def objective_text(slo: dict[str, Any]) -> str:
    """'P95 TTFT <= 200 ms, P95 TPOT <= 20 ms, errors <= 1%': every limit of the objective, in its order."""
    parts = [f"P{q} {_LATENCY_WORDS[latency]} <= {limit:g} ms" for latency, q, limit in objective_limits(slo).values()]
    parts.append(f"errors <= {slo.get('error_rate', 0.01) * 100:g}%")
    return ", ".join(parts)


def capacity_lines(sweep: CapacitySweep | dict[str, Any] | None) -> list[str]:
    """The capacity, why, what the server looked like there, the scale-out thresholds and the cost (a dict is
    the sweep's JSON form)."""
    capacity = as_sweep(sweep)
    if not capacity:
        return []
    objective = objective_text(capacity.slo)
    if capacity.capacity_rps is None:
        return [f"capacity at {objective}: unknown: {capacity.why}"]
    floor = "at least " if capacity.at_least else ""
    lines = [f"capacity at {objective}: {floor}{format_value(capacity.capacity_rps)} req/s"
             + (f" ({capacity.why})" if capacity.why else "")]
    step = capacity.step_at(capacity.capacity_step)
    there = [_completed(step)] if step else [_completed(None)]
    there += [f"{t.label} {format_value(t.at_capacity)}" for t in capacity.thresholds.values()]
    if capacity.cost_per_1m_output_tokens is not None:
        there.append(f"{format_money(capacity.cost_per_1m_output_tokens)} per 1M output tokens")
    lines.append("at capacity: " + ", ".join(there))
    for t in capacity.thresholds.values():
        if t.scale_out_above is not None:
            broke = f"; {format_value(t.at_break)} where P95 broke" if t.at_break is not None else ""
            lines.append(f"scale out when {t.label} averages above {format_value(t.scale_out_above)} "
                         f"({format_value(t.at_lowest_rate)} at the lowest rate{broke})")
    return lines


def capacity_table(capacity: CapacitySweep | None) -> tuple[tuple[str, ...], list[list[str]]]:
    """(columns, rows): one row per step, in rate order, with the server signals' means."""
    if not capacity:
        return _COLUMNS, []
    rows = []
    for s in capacity.steps:
        queue, running, kv_cache = (s.signals[k].mean if k in s.signals else None for k in ("queue", "running", "kv_cache"))
        kv = "—" if kv_cache is None else f"{kv_cache * 100:.0f}%"
        verdict = s.verdict + (f": {s.why}" if s.why else "")
        if s.step == capacity.capacity_step:
            verdict += " (capacity)"
        rows.append([format_value(s.rate), str(s.requests), format_value(s.ttft_sched_ms_p95),
                     format_value(s.tpot_ms_p95), _or_dash(s.e2e_sched_ms_p95), _errors(s),
                     _or_dash(s.completed_rps), _or_dash(s.kept_up),
                     _or_dash(queue), _or_dash(running), kv, verdict])
    return _COLUMNS, rows


def prefix_cache_lines(given: dict[str, Any] | None) -> list[str]:
    """Warm vs cold TTFT of the prefix-cache probe, and the cached prompt tokens the server reported."""
    if not given:
        return []
    from .run_models import PrefixCacheProbe

    probe = read_section(PrefixCacheProbe, given, "prefix_cache")
    warm, cold = probe.warm, probe.cold
    lines = [f"prefix cache ({probe.pairs} warm/cold pairs, shared system prompt of {probe.system_chars} "
             f"characters): TTFT P50 warm {format_value(warm.ttft_ms_p50)} ms, cold "
             f"{format_value(cold.ttft_ms_p50)} ms"
             + (f" (saves {format_value(probe.saved_ms_p50)} ms, cold {format_value(probe.cold_over_warm_p50)}x warm)"
                if probe.saved_ms_p50 is not None else "")
             + f"; P95 warm {format_value(warm.ttft_ms_p95)} ms, cold {format_value(cold.ttft_ms_p95)} ms"]
    if warm.cached_tokens_mean is not None:
        lines.append(f"cached prompt tokens per request (server): warm {format_value(warm.cached_tokens_mean)} of "
                     f"{format_value(warm.prompt_tokens_mean)}, cold {format_value(cold.cached_tokens_mean)} of "
                     f"{format_value(cold.prompt_tokens_mean)}")
    else:
        lines.append(f"cached prompt tokens: {probe.cached_tokens}")
    failed = warm.failed + cold.failed
    if failed:
        lines.append(f"prefix cache: {failed} request(s) failed and are left out")
    return lines


def _completed(step: CapacityStep | None) -> str:
    """'completed 29.6 req/s of 30 offered (achieved 26.2 req/s over the step, its drain included)'."""
    achieved = f"achieved {format_value(step.achieved_rps if step else None)} req/s"
    if step is None or step.completed_rps is None:
        return achieved
    return (f"completed {format_value(step.completed_rps)} req/s of {format_value(step.offered_rps)} "
            f"offered ({achieved} over the step, its drain included)")


def _errors(step: CapacityStep) -> str:
    """Failed requests, and how many of them were empty answers: '43 (43 empty)'."""
    return f"{step.failed} ({step.empty} empty)" if step.empty else str(step.failed)


def _or_dash(value: Any) -> str:
    return "—" if value is None else format_value(value)


def sweep_table(given: CapacitySweep | dict[str, Any]) -> Table:
    """Every step of a sweep: rate, requests, P95 TTFT from the scheduled send, P95 TPOT, errors, kept up, queue,
    verdict; the capacity step marked * (a dict is the sweep's JSON form)."""
    sweep = as_sweep(given)
    assert sweep is not None  # given a sweep, never None
    table = Table(box=None, pad_edge=False)
    for name in ("rate", "n", "TTFT p95", "TPOT p95", "errors", "kept up", "queue", "verdict"):
        table.add_column(name, justify="left" if name == "verdict" else "right")
    for s in sweep.steps:
        queue = s.signals.get("queue")
        mark = " *" if s.step == sweep.capacity_step else ""
        table.add_row(format_value(s.rate), str(s.requests), format_value(s.ttft_sched_ms_p95),
                      format_value(s.tpot_ms_p95), _errors(s), format_value(s.kept_up),
                      format_value(queue.mean) if queue else "—", s.verdict + mark)
    return table
