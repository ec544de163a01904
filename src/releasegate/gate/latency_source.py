"""Where a latency figure comes from: which phase of the run, and how many requests were in flight.

A TTFT measured with 1 request in flight and one measured with 8 are different quantities, so a figure shown
without its source misleads: a slice's quality-phase TTFT P95 beside a load-phase criterion reads as if the
criterion had passed on it. Every report shows this label with each latency figure (metrics, criteria, slices,
per-case columns, comparisons), and `servers` warns when the targets it sets side by side were measured under
different loads.
"""

from __future__ import annotations

from typing import Any

from ..inputs.backend_facts import capabilities
from ..record.metrics import measured
from ..record.records import CaseRecord, RunInfo

__all__ = ["latency_source", "quality_source", "load_source"]


def latency_source(info: RunInfo, records: list[CaseRecord], phase: str, sweep: dict[str, Any] | None = None) -> dict[str, Any]:
    """The source of the figures judged on `phase` ('quality', 'load' or 'both', as `latency_phase` chose):
    {'phase', 'in_flight' (the most requests in flight, None when the run does not record it), 'text'}.
    `sweep`: the capacity sweep as judged (`capacity_view`), whose figures come from its capacity step."""
    if phase == "quality":
        return quality_source(info, records)
    load = load_source(info, sweep)
    if phase == "load":
        return load
    quality = quality_source(info, records)
    flights = [s["in_flight"] for s in (quality, load) if s["in_flight"] is not None]
    return {"phase": "both", "in_flight": max(flights) if len(flights) == 2 else None,
            "text": f"{quality['text']} and {load['text']}, together"}


def quality_source(info: RunInfo, records: list[CaseRecord]) -> dict[str, Any]:
    """The quality cases' source: requests in flight at most (an endpoint's `target.concurrency`, as each session
    of the run recorded it in `sessions[].concurrency`), or the batch size (the hf backend, whose requests share forward passes)."""
    timed = measured(records)
    if capabilities(info.backend).in_flight == "batch":
        batch = max((r.timing.batch_size for r in timed), default=None)
        text = f"quality cases, batches of {batch}" if batch else "quality cases"
        return {"phase": "quality", "in_flight": batch, "text": text}
    flights = [s["concurrency"] for s in info.sessions if isinstance(s, dict) and isinstance(s.get("concurrency"), int)]
    in_flight = max(flights, default=None)  # a resumed run: the most any of its parts sent at once
    text = f"quality cases, {in_flight} in flight" if in_flight else "quality cases (requests in flight not recorded)"
    return {"phase": "quality", "in_flight": in_flight, "text": text}


def load_source(info: RunInfo, sweep: dict[str, Any] | None = None) -> dict[str, Any]:
    """The load phase's source: its profile (closed or open loop, in flight at most), or for a capacity sweep
    the step its figures are judged at."""
    phase = info.load_phase or {}
    in_flight = phase.get("concurrency")
    if sweep is not None:
        step = next((s for s in sweep.get("steps", []) if s.get("step") == sweep.get("capacity_step")), None)
        at = f"the capacity step, {step['rate']:g} req/s" if step and step.get("rate") is not None else "no capacity step"
        limit = f", at most {in_flight} in flight" if in_flight else ""
        return {"phase": "load", "in_flight": in_flight, "text": f"load phase, {at}{limit}"}
    profile = phase.get("profile")
    text = f"load phase, {profile}" if profile else "load phase"
    return {"phase": "load", "in_flight": in_flight, "text": text}
