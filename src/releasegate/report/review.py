"""The terminal table of where human review stands, one row per slice."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict
from rich import box

from ..model_base import Model
from ..record.capacity_sweep import Number
from ..record.report_sections import ReviewRow
from ..review.agreement import agreement_words, kappa_words
from .formatting import format_value
from .paired_models import read_section
from .terminal import Col, FitTable

__all__ = ["review_table", "review_notes", "kappa_cell"]


def _read(rows: dict[str, dict[str, Any]] | dict[str, ReviewRow]) -> dict[str, ReviewRow]:
    return {name: row if isinstance(row, ReviewRow) else read_section(ReviewRow, row, f"review.{name}")
            for name, row in rows.items()}


def review_table(rows: dict[str, dict[str, Any]] | dict[str, ReviewRow]) -> FitTable:
    """The review summary, one row per slice, whole at any width (see `FitTable`): labels needed and done,
    approved and rejected as counted, and the approval weighted by outcome the gate uses."""
    # approval is post-stratified (each label weighs the cases of its automatic outcome it stands for): its header
    # says so, beside the plain counts, so that 0.38 next to "3 of 13 approved" reads as what it is
    columns = {"status": "status", "cases": "cases", "needed": "need", "reviewed": "done", "approved": "approved",
               "rejected": "rejected", "approval": "approval weighted by outcome", "kappa": "kappa"}
    cells = [
        [f"{name} *" if row.required and name != "all" else name,
         *(row.status if c == "status" else _kappa_cell(row) if c == "kappa" else format_value(getattr(row, c))
           for c in columns)]
        for name, row in _read(rows).items()
    ]
    return FitTable("human review", [Col("slice (* required)", "left"), Col("status", "left"),
                                     *(Col(h) for h in list(columns.values())[1:])], cells, box=box.SIMPLE_HEAD)


def review_notes(rows: dict[str, dict[str, Any]] | dict[str, ReviewRow]) -> list[str]:
    """Lines under the table: how far the reviewers agree with each other, and the disagreements waiting for an
    adjudicator (`review export RUN_DIR --adjudication`)."""
    row = _read(rows).get("all")
    if row is None:
        return []
    notes = [words] if (words := agreement_words(row.reviewer_agreement)) else []
    if row.awaiting_adjudication:
        notes.append(f"{row.awaiting_adjudication} disagreement(s) await adjudication: releasegate review export "
                     "RUN_DIR --adjudication")
    return notes


def kappa_cell(row: dict[str, Any] | ReviewRow) -> str:
    """A review row's kappa with the raw agreement and the prevalence that explain it: '0.00 (94.8% agree, 97%
    pass)'; '—' with no reviewed case."""
    return _kappa_cell(row if isinstance(row, ReviewRow) else _Kappa.model_validate(row))


def _kappa_cell(row: ReviewRow | _Kappa) -> str:
    if row.kappa is None and row.kappa_agreement is None:
        return "—"
    return kappa_words(row.kappa, row.kappa_agreement, row.kappa_prevalence, short=True)


class _Kappa(Model):
    """A review row's kappa figures (what `kappa_cell` reads of a row given as JSON)."""

    model_config = ConfigDict(extra="ignore")

    kappa: Number | None = None
    kappa_agreement: Number | None = None
    kappa_prevalence: Number | None = None
