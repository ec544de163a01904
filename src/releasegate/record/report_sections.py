"""Typed sections of the gate report: human review per slice and the LLM judge (see `gate_report.GateReport`);
a stopping run's confidence sequences are typed in `confidence_sequences`.

Fields are declared in the order the gate writes them, so report.json reads the same through these models.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..model_base import Model
from .capacity_sweep import Number
from .confidence_sequences import ConfidenceSequence

__all__ = ["ReviewRow", "JudgeSection", "JudgeCalibration", "JudgePairwise", "ConfidenceSequence"]


class _Model(Model):
    model_config = ConfigDict(extra="allow")  # a newer report read by an older renderer keeps what it does not know


class ReviewRow(_Model):
    """Where human review stands on one slice ('all': the whole run); see `review.summary`."""

    required: bool = False
    status: str
    """'pass', 'fail', 'pending', 'pending (allowed)', 'undecided', 'unrepresentative', 'optional', ..."""
    cases: int | None = None
    needed: int | None = None
    needed_why: str | None = None
    """Why a required slice needs more labels than the policy's `min_reviewed` (the approval bound needs them),
    in words; null when it needs just that."""
    reviewed: int = 0
    coverage: Number | None = None
    approved: int = 0
    rejected: int | None = None
    disagreements: int | None = None
    approval: Number | None = None
    """Approval weighted by automatic outcome (what the gate compares with `min_approval`)."""
    approval_bounds: list[Number] | None = None
    effective_n: Number | None = None
    confidence: Number | None = None
    approval_sample: Number | None = None
    min_approval: Number | None = None
    kappa: Number | None = None
    """Cohen's kappa between the automatic outcome and the reviewers."""
    kappa_agreement: Number | None = None
    """The raw share of reviewed cases where the automatic outcome (pass or not) and the label agree."""
    kappa_prevalence: Number | None = None
    """The share of those ratings, both pooled, that are pass or approve: near 0 or 1 it keeps kappa near 0."""
    awaiting_adjudication: int = 0
    """Cases whose reviewers disagree and that no adjudicator labelled yet (pending with `labels_per_case: 2`)."""
    unlabelled_drawn: int = 0
    """Rows of the review sample in the slice no label covers (`record.review_cover`): review is pending."""
    reviewer_agreement: dict[str, Any] | None = None
    """First against second reviewer on the double-labelled cases: cases, agreed, agreement, kappa, table."""


class JudgeCalibration(_Model):
    """A judge criterion's agreement with the reviewers (over the run, or one slice)."""

    labels: int = 0
    agree: int | None = None
    agreement: Number | None = None
    agreement_sample: Number | None = None
    agreement_lower: Number | None = None
    effective_labels: Number | None = None
    kappa: Number | None = None
    kappa_prevalence: Number | None = None
    """The share of the judge's and the reviewers' verdicts, pooled, that are pass or approve."""
    confusion: dict[str, int] = {}
    unlabelled_cell: Any = None
    calibrated: bool | None = None
    """Absent on a slice's row."""
    why: str | None = None
    slices: dict[str, JudgeCalibration] = {}


class JudgePairwise(_Model):
    """A pairwise judge criterion's comparisons with the baseline run, by outcome."""

    compared: int = 0
    win: int = 0
    loss: int = 0
    tie: int = 0
    inconsistent: int = 0
    not_judged: int = 0
    order_inconsistency_rate: Number | None = None
    consistent: bool = False


class JudgeSection(_Model):
    """The LLM judge: its calls, errors, own tokens and cost (never in the model's figures), and calibration."""

    model: str | None = None
    backend: str | None = None
    fingerprint: str | None = None
    cases: int = 0
    """Judge-scored cases."""
    judged: int = 0
    calls: int = 0
    cached: int = 0
    errors: dict[str, int] = {}
    tokens: dict[str, int] = {}
    """{'input', 'output'}: the judge's own tokens."""
    cost_usd: Number | None = None
    judge_error_rate: dict[str, Any] | None = None
    policy: dict[str, Any] | None = None
    calibration: dict[str, JudgeCalibration] = {}
    pairwise: dict[str, JudgePairwise] = {}
