"""The adjudication round: the cases whose reviewers disagree, exported for one more person, whose label decides.

`review export RUN_DIR --adjudication` writes `review_adjudication.csv`: the review CSV's columns (the automatic
verdict only with `show_auto`), `labels_given` (each reviewer's label and reason, one line each, without their
names: the adjudicator weighs the reasons, not the people) and `round` ('adjudication' in every row, which tells
import that the labels are an adjudicator's). Import takes an adjudicator's label only on a case whose reviewers
disagree and only from someone who is none of them; it then decides the case (`record.review_labels`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..border.outputs import write_output_file
from ..errors import InputError
from ..record.records import CaseRecord
from ..record.review_labels import LabelEdit, awaiting_adjudication, reviewer_rounds
from ..text import inert
from .csv_io import ADJUDICATION, ROUND, case_cells, instructions_path, review_columns, write_csv
from .sampler import ReviewSample

__all__ = ["export_adjudication_csv", "adjudication_columns"]

GIVEN = "labels_given"


def adjudication_columns(show_auto: bool) -> tuple[str, ...]:
    """The review CSV's columns with the reviewers' labels and the round before the adjudicator's own three."""
    base = [c for c in review_columns(show_auto) if c not in ("label", "reason", "reviewer")]
    return (*base, GIVEN, ROUND, "label", "reason", "reviewer")


def export_adjudication_csv(path: Path, sample: ReviewSample, records: list[CaseRecord], scores: dict[str, dict[str, Any]],
                            edits: list[LabelEdit], *, run_dir: Path, show_auto: bool = False) -> list[Path]:
    """Write the adjudication CSV (the sampled cases whose reviewers disagree and no adjudicator labelled yet)
    and its instructions; return both paths. InputError when no case awaits adjudication."""
    exported = {item.output_hash for item in sample.items}
    current = [e for e in edits if e.output_hash in exported]  # labels on the outputs this sample shows
    awaiting, rounds = set(awaiting_adjudication(current)), reviewer_rounds(current)
    columns = adjudication_columns(show_auto)
    rows = []
    for cells in case_cells(sample, records, scores):
        if cells["case_id"] in awaiting:
            given = "\n".join(f"{e.label}: {e.reason}" if e.reason else e.label for e in rounds[cells["case_id"]])
            cells = {**cells, GIVEN: inert(given), ROUND: ADJUDICATION}  # reasons are typed text: shown, never obeyed
            rows.append([cells[c] for c in columns])
    if not rows:
        raise InputError("no case awaits adjudication: no reviewers disagree on a case without an adjudicator's label",
                         hint=f"releasegate review status {run_dir} says where review stands")
    write_csv(path, columns, rows)
    sidecar = instructions_path(path)
    write_output_file(sidecar, _instructions(path, sample.run_id, len(rows)).encode("utf-8"))
    return [path, sidecar]


def _instructions(path: Path, run_id: str, cases: int) -> str:
    return f"""\
Adjudication of releasegate run {run_id}: {cases} case(s) whose reviewers disagree.

1. Open {path.name} in Excel, LibreOffice Calc or Google Sheets (UTF-8, comma-separated, one row per case;
   LibreOffice: Character set 'Unicode (UTF-8)', 'Format quoted field as text' on, 'Detect special numbers' off).
2. Read input, expected and output, and labels_given: each reviewer's label and reason.
3. Fill in label (approve or reject), reason and reviewer (your name): your label decides the case. You must be
   none of its reviewers.
4. Do not edit the other columns; round says these are an adjudicator's labels. Save as CSV UTF-8 and import it:
     releasegate review import <run dir> {path.name}
"""
