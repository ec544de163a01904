"""One row of the review summary (`review.summary`): where human review stands on a slice, typed.

Fields are declared in the order report.json `review` has always written them, and `as_json` gives that dict. A
row read back from a report (`stored_row`) is taken field by field: an older report lacks the newer ones (they
keep their defaults), a newer one may hold keys this version does not know (left out, never a failure).
"""

from __future__ import annotations

from dataclasses import asdict, field, fields
from typing import Any

from ..data_classes import dataclass

__all__ = ["SliceRow", "stored_row", "stored_rows"]


@dataclass
class SliceRow:
    """Where human review stands on one slice ('all': the whole run); the module docstring of `review.summary`
    says what each field means."""

    required: bool = False
    status: str = ""
    cases: int = 0
    needed: int = 0
    needed_why: str | None = None
    reviewed: int = 0
    coverage: float | None = None
    approved: int = 0
    rejected: int = 0
    disagreements: int = 0
    approval: float | None = None
    approval_bounds: list[float] | None = None
    effective_n: float | None = None
    confidence: float = 0.95
    approval_sample: float | None = None
    min_approval: float | None = None
    kappa: float | None = None
    kappa_agreement: float | None = None
    kappa_prevalence: float | None = None
    unlabelled_outcomes: dict[str, int] = field(default_factory=dict)
    unlabelled_drawn: int = 0
    awaiting_adjudication: int = 0
    reviewer_agreement: dict[str, Any] | None = None
    """`agreement.reviewer_agreement`: free of any model here, as report.json keeps it."""

    def as_json(self) -> dict[str, Any]:
        """The row as report.json `review` holds it."""
        return asdict(self)


_FIELDS = frozenset(f.name for f in fields(SliceRow))


def stored_row(row: dict[str, Any]) -> SliceRow:
    """A row of a report's `review` section (`SliceRow.as_json`, possibly of an older or newer version)."""
    return SliceRow(**{name: value for name, value in row.items() if name in _FIELDS})


def stored_rows(review: dict[str, dict[str, Any]]) -> dict[str, SliceRow]:
    """Every row of a report's `review` section, by slice name."""
    return {name: stored_row(row) for name, row in review.items()}
