"""The report's `judge` section (`gating.judge_section`) as the gating reads it back: each criterion's calibration
and pairwise consistency, and the policy they were judged by. Only what gating reads is typed; the rest is kept
(`extra="allow"`)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, ValidationError, field_validator

from ..errors import InputError
from ..model_base import Model
from ..record.run_parts import problem_line

__all__ = ["RowMetric", "ComparisonRowView", "MetricFigure", "JudgePrice", "JudgeInfo", "judge_info", "CellCount", "CalibrationView", "PairwiseView", "PolicyView", "JudgeSectionView", "section_view"]


class _View(Model):
    model_config = ConfigDict(extra="allow")


class MetricFigure(_View):
    """A report's metric figure (`MetricValue.as_dict`), as the guard's correction reads it."""

    value: int | float | None = None
    """Kept as written (an int stays one): it is shown again as the raw value."""
    note: str | None = None
    confidence: float | None = None


class RowMetric(_View):
    """Which metric a row of report.json `comparison` is of (the rest of the row is not read)."""

    metric: Any = None


class ComparisonRowView(_View):
    """The `comparison` row of forbidden_rate as the guard's correction reads it back once it has decided the row
    again (`guard_paired.corrected_row`: then every field below is set)."""

    corrected: bool | None = None
    """True once the row is decided on the guard-corrected delta."""
    delta: int | float | None = None
    n: int | None = None
    interval: list[int | float] | None = None
    note: str | None = None
    verdict: str | None = None


class JudgePrice(_View):
    """The judge's price per million tokens (run.json `judge.price`); a side not given costs nothing."""

    input_usd_per_1m: float = 0.0
    output_usd_per_1m: float = 0.0


class JudgeInfo(_View):
    """run.json `judge`: the judge the run's judge-scored cases are graded by."""

    fingerprint: str | None = None
    model: Any = None
    backend: Any = None
    """Both as the judge's description wrote them (shown as they are)."""
    price: JudgePrice | None = None

    @field_validator("price", mode="before")
    @classmethod
    def _no_price(cls, value: Any) -> Any:
        return value or None  # an empty price is no price: no cost is worked out


def judge_info(info: dict[str, Any]) -> JudgeInfo:
    """run.json `judge`, typed; an InputError naming the field when it is not what the run wrote."""
    try:
        return JudgeInfo.model_validate(info)
    except ValidationError as exc:
        raise InputError(f"run.json judge: {problem_line(exc)}") from None


class CellCount(_View):
    """A sampling cell of the review sample: the criterion's judge-scored cases in it, and how many are labelled."""

    cases: int = 0
    labelled: int = 0
    approved: int = 0


class CalibrationView(_View):
    """A judge criterion's calibration against the reviewers (`calibration.calibrate`)."""

    labels: int = 0
    agreement: float | None = None
    unlabelled_cell: Any = None
    calibrated: bool = False
    why: str | None = None
    cells: dict[str, CellCount] = {}


class PairwiseView(_View):
    """A pairwise judge criterion's comparisons (`gating._pairwise_summary`)."""

    compared: int = 0
    inconsistent: int = 0
    not_judged: int = 0
    order_inconsistency_rate: float | None = None
    consistent: bool = False


class PolicyView(_View):
    """The calibration policy (`CalibrationPolicy.as_dict`)."""

    min_agreement: float = 0.8
    min_labels: int = 20
    max_order_inconsistency: float = 0.2


class JudgeSectionView(_View):
    calibration: dict[str, CalibrationView] = {}
    pairwise: dict[str, PairwiseView] | None = None
    policy: PolicyView = PolicyView()


def section_view(section: dict[str, Any]) -> JudgeSectionView:
    """The judge section, typed; an InputError naming the field when it is not what `judge_section` writes."""
    try:
        return JudgeSectionView.model_validate(section)
    except ValidationError as exc:
        raise InputError(f"report judge section: {problem_line(exc)}") from None
