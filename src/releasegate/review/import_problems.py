"""Every problem of a labels file, found in one pass and reported within bounds: the first MAX_LISTED named with
their line and spreadsheet row, the rest counted, so a file with a million bad rows is one screen, not a million
lines, and a reviewer fixes them all before the next import."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from ..errors import InputError
from ..record.review_labels import LabelEdit, reviewer_key

__all__ = ["Problem", "Problems", "ReviewImportError", "MAX_LISTED", "forbidden_problems", "adjudicator_problem"]

MAX_LISTED = 10
"""Problems named one by one; the rest are counted."""


class Problem(NamedTuple):
    """One problem: the line the row starts on (a text editor's), the message, and the row as a spreadsheet
    shows it (the header is row 1; a cell of several lines makes line and row differ)."""

    line: int | None
    message: str
    row: int | None = None

    def where(self, file: str) -> str:
        at = f"{file}:{self.line}" if self.line else file
        return f"{at} (spreadsheet row {self.row})" if self.row is not None and self.row != self.line else at


class Problems:
    """The problems of a file as they are found: the first MAX_LISTED kept, the rest only counted."""

    def __init__(self) -> None:
        self.listed: list[Problem] = []
        self.more = 0

    def add(self, line: int | None, message: str, row: int | None = None) -> None:
        if len(self.listed) < MAX_LISTED:
            self.listed.append(Problem(line, message, row))
        else:
            self.more += 1

    def __bool__(self) -> bool:
        return bool(self.listed)

    def __len__(self) -> int:
        return len(self.listed) + self.more


class ReviewImportError(InputError):
    """A labels file with problems: `problems` holds the first MAX_LISTED (line, message[, row]), the first one is
    the error's line; `more` counts those not listed."""

    def __init__(self, file: Path, problems: Sequence[tuple[int | None, str]] | Problems) -> None:
        if isinstance(problems, Problems):
            self.problems, self.more = problems.listed, problems.more
        else:
            self.problems, self.more = [Problem(*p) for p in problems], 0
        first = self.problems[0]
        others = len(self.problems) - 1
        told = f"; {others} more problem(s) listed above" if others else ""
        told += f"; {self.more} more not listed" if self.more else ""
        row = f"spreadsheet row {first.row}" if first.row is not None and first.row != first.line else None
        super().__init__(f"{first.message}{told}; nothing was imported", file=file, line=first.line, row=row)

    @property
    def count(self) -> int:
        return len(self.problems) + self.more

    def report_lines(self) -> list[str]:
        """Every listed problem as 'file:line (spreadsheet row N): message', then how many more there are."""
        lines = [f"{p.where(self.file or '')}: {p.message}" for p in self.problems]
        if self.more:
            lines.append(f"{self.file}: {self.more} more problem(s) not listed (the first {MAX_LISTED} are above); "
                         "nothing was imported")
        return lines


def forbidden_problems(edit: LabelEdit, categories: tuple[str, ...] | None) -> list[str]:
    """Forbidden cells naming what the rubric does not: a '-' meant as none would count the output forbidden, a
    misspelt category or another separator a guard miss that never happened."""
    if categories is None:
        return []
    return [f"{edit.review_id}: forbidden {c!r} is not a forbidden category of the rubric (write 'none', or "
            f"categories separated by commas: {', '.join(categories) or 'the rubric has none'})"
            for c in (edit.forbidden or ()) if c not in categories]


def adjudicator_problem(edit: LabelEdit, reviewers: list[LabelEdit]) -> str | None:
    """Why an adjudicator's label cannot be taken, or None: its reviewers must disagree, and it is none of them."""
    if len({e.label for e in reviewers}) < 2:
        return f"{edit.review_id}: its reviewers do not disagree (nothing to adjudicate); label it in a review CSV"
    if reviewer_key(edit.reviewer) in {reviewer_key(e.reviewer) for e in reviewers}:
        return f"{edit.review_id}: {edit.reviewer} labelled this case as a reviewer; the adjudicator must be someone else"
    return None
