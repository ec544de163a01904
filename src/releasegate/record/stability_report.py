"""report.json `stability`: the repeated draws case by case and the answers that changed under load."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..model_base import Model

__all__ = ["StabilitySection", "DrawRow", "FlipRow"]


class _Model(Model):
    model_config = ConfigDict(extra="allow")  # a newer report read by an older renderer keeps what it does not know


class DrawRow(_Model):
    """One repeated case."""

    case_id: str
    draws: int
    """Draws the journal holds for the case."""
    planned: int
    """Draws the run planned for it (its suite's `repeats`)."""
    modal_answer: str | None = None
    """The answer most draws gave (after normalisation; shown as the first draw that gave it)."""
    agreement: float
    """The share of draws equal to the modal answer."""
    failing_draws: list[int]
    """The draws (0 = the case's record in records.jsonl) whose answer check failed."""


class FlipRow(_Model):
    """A case whose answer under load differs from its answer alone."""

    case_id: str
    alone: str | None = None
    """The quality phase's answer."""
    under_load: str | None = None
    """The first of its load answers that differs."""
    changed: int
    """How many of its load answers differ."""
    asked: int
    """How many times the load phase asked it."""


class StabilitySection(_Model):
    """Present when the run repeats its cases (`generation.repeats`) or the rubric gates answers under load."""

    draws: list[DrawRow]
    """Cases with a failing or disagreeing draw first (at most 1,000)."""
    draw_problem: str | None = None
    """What keeps the draws from being counted as planned (missing, cached, foreign draws), or null."""
    flips: list[FlipRow]
    """The cases whose answer changed under load (at most 1,000)."""
    load_answers_left_out: int = 0
    """Load requests of no case of the run (or another input): never counted."""
    steps: list[dict[str, Any]] | None = None
    """A capacity sweep's steps, each step's answers scored as the quality cases are: {step, requests, accuracy,
    format_compliance, forbidden_rate, load_flip_rate}; absent without a sweep."""
