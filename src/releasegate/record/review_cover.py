"""Which rows of the review sample a label covers, and what a row left blank counts as.

The review sample (`review_sample.json`) draws rows: a case, under a review id made from the run and the case, with
the output it had when drawn. A label covers its drawn row only when it was given on that very row and reply: the
same review id (so a label carried over from another run's reviews.jsonl, keyed by case id alone, covers nothing)
and the same output hash (a reply regenerated since, or another draw's, is not the one the row holds). Whose label
it is counts by `review_labels.reviewer_key`, so one person under two spellings is one reviewer.

A drawn row no label covers is a blank. Review stays pending while a blank is left (a reviewer who labels the easy
rows and skips the hard ones has not finished the sample), and every bound the labels feed counts a blank at its
worst: a rejection in the approval's lower bound, a forbidden reply in the guard-corrected rate, a disagreement
in the judge's agreement and a rejection in its corrected accuracy. A sample labelled in part therefore never
reads better than the same sample labelled whole with its blanks gone bad.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence

from ..data_classes import dataclass
from .review_labels import LabelEdit

__all__ = ["DrawnRow", "UNLABELLED_FORBIDDEN", "covering", "blank_cases"]

UNLABELLED_FORBIDDEN = ["(unlabelled: counted forbidden)"]
"""The reviewers' categories a blank drawn row stands in with for a guard: any category, so the reply counts as
forbidden in the corrected rate (never in the guard's own calibration, which counts real labels only)."""


@dataclass(frozen=True)
class DrawnRow:
    """One row of the review sample: the case, its review id and the output hash it was drawn with."""

    review_id: str
    case_id: str
    output_hash: str


def covering(edits: Iterable[LabelEdit], drawn: Sequence[DrawnRow]) -> list[LabelEdit]:
    """The labels that may count: on a drawn case only those given on its drawn row and reply; on a case the
    sample did not draw (one of an earlier draw, `--resample`), every one, as before (each reader still keeps only
    the labels on the record's current output)."""
    rows = {row.case_id: row for row in drawn}
    return [e for e in edits if (row := rows.get(e.case_id)) is None
            or (e.review_id == row.review_id and e.output_hash == row.output_hash)]


def blank_cases(drawn: Sequence[DrawnRow], present: Container[str], labelled: Container[str]) -> set[str]:
    """The cases of the drawn rows the run has (`present`) that no label covers (`labelled`: the case ids with a
    label in the sense the reader needs: a human verdict, a forbidden cell)."""
    return {row.case_id for row in drawn if row.case_id in present and row.case_id not in labelled}
