"""The paired comparison of two runs as the reports read it: the baseline comparison in a report's `comparison`
section (`gate.baseline`) and the result of `releasegate compare` (`pipeline.compare`), both made by
`gate.paired_comparison.compare_records`. Read once where a renderer starts (`read_section`), then used by attribute.

Numbers keep their JSON type (`Number`), so a figure shown as it is reads the same as from the dict.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import InputError
from ..model_base import Model
from ..record.capacity_sweep import Number

__all__ = ["ComparedMetric", "ComparedSlice", "FlippedCase", "Flipped", "LatencySources", "Blessing",
           "PairedComparison", "BaselineComparison", "ComparedRuns", "read_section"]


M = TypeVar("M", bound=BaseModel)


class _Model(Model):
    model_config = ConfigDict(extra="allow")  # a newer report read by an older renderer keeps what it does not know


def read_section(model: type[M], value: Any, where: str) -> M:
    """`value` read into `model`; one that does not fit is an InputError naming the field (`where`: the section)."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in (where, *first["loc"]))
        raise InputError(f"not a releasegate report: {field}: {first['msg']}",
                         hint="judge the run again: releasegate gate RUN_DIR") from None


class ComparedMetric(_Model):
    """One metric compared on the shared cases: both runs' values, the delta with its interval, the margin."""

    metric: str
    n: int | None = None
    baseline: Number | None = None
    candidate: Number | None = None
    delta: Number | None = None
    interval: list[Number] | None = None
    margin: Number
    p_value: Number | None = None
    """McNemar's exact p (null where it does not apply)."""
    verdict: str = ""
    note: str | None = None


class ComparedSlice(_Model):
    """Accuracy on the shared cases of one slice."""

    slice: str = ""
    n: int | str | None = ""
    baseline: Number | None = None
    candidate: Number | None = None
    delta: Number | None = None
    p_value: Number | None = None
    verdict: str = ""


class FlippedCase(_Model):
    """A shared case whose pass or fail differs between the runs."""

    case_id: str
    suite: str
    flip: str
    """'pass_to_fail' or 'fail_to_pass'."""
    why: list[str]
    input: str
    expected: str = ""
    baseline_output: str
    candidate_output: str


class Flipped(_Model):
    """How many shared cases flipped each way, and the cases kept."""

    pass_to_fail: int = 0
    fail_to_pass: int = 0
    cases: list[FlippedCase] = []

    def count(self, direction: str) -> int:
        return self.pass_to_fail if direction == "pass_to_fail" else self.fail_to_pass


class LatencySource(_Model):
    in_flight: int | None = None
    text: str


class LatencySources(_Model):
    """Where each run's latency rows were measured (`gate.latency_source.quality_source`)."""

    baseline: LatencySource
    candidate: LatencySource


class Blessing(_Model):
    """The blessing a `baseline: {blessed: NAME}` found (`record.blessings`)."""

    name: str | None = None
    run: str | None = None
    by: str | None = None
    blessed_at: str | None = None
    reason: str | None = None
    signer: str | None = None
    """The `baseline.signed_by` name whose key signed it (None: no key was asked for)."""


class PairedComparison(_Model):
    """What both the baseline comparison and `compare` hold: the rows, slices, flips and latency sources."""

    shared_cases: int | str | None = "?"
    identical_outputs: int | str | None = "?"
    rows: list[ComparedMetric] = []
    slices: list[ComparedSlice] | None = None
    flipped: Flipped | None = None
    latency_sources: LatencySources | None = None

    def flips(self, direction: str) -> list[FlippedCase]:
        return [c for c in (self.flipped.cases if self.flipped else []) if c.flip == direction]


class BaselineComparison(PairedComparison):
    """A report's `comparison` section: the comparison with the rubric's baseline run (`gate.baseline`)."""

    baseline_run: str | None = None
    baseline_blessed: str | None = None
    baseline_blessing: Blessing | None = None
    baseline_problems: list[str] | None = None
    """Why the comparison does not stand."""
    baseline_warnings: list[str] | None = None
    """What is stale about the blessed baseline."""
    changed_cases: int | None = 0


class ComparedRuns(PairedComparison):
    """`releasegate compare`'s result as its renderers read it (`decided_results.CompareResult` checks it)."""

    verdict: str
    baseline_run: str
    candidate_run: str
    shared_cases: int
    identical_outputs: int
    incomplete: str | None = None
    target_error: str | None = None
    settings_note: str | None = None
