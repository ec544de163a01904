"""Human labels: an append-only `reviews.jsonl` in the run directory, one LabelEdit per line.

Nothing is ever rewritten: a corrected import appends new edits, and the latest edit of a reviewer for a case is
that reviewer's label. The automatic scores in records.jsonl are never touched.

Several reviewers may label a case. Disagreement rule: a case counts as approved only when every reviewer who
labelled it approved it; one rejection makes it rejected (the conservative reading for a release gate). With
double labelling (`review.labels_per_case: 2`) a case has a label once two reviewers agree on it; a case they
disagree on waits for an adjudicator. An adjudicator's label (from the adjudication CSV) decides its case,
whatever the reviewers said.
"""

from __future__ import annotations

import io
import os
import unicodedata
from typing import Any, Final, Literal

from pydantic import field_validator

from ..border.files import journal_lines, open_append, open_regular
from ..border.limits import JOURNAL_MAX_BYTES
from ..data_classes import dataclass
from ..errors import InputError
from ..model_base import Model
from .records import RunDir

__all__ = [
    "APPROVE", "REJECT", "Label", "LABEL_WORDS", "LabelEdit", "CaseLabel", "REVIEWS_FILE",
    "parse_label", "parse_forbidden", "read_labels", "append_labels", "current_labels", "case_labels", "reviewer_key",
    "reviewer_rounds", "awaiting_adjudication", "reviewer_pairs",
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
_REVIEWS_MAX = JOURNAL_MAX_BYTES
"""Bytes reviews.jsonl may hold when read back (millions of labels fit many times over)."""


def parse_forbidden(cell: str) -> list[str] | None:
    """The review CSV's `forbidden` cell: blank -> None (not said), 'none' -> [], else its comma-separated
    categories."""
    words = [w.strip() for w in cell.split(",") if w.strip()]
    if not words:
        return None
    return [] if [w.casefold() for w in words] == ["none"] else sorted(set(words))


class LabelEdit(Model):
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
    adjudication: bool = False
    """True: an adjudicator's label on a case its reviewers disagreed on (a row of the adjudication CSV); it
    decides the case."""
    forbidden: list[str] | None = None
    """The forbidden categories the reviewer says the output falls under ([]: none, the CSV's 'none'); None: not
    said (the column left blank). What a guard model's error is measured against."""
    signed_by: str | None = None
    """The reviewer the rubric names (`review.reviewers`) whose signature over the labels file was verified at
    import; None: not signed."""
    labels_sha256: str | None = None
    """sha256 of the signed labels file, whose envelope the run keeps (review_signatures/<sha256>.json)."""

    @field_validator("forbidden", mode="before")
    @classmethod
    def _forbidden_cell(cls, value: Any) -> Any:
        return parse_forbidden(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class CaseLabel:
    """The human verdict on one case after the disagreement rule."""

    case_id: str
    label: str
    """'reject' if any reviewer rejected the case, else 'approve'."""
    reviewers: tuple[str, ...]
    approvals: int
    rejections: int
    adjudicated: bool = False
    """The label is an adjudicator's, given on the reviewers' disagreement."""

    @property
    def disagreement(self) -> bool:
        """The reviewers (not the adjudicator) gave both labels."""
        return self.approvals > 0 and self.rejections > 0


def parse_label(text: str) -> Label | None:
    """'Approve ', 'yes', '1' -> 'approve'; 'REJECT', 'no' -> 'reject'; anything else -> None."""
    return LABEL_WORDS.get(text.strip().casefold())


def reviewer_key(name: str) -> str:
    """Who a reviewer name stands for: the one place reviewer names are compared or counted. Unicode NFKC, case
    folded, invisible characters (category Cf: a zero-width space, U+FEFF, a bidi mark; the other default-ignorable
    code points, `_IGNORABLE`) removed and runs of spaces
    made one, so 'Alice ', 'ALICE', 'Ａｌｉｃｅ' and 'Al\u200bice' are one reviewer, never a second one."""
    text, before = name, None
    for _ in range(4):  # folding may leave text that NFKC changes again: repeat until it settles
        if text == before:
            break
        before = text
        text = " ".join(unicodedata.normalize("NFKC", "".join(c for c in text if not _invisible(c))).casefold().split())
    return text


_IGNORABLE = frozenset(map(chr, (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0,
                                 *range(0x180B, 0x1810), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0))))
"""Characters that show as nothing outside category Cf: Unicode's other default-ignorable code points (the
combining grapheme joiner, variation selectors, Mongolian free variation selectors, Hangul and Khmer fillers) and
the blank braille pattern."""


def _invisible(char: str) -> bool:
    return unicodedata.category(char) == "Cf" or char in _IGNORABLE


def read_labels(run: RunDir) -> list[LabelEdit]:
    """Every edit in the run's reviews.jsonl, oldest first; none when nothing was imported."""
    path = run.path / REVIEWS_FILE
    if not path.is_file():
        return []
    edits = []
    with open_regular(path, what="reviews.jsonl", max_bytes=_REVIEWS_MAX) as fh:
        for number, raw in journal_lines(fh, path=path, what="reviews.jsonl"):
            line = raw.decode("utf-8", errors="surrogateescape")  # bytes not UTF-8: a corrupt line
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


def current_labels(edits: list[LabelEdit], *, adjudication: bool = False) -> dict[tuple[str, str], LabelEdit]:
    """(case id, reviewer key) -> that reviewer's latest edit for the case, in the order of each one's first edit:
    the reviewers' labels, or with `adjudication` the adjudicators'."""
    return {(e.case_id, reviewer_key(e.reviewer)): e for e in edits if e.adjudication == adjudication}


def reviewer_rounds(edits: list[LabelEdit]) -> dict[str, list[LabelEdit]]:
    """Case id -> its reviewers' current labels (adjudicators' aside), the first reviewer of the case first."""
    per_case: dict[str, list[LabelEdit]] = {}
    for edit in current_labels(edits).values():
        per_case.setdefault(edit.case_id, []).append(edit)
    return per_case


def case_labels(edits: list[LabelEdit], labels_per_case: int = 1) -> dict[str, CaseLabel]:
    """Case id -> the human verdict of every case that has one: the latest adjudicator's label when there is one;
    else by the disagreement rule (any rejection rejects) once `labels_per_case` reviewers labelled it, except
    that with two or more labels per case a disagreement has no verdict until it is adjudicated."""
    adjudicated = {e.case_id: e for e in edits if e.adjudication}  # the latest adjudicator's label wins
    out = {}
    for case_id, labels in reviewer_rounds(edits).items():
        rejections = sum(e.label == REJECT for e in labels)
        label: str = REJECT if rejections else APPROVE
        if case_id in adjudicated:
            label = adjudicated[case_id].label
        elif len(labels) < labels_per_case or (labels_per_case > 1 and 0 < rejections < len(labels)):
            continue  # a second label, or an adjudicator's, still missing
        out[case_id] = CaseLabel(
            case_id=case_id, label=label, reviewers=tuple(sorted(e.reviewer for e in labels)),
            approvals=len(labels) - rejections, rejections=rejections, adjudicated=case_id in adjudicated,
        )
    return out


def awaiting_adjudication(edits: list[LabelEdit]) -> list[str]:
    """Case ids whose reviewers disagree and that no adjudicator labelled yet: with two or more labels per case
    they have no verdict (review is pending); with one, the disagreement rule decided them (rejected), and an
    adjudicator may still."""
    adjudicated = {e.case_id for e in edits if e.adjudication}
    return [case_id for case_id, labels in reviewer_rounds(edits).items()
            if case_id not in adjudicated and len({e.label for e in labels}) > 1]


def reviewer_pairs(edits: list[LabelEdit]) -> dict[str, tuple[str, str]]:
    """Case id -> (first reviewer's label, second reviewer's label) for every case at least two reviewers labelled:
    what reviewer-reviewer agreement (Cohen's kappa) is counted on, before any adjudication."""
    return {case_id: (labels[0].label, labels[1].label)
            for case_id, labels in reviewer_rounds(edits).items() if len(labels) >= 2}
