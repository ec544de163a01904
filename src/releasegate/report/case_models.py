"""A case's checks and reviews as the per-case tables read them (`gate.case_detail` makes them, report.json's
`failing_cases` keeps them): read once, then by attribute."""

from __future__ import annotations

from pydantic import ConfigDict

from ..model_base import Model

__all__ = ["CaseCheck", "CaseReview"]


class _Model(Model):
    model_config = ConfigDict(extra="allow")  # a newer report read by an older renderer keeps what it does not know


class CaseCheck(_Model):
    """One check of a case (`case_detail.check_results`)."""

    check: str
    """'answer', 'format: json' or 'forbidden'."""
    passed: bool | None
    """None: the check could not be made."""
    detail: str = ""


class CaseReview(_Model):
    """A reviewer's current label of a case (`case_detail.case_reviews`)."""

    reviewer: str
    label: str
    """'approve' or 'reject'."""
    reason: str | None = None
