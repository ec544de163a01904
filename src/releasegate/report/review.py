"""The terminal table of where human review stands, one row per slice."""

from __future__ import annotations

from typing import Any

from rich import box

from ..review.agreement import agreement_words, kappa_words
from .formatting import format_value
from .terminal import Col, FitTable

__all__ = ["review_table", "review_notes", "kappa_cell"]


def review_table(rows: dict[str, dict[str, Any]]) -> FitTable:
    """The review summary, one row per slice, whole at any width (see `FitTable`): labels needed and done,
    approved and rejected as counted, and the approval weighted by outcome the gate uses."""
    # approval is post-stratified (each label weighs the cases of its automatic outcome it stands for): its header
    # says so, beside the plain counts, so that 0.38 next to "3 of 13 approved" reads as what it is
    columns = {"status": "status", "cases": "cases", "needed": "need", "reviewed": "done", "approved": "approved",
               "rejected": "rejected", "approval": "approval weighted by outcome", "kappa": "kappa"}
    cells = [
        [f"{name} *" if row["required"] and name != "all" else name,
         *(row[c] if c == "status" else kappa_cell(row) if c == "kappa" else format_value(row[c]) for c in columns)]
        for name, row in rows.items()
    ]
    return FitTable("human review", [Col("slice (* required)", "left"), Col("status", "left"),
                                     *(Col(h) for h in list(columns.values())[1:])], cells, box=box.SIMPLE_HEAD)


def review_notes(rows: dict[str, dict[str, Any]]) -> list[str]:
    """Lines under the table: how far the reviewers agree with each other, and the disagreements waiting for an
    adjudicator (`review export RUN_DIR --adjudication`)."""
    row = rows.get("all") or {}
    notes = [words] if (words := agreement_words(row.get("reviewer_agreement"))) else []
    if row.get("awaiting_adjudication"):
        notes.append(f"{row['awaiting_adjudication']} disagreement(s) await adjudication: releasegate review export "
                     "RUN_DIR --adjudication")
    return notes


def kappa_cell(row: dict[str, Any]) -> str:
    """A review row's kappa with the raw agreement and the prevalence that explain it: '0.00 (94.8% agree, 97%
    pass)'; '—' with no reviewed case."""
    if row.get("kappa") is None and row.get("kappa_agreement") is None:
        return "—"
    return kappa_words(row.get("kappa"), row.get("kappa_agreement"), row.get("kappa_prevalence"), short=True)
