"""The capacity sweep as judged (`gate.capacity` builds it, report.json's `capacity` holds it, the reports read it).

Fields are declared in the order the gate writes them and numbers keep their JSON type (an int rate stays an
int), so report.json reads the same whether it was written from this model or from its dict form.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Union

from pydantic import ConfigDict, SerializerFunctionWrapHandler, model_serializer

from ..model_base import Model

__all__ = ["as_sweep", "CapacitySweep", "CapacityStep", "SignalStats", "ObjectiveFigure", "SignalThreshold", "Number"]

Number = Union[int, float]
"""An int or a float, kept as given (pydantic would turn an int into a float for a `float` field)."""


class _Model(Model):
    model_config = ConfigDict(extra="allow")  # a newer report read by an older renderer keeps what it does not know

    @model_serializer(mode="wrap")
    def _finite(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A non-finite figure (a run.json edited or written elsewhere) is JSON null, never `Infinity`/`NaN`,
        which strict JSON readers (jq, JSON.parse) refuse."""
        return _null_non_finite(handler(self))


def _null_non_finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _null_non_finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_null_non_finite(v) for v in value]
    return value


class SignalStats(_Model):
    """One server signal over a step's /metrics samples."""

    mean: Number | None = None
    max: Number | None = None
    n: int | None = None


class ObjectiveFigure(_Model):
    """A latency percentile the objective names, measured on one step."""

    value: Number | None = None
    upper: Number | None = None
    """Its one-sided upper bound at `gate.capacity.CONFIDENCE`."""
    n: int = 0


class CapacityStep(_Model):
    """One step of the sweep with its figures (`gate.capacity.step_figures`) and verdict."""

    step: int
    rate: Number
    """The offered rate, requests/s."""
    seconds: Number | None = None
    requests: int = 0
    """Requests sent: every attempt."""
    answered: int = 0
    failed: int = 0
    empty: int = 0
    """Empty answers among the failures."""
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
    """Answered requests over the step, its drain included."""
    offered_rps: Number | None = None
    completed_rps: Number | None = None
    completion_share: Number | None = None
    span_s: Number | None = None
    backlog_growth_ms: Number | None = None
    e2e_growth_ms: Number | None = None
    output_tokens_per_s: Number | None = None
    kept_up: Number | None = None
    """The share of what was offered that the server completed (None: unknown); see `gate.capacity_pace`."""
    signals: dict[str, SignalStats] = {}
    verdict: Literal["meets", "breaks", "undecided"]
    why: str = ""


class SignalThreshold(_Model):
    """A server signal at the lowest rate, the capacity and the break, and the scale-out threshold it gives."""

    label: str
    at_lowest_rate: Number | None = None
    at_capacity: Number | None = None
    at_break: Number | None = None
    scale_out_above: Number | None = None


class CapacitySweep(_Model):
    """The sweep judged again from the run record: every step, the capacity (or why it is unknown), the server
    signals and scale-out thresholds at the capacity, and the cost per 1M output tokens there."""

    slo: dict[str, Any]
    """The latency objective: percentile limits in ms and `error_rate`."""
    max_rps: Number | None = None
    steps: list[CapacityStep]
    """In rate order."""
    capacity_rps: Number | None = None
    """Null when unknown (`why` says why)."""
    at_least: bool = False
    """The sweep met the objective up to its highest rate: the capacity is a floor."""
    why: str = ""
    capacity_step: int | None = None
    break_step: int | None = None
    break_rps: Number | None = None
    thresholds: dict[str, SignalThreshold] = {}
    highest_met_rps: Number | None = None
    """With the capacity unknown: the highest rate that met the objective."""
    achieved_rps: Number | None = None
    completed_rps: Number | None = None
    cost_per_1m_output_tokens: Number | None = None
    cost_note: str | None = None

    def step_at(self, number: int | None) -> CapacityStep | None:
        """The step numbered `number`, or None."""
        return next((s for s in self.steps if s.step == number), None)

    def as_json(self) -> dict[str, Any]:
        """The JSON form (what report.json holds under `capacity`)."""
        return self.model_dump(mode="json", exclude_unset=True)


def as_sweep(sweep: CapacitySweep | dict[str, Any] | None) -> CapacitySweep | None:
    """A sweep as judged, from its model or its JSON form (validated)."""
    return sweep if sweep is None or isinstance(sweep, CapacitySweep) else CapacitySweep.model_validate(sweep)
