"""The typed rows of `servers` and of the served variants: each target's and each variant's figures, parity and
choice, built once and dumped to the JSON the reports read (fields in the order the JSON has always had).

A row read back (a test's hand-made row, or a row a caller built) is validated into `RankedRow`, what the choice
reads; numbers stay as given (an int stays an int), so every sentence the choice writes reads the same.
"""

from __future__ import annotations

from typing import Any, Union

from pydantic import BaseModel, ConfigDict

from ..model_base import Model
from ..record.decided_results import VariantsResult

__all__ = ["Number", "Parity", "ComparisonRow", "PairedComparison", "RankedRow", "TargetRow", "VariantRow",
           "UnservedRow", "ServedFile", "ServedRecord", "row_json",
           "MatrixKind", "ServedVariantsResult"]

Number = Union[int, float]


class _Model(Model):
    model_config = ConfigDict(extra="allow")  # a row carries what its command adds beside what is read here


class ComparisonRow(_Model):
    """One metric's row of a paired comparison (`gate.paired_comparison.compare_records`)."""

    metric: str
    delta: Number | None = None
    needed_n: Number | None = None
    interval: Any = None
    p_value: Number | None = None
    margin: Number | None = None


class PairedComparison(_Model):
    """The paired comparison of a target with the reference, as `compare_records` returns it."""

    shared_cases: int
    pairs_answered: int
    changed_cases: int
    identical_outputs: int
    rows: list[dict[str, Any]]

    def metric_rows(self) -> list[tuple[dict[str, Any], ComparisonRow]]:
        """Each row as it is and as read."""
        return [(row, ComparisonRow.model_validate(row)) for row in self.rows]


class Parity(_Model):
    """A target's quality against the reference on the shared cases."""

    shared_cases: int = 0
    shared_share: float | None = None
    changed_cases: int | None = None
    identical_outputs: int = 0
    accuracy_delta: Number | None = None
    accuracy_needed_n: Number | None = None
    quality_verdict: str | None = None
    rows: list[dict[str, Any]] = []
    identical_share: float | None = None
    accuracy_interval: Any = None
    accuracy_p_value: Number | None = None
    margin: Number | None = None
    quality_reason: str | None = None


class RankedRow(_Model):
    """What the choice reads of a target or variant row (`server_ranking.contender`)."""

    run_id: str | None = None
    variant: str | None = None
    verdict: str
    review_waived: bool | None = None
    comparable: str | None = None
    parity: Parity | None = None
    sweep: bool | None = None
    capacity_rps: Number | None = None
    capacity_at_least: bool | None = None
    capacity_break_rps: Number | None = None
    cost_per_1m_at_capacity: Number | None = None
    cost_per_1m_output_tokens: Number | None = None
    cost_mode: str | None = None
    e2e_ms_p95_bounds: Any = None
    client_lateness_ms: Any = None
    speculative: str | None = None
    draft_tokens: Number | None = None
    speculation_changed: str | None = None
    load_flip_rate: Number | None = None
    load_flip_upper: Number | None = None
    flip_margin: Number | None = None
    load_flip_unknown: str | None = None
    flip_variation: Number | None = None
    why_not: str | None = None


class TargetRow(Model):
    """One target of `servers`: its verdict judged again, its figures, and (past the reference) its parity."""

    run_id: str
    run_dir: str
    target: str
    backend: str | None
    verdict: str
    verdict_reason: str
    saved_verdict: str | None
    latency_from: str | None
    latency_source: dict[str, Any] | None
    client_saturated: bool
    accuracy: Number | None
    format_compliance: Number | None
    forbidden_rate: Number | None
    error_rate: Number | None
    ttft_ms_p50: Number | None
    ttft_ms_p95: Number | None
    ttft_ms_p99: Number | None
    tpot_ms_p50: Number | None
    tpot_ms_p95: Number | None
    tpot_ms_p99: Number | None
    e2e_ms_p50: Number | None
    e2e_ms_p95: Number | None
    e2e_ms_p99: Number | None
    output_tokens_per_s: Number | None
    cost_per_1m_output_tokens: Number | None
    prefill_share: Number | None
    bottleneck: str | None
    sweep: bool
    capacity_rps: Number | None
    capacity_at_least: bool | None
    cost_per_1m_at_capacity: Number | None
    slo: dict[str, Any] | None
    capacity_break_rps: Number | None
    cost_mode: str | None
    e2e_ms_p95_bounds: list[Number | None] | None
    client_lateness_ms: Number | None
    review_waived: bool | None = None
    # quality under load (`gate.load_quality.load_figures`): absent when the load phase asked no case
    accuracy_under_load: Number | None = None
    load_flip_rate: Number | None = None
    load_flip_upper: Number | None = None
    load_accuracy_delta: Number | None = None
    load_flip_unknown: str | None = None
    flip_margin: Number | None = None
    flip_variation: Number | None = None
    # past the reference only
    parity: Parity | None = None
    comparable: str | None = None
    unchecked: str | None = None


