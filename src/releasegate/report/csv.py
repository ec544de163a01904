"""report.csv: one row per case, for a spreadsheet.

Cells are untrusted text: an apostrophe goes before = + - @ tab or CR wherever a cell could begin under any
common separator (`spreadsheet.neutralise`), so a spreadsheet shows text instead of evaluating a formula (CSV
injection); control and bidi characters (ESC and OSC sequences for a terminal that prints the file, NUL, C1,
overrides) are shown as visible stand-ins (`inert`), tab, LF and CR kept. A cell is cut at 32,000 characters (spreadsheets hold 32,767): records.jsonl has the full output.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from ..record.gate_report import GateReport
from ..spreadsheet import csv_rows, neutralise
from ..text import inert
from .baseline_section import baseline_line
from .case_models import CaseCheck, CaseReview
from .formatting import latency_source_text
from .stability_section import STABILITY_COLUMNS, case_stability
from .view import CaseRow, RunView

__all__ = ["render_csv", "csv_chunks", "COLUMNS", "neutralise"]

COLUMNS = (
    "case_id", "suite", "tags", "passed", "answer", "format", "forbidden", "why", "error", "output",
    "ttft_ms", "tpot_ms", "e2e_ms", "input_tokens", "output_tokens",
    "input", "expected", "error_message", "checks", "reviews", "latency_from", "judged_by", "rubric_sha256",
    "baseline",
)
"""The columns of report.csv; the case's input, expected answer, check details and reviews come last, so a
sheet that reads the earlier columns by position still reads them."""
_CELL_CHARS = 32_000  # spreadsheets cap a cell at 32,767 characters


def render_csv(view: RunView) -> str:
    """report.csv: the header and one row per case."""
    return "".join(csv_chunks(view))


def csv_chunks(view: RunView) -> Iterator[str]:
    """report.csv a row at a time (`render_csv`): the file is written as the rows come, never held whole."""
    by = [*_judged_by(view.gate_report), baseline_line(view.gate_report.comparison) or ""]  # the same in every row
    source = latency_source_text(view.gate_report, slices=True)  # every case's TTFT, TPOT and E2E: the quality cases'
    stable = case_stability(view.gate_report)  # a run with repeats or gated under load: its columns at the end
    more = STABILITY_COLUMNS if view.gate_report.stability is not None else ()
    rows = ([_cell(v) for v in [*_values(row), source, *by, *(stable.get(row.case_id, [""] * len(more)) if more else [])]]
            for row in view.cases())
    return csv_rows(itertools.chain([COLUMNS + more], rows), cell_limit=_CELL_CHARS)  # rows one at a time


def _judged_by(report: GateReport) -> list[Any]:
    """The last two cells of every row: the rubric file that judged the case's pass/fail ('what-if: FILE' for a
    what-if judgment, not the run's rubric) and its sha256; empty for a report that predates them."""
    by = report.judged_by
    if not by:
        return ["", ""]
    return [f"what-if: {by.file}" if by.whatif else by.file, by.sha256]


def _values(row: CaseRow) -> list[Any]:
    check = {key: ("pass" if ok else "fail") for key, ok in row.checks.items()}
    return [
        row.case_id, row.suite, json.dumps(row.tags, ensure_ascii=False, sort_keys=True) if row.tags else "",
        "pass" if row.passed else "fail", check.get("answer", ""), check.get("format", ""), check.get("forbidden", ""),
        "; ".join(row.why), row.error or "", row.output if row.output is not None else "",
        row.ttft_ms, row.tpot_ms, row.e2e_ms, row.input_tokens, row.output_tokens,
        row.input, row.expected, row.error_message or "", "\n".join(_check_text(r) for r in row.results),
        "\n".join(_review_text(r) for r in row.reviews),
    ]


def _check_text(result: CaseCheck) -> str:
    """'format: json: fail (not JSON)', one line per check."""
    verdict = "unknown" if result.passed is None else ("pass" if result.passed else "fail")
    return f"{result.check}: {verdict}" + (f" ({result.detail})" if result.detail else "")


def _review_text(review: CaseReview) -> str:
    """'reject by alice: wrong intent', one line per reviewer."""
    return f"{review.label} by {review.reviewer}" + (f": {review.reason}" if review.reason else "")


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return round(value, 3)  # numbers we measured stay numbers
    if isinstance(value, int):
        return value
    return inert(value)  # csv_text neutralises every text cell and cuts it
