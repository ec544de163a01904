"""One capacity-sweep step's figures as the gate computes them (`capacity.step_figures`) and its verdicts read
them (`capacity.step_verdict`, `capacity_pace`), and the sweep as run.json's load phase records it
(`SweepRecord`): the steps the gate judges, each read once into its type."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, StrictFloat, StrictInt

from ..model_base import Model
from ..record.capacity_sweep import Number, ObjectiveFigure

__all__ = ["StepFigures", "SweepRecord", "SweptStep", "Objective"]


class StepFigures(Model):
    """A step's requests, failures, latency percentiles with their bounds and pace (`capacity.step_figures`);
    fields in the order report.json's steps hold them. Numbers keep their JSON type."""

    requests: int
    answered: int
    failed: int
    seconds: Number | None = None
    empty: int = 0
    error_rate: Number | None = None
    errors: dict[str, int] = {}
    ttft_sched_ms_p95: Number | None = None
    ttft_ms_p50: Number | None = None
    ttft_ms_p95: Number | None = None
    tpot_ms_p95: Number | None = None
    n_tpot: int | None = None
    e2e_sched_ms_p50: Number | None = None
    e2e_sched_ms_p95: Number | None = None
    ttft_sched_ms_p95_upper: Number | None = None
    tpot_ms_p95_upper: Number | None = None
    objective: dict[str, ObjectiveFigure] = {}
    achieved_rps: Number | None = None
    offered_rps: Number | None = None
    completed_rps: Number | None = None
    completion_share: Number | None = None
    span_s: Number | None = None
    backlog_growth_ms: Number | None = None
    e2e_growth_ms: Number | None = None
    output_tokens_per_s: Number | None = None
    kept_up: Number | None = None


class Objective(Model):
    """The part of a sweep's latency objective (`load.sweep.slo`) read by name; its percentile limits are read by
    `inputs.load_profile.objective_limits`."""

    model_config = ConfigDict(extra="allow")

    error_rate: float = 0.01


class SweptStep(Model):
    """One step as the load phase recorded it: its number and rate (both needed to judge it), its length, span,
    client lateness and server signals."""

    model_config = ConfigDict(extra="allow")

    step: StrictInt
    rate: StrictInt | StrictFloat
    seconds: Number | None = None
    span_s: Number | None = None
    client: dict[str, Any] | None = None
    signals: dict[str, Any] | None = None


class SweepRecord(Model):
    """run.json `load_phase.sweep`: the objective, the highest rate asked and the steps run."""

    model_config = ConfigDict(extra="allow")

    slo: dict[str, Any]
    max_rps: Number | None = None
    steps: list[SweptStep] | None = None