class ServedFile(_Model):
    """A file a variant's server was handed, as variant.json lists it (`export.variant_files`)."""

    role: str | None = None
    file: str | None = None
    type: str | None = None


class ServedRecord(_Model):
    """variant.json: what a variant served; every part absent in a variant that could not be served."""

    files: list[ServedFile] | None = None
    model_bytes: Number | None = None
    model_sha256: str | None = None
    peak_memory_bytes: Number | None = None
    speculative: dict[str, Any] | None = None

    def model_entry(self) -> ServedFile | None:
        """The entry of the served model file."""
        return next((f for f in self.files or [] if f.role == "model"), None)


class _VariantHead(Model):
    """What every variant row begins with: what was served, and its figures (None where it has none)."""

    def as_json(self) -> dict[str, Any]:
        """The row's JSON: the keys it was given, in its fields' order."""
        return self.model_dump(exclude_unset=True)

    variant: str
    server: str
    quant: str | None
    lora: str | None
    speculative: str | None
    described: str
    accuracy: Number | None = None
    format_compliance: Number | None = None
    forbidden_rate: Number | None = None
    error_rate: Number | None = None
    ttft_ms_p50: Number | None = None
    ttft_ms_p95: Number | None = None
    ttft_ms_p99: Number | None = None
    tpot_ms_p50: Number | None = None
    tpot_ms_p95: Number | None = None
    tpot_ms_p99: Number | None = None
    e2e_ms_p50: Number | None = None
    e2e_ms_p95: Number | None = None
    e2e_ms_p99: Number | None = None
    output_tokens_per_s: Number | None = None
    cost_per_1m_output_tokens: Number | None = None
    capacity_rps: Number | None = None
    capacity_at_least: bool = False
    cost_per_1m_at_capacity: Number | None = None


class VariantRow(_VariantHead):
    """A served variant: its run's figures (a `servers` target's), what it served and its place in the choice."""

    sweep: bool | None
    verdict: str
    verdict_reason: str
    run_id: str
    run_dir: str
    comparable: str | None
    model_file: str | None
    model_bytes: Number | None
    model_sha256: str | None
    peak_memory_bytes: Number | None
    acceptance_rate: Number | None
    draft_tokens: Number | None
    accepted_tokens: Number | None
    parity: Parity | None
    latency_source: dict[str, Any] | None
    unchecked: str | None
    review_waived: bool | None
    capacity_break_rps: Number | None
    cost_mode: str | None
    e2e_ms_p95_bounds: list[Number | None] | None
    client_lateness_ms: Number | None
    speculation_changed: str | None
    why_not: str | None
    # quality under load, as a target's (absent when the load phase asked no case)
    accuracy_under_load: Number | None = None
    load_flip_rate: Number | None = None
    load_flip_upper: Number | None = None
    load_accuracy_delta: Number | None = None
    load_flip_unknown: str | None = None
    flip_margin: Number | None = None
    flip_variation: Number | None = None
    eligible: bool | None = None
    chosen: bool | None = None


class UnservedRow(_VariantHead):
    """A variant whose server could not be had: no run, no figures, its decision TARGET_ERROR."""

    verdict: str
    exit_code: int
    verdict_reason: str
    run_id: None = None
    run_dir: None = None
    model_file: None = None
    model_bytes: None = None
    model_sha256: None = None
    peak_memory_bytes: None = None
    acceptance_rate: None = None
    draft_tokens: None = None
    accepted_tokens: None = None
    parity: None = None
    eligible: bool = False
    why_not: str | None
    sweep: bool = False
    comparable: None = None
    chosen: bool | None = None

    def as_json(self) -> dict[str, Any]:
        """Every key, each None the variant has no figure for."""
        return self.model_dump(exclude=set() if "chosen" in self.model_fields_set else {"chosen"})


def row_json(row: BaseModel) -> dict[str, Any]:
    """A row's JSON: the keys it was given, in its fields' order."""
    return row.model_dump(exclude_unset=True)


class MatrixKind(Model):
    """Which matrix a result is: the served variants' (`kind: served_variants`) or the in-process one (no kind)."""

    model_config = ConfigDict(extra="allow")

    kind: str | None = None


class ServedVariantsResult(VariantsResult):
    """The served variants' result as `run_served_variants` returns it."""

    dir: str
    """The matrix directory: every variant's run and the reports."""
