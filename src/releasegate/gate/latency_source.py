"""Where a latency figure comes from: which phase of the run, and how many requests were in flight.

A TTFT measured with 1 request in flight and one measured with 8 are different quantities, so a figure shown
without its source misleads: a slice's quality-phase TTFT P95 beside a load-phase criterion reads as if the
criterion had passed on it. Every report shows this label with each latency figure (metrics, criteria, slices,
per-case columns, comparisons), and `servers` warns when the targets it sets side by side were measured under
different loads.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..errors import InputError
from ..inputs.backend_facts import Capabilities, capabilities
from ..model_base import Model
from ..record.capacity_sweep import CapacitySweep, Number
from ..record.gate_report import LatencySource
from ..record.metrics import measured
from ..record.records import CaseRecord, RunInfo
from .run_view import load_phase_of, session_concurrency

__all__ = ["latency_source", "quality_source", "load_source"]


def latency_source(info: RunInfo, records: list[CaseRecord], phase: str,
                   sweep: CapacitySweep | dict[str, Any] | None = None) -> dict[str, Any]:
    """The source of the figures judged on `phase` ('quality', 'load' or 'both', as `latency_phase` chose):
    {'phase', 'in_flight' (the most requests in flight, None when the run does not record it), 'text'}.
    `sweep`: the capacity sweep as judged (`capacity_sweep`), whose figures come from its capacity step."""
    return _source(info, records, phase, _capacity_at(sweep)).model_dump()


class _StepAt(Model):
    model_config = ConfigDict(extra="allow")

    step: int | None = None
    rate: Number | None = None


class _SweepAt(Model):
    """The part of a judged sweep a source names: the capacity step's rate."""

    model_config = ConfigDict(extra="allow")

    steps: list[_StepAt] = []
    capacity_step: int | None = None


def _capacity_at(sweep: CapacitySweep | dict[str, Any] | None) -> _SweepAt | None:
    if sweep is None:
        return None
    return _SweepAt.model_validate(sweep.as_json() if isinstance(sweep, CapacitySweep) else sweep)


def _source(info: RunInfo, records: list[CaseRecord], phase: str, sweep: _SweepAt | None) -> LatencySource:
    if phase == "quality":
        return _quality(info, records)
    load = _load(info, sweep)
    if phase == "load":
        return load
    quality = _quality(info, records)
    flights = [s.in_flight for s in (quality, load) if s.in_flight is not None]
    return LatencySource(phase="both", in_flight=max(flights) if len(flights) == 2 else None,
                         text=f"{quality.text} and {load.text}, together")


def quality_source(info: RunInfo, records: list[CaseRecord]) -> dict[str, Any]:
    """The quality cases' source: requests in flight at most (an endpoint's `target.concurrency`, as each session
    of the run recorded it in `sessions[].concurrency`), or the batch size (the hf backend, whose requests share forward passes)."""
    return _quality(info, records).model_dump()


def _quality(info: RunInfo, records: list[CaseRecord]) -> LatencySource:
    timed = measured(records)
    if _run_capabilities(info).in_flight == "batch":
        batch = max((r.timing.batch_size for r in timed), default=None)
        text = f"quality cases, batches of {batch}" if batch else "quality cases"
        return LatencySource(phase="quality", in_flight=batch, text=text)
    in_flight = max(session_concurrency(info), default=None)  # a resumed run: the most any of its parts sent at once
    text = f"quality cases, {in_flight} in flight" if in_flight else "quality cases (requests in flight not recorded)"
    return LatencySource(phase="quality", in_flight=in_flight, text=text)


def _run_capabilities(info: RunInfo) -> Capabilities:
    """The capabilities of the backend run.json names; a name no backend has is one line naming run.json."""
    try:
        return capabilities(info.backend)
    except InputError as exc:
        raise InputError(exc.message, file="run.json", field="backend", hint="restore run.json as the run wrote it") from None


def load_source(info: RunInfo, sweep: CapacitySweep | dict[str, Any] | None = None) -> dict[str, Any]:
    """The load phase's source: its profile (closed or open loop, in flight at most), or for a capacity sweep
    the step its figures are judged at."""
    return _load(info, _capacity_at(sweep)).model_dump()


def _load(info: RunInfo, sweep: _SweepAt | None) -> LatencySource:
    phase = load_phase_of(info)
    in_flight = phase.concurrency
    if sweep is not None:
        step = next((s for s in sweep.steps if s.step == sweep.capacity_step), None)
        at = f"the capacity step, {step.rate:g} req/s" if step and step.rate is not None else "no capacity step"
        limit = f", at most {in_flight} in flight" if in_flight else ""
        return LatencySource(phase="load", in_flight=in_flight, text=f"load phase, {at}{limit}")
    text = f"load phase, {phase.profile}" if phase.profile else "load phase"
    return LatencySource(phase="load", in_flight=in_flight, text=text)
