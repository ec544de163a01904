"""Human labels: an append-only `reviews.jsonl` in the run directory, one LabelEdit per line.

Nothing is ever rewritten: a corrected import appends new edits, and the latest edit of a reviewer for a case is
that reviewer's label. The automatic scores in records.jsonl are never touched.

Several reviewers may label a case. Disagreement rule: a case counts as approved only when every reviewer who
labelled it approved it; one rejection makes it rejected (the conservative reading for a release gate).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel

from ..border.files import open_append, open_regular
from ..errors import InputError
from .records import RunDir

__all__ = [
    "APPROVE", "REJECT", "Label", "LABEL_WORDS", "LabelEdit", "CaseLabel", "REVIEWS_FILE",
    "parse_label", "read_labels", "append_labels", "current_labels", "case_labels", "reviewer_key",
]

Label = Literal["approve", "reject"]
"""A stored human label."""
APPROVE: Final = "approve"
REJECT: Final = "reject"
LABEL_WORDS: dict[str, Label] = {
    **dict.fromkeys(("approve", "approved", "pass", "ok", "yes", "y", "true", "1"), APPROVE),
    **dict.fromkeys(("reject", "rejected", "fail", "no", "n", "false", "0"), REJECT),
}
"""Words accepted in the CSV's label column (any case, surrounding spaces ignored) -> the stored label."""
REVIEWS_FILE = "reviews.jsonl"
_REVIEWS_MAX = 4 * 1024**3
"""Bytes reviews.jsonl may hold when read back (millions of labels fit many times over)."""


class LabelEdit(BaseModel):
    """One human label as imported; later edits by the same reviewer for the same case replace it."""

    review_id: str
    """The review row ('R-...') the label was given on."""
    case_id: str
    """The case labelled."""
    reviewer: str
    """Who labelled it, as written in the CSV (or given with --reviewer)."""
    label: Label
    """'approve': the output is acceptable; 'reject': it is not. See LABEL_WORDS for the accepted spellings."""
    reason: str = ""
    """The reviewer's reason, free text (may be empty)."""
    time: str
    """ISO 8601 UTC time of the import."""
    output_hash: str
    """'sha256:<hex>' of the output the reviewer saw; equal to the run's output (checked at import)."""
    source: str
    """The CSV file the label came from (its name)."""
    source_line: int
    """The line of that file where the row starts."""


@dataclass(frozen=True)
class CaseLabel:
    """The human verdict on one case after the disagreement rule."""

    case_id: str
    label: str
    """'reject' if any reviewer rejected the case, else 'approve'."""
    reviewers: tuple[str, ...]
    approvals: int
    rejections: int

    @property
    def disagreement(self) -> bool:
        return self.approvals > 0 and self.rejections > 0


def parse_label(text: str) -> Label | None:
    """'Approve ', 'yes', '1' -> 'approve'; 'REJECT', 'no' -> 'reject'; anything else -> None."""
    return LABEL_WORDS.get(text.strip().casefold())


def reviewer_key(name: str) -> str:
    """Reviewer names compare without case and surrounding spaces ('Alice ' is 'alice')."""
    return " ".join(name.split()).casefold()


def read_labels(run: RunDir) -> list[LabelEdit]:
    """Every edit in the run's reviews.jsonl, oldest first; none when nothing was imported."""
    path = run.path / REVIEWS_FILE
    if not path.is_file():
        return []
    edits = []
    raw = open_regular(path, what="reviews.jsonl", max_bytes=_REVIEWS_MAX)
    with io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape") as fh:  # bytes not UTF-8: a corrupt line
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                edits.append(LabelEdit.model_validate_json(line))
            except ValueError as exc:
                if not line.endswith("\n"):
                    break  # a torn last line from an interrupted import
                raise InputError(f"corrupt label: {str(exc).splitlines()[0]}", file=path, line=number) from None
    return edits


def append_labels(run: RunDir, edits: list[LabelEdit]) -> None:
    """Append the edits in one write, flushed to disk."""
    if not edits:
        return
    with io.TextIOWrapper(open_append(run.path / REVIEWS_FILE, what=REVIEWS_FILE), encoding="utf-8") as fh:
        fh.write("".join(e.model_dump_json() + "\n" for e in edits))
        fh.flush()
        os.fsync(fh.fileno())


def current_labels(edits: list[LabelEdit]) -> dict[tuple[str, str], LabelEdit]:
    """(case id, reviewer key) -> that reviewer's latest edit for the case."""
    return {(e.case_id, reviewer_key(e.reviewer)): e for e in edits}


def case_labels(edits: list[LabelEdit]) -> dict[str, CaseLabel]:
    """Case id -> the human verdict, by the disagreement rule (any rejection rejects)."""
    per_case: dict[str, list[LabelEdit]] = {}
    for edit in current_labels(edits).values():
        per_case.setdefault(edit.case_id, []).append(edit)
    out = {}
    for case_id, labels in per_case.items():
        rejections = sum(e.label == REJECT for e in labels)
        out[case_id] = CaseLabel(
            case_id=case_id, label=REJECT if rejections else APPROVE, reviewers=tuple(sorted(e.reviewer for e in labels)),
            approvals=len(labels) - rejections, rejections=rejections,
        )
    return out
