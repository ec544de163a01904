"""report.csv: one row per case, for a spreadsheet.

Cells are untrusted text: one starting with = + - @ tab or CR is prefixed with an apostrophe, so a spreadsheet
shows it as text instead of evaluating it as a formula (CSV injection); control and bidi characters (ESC and OSC
sequences for a terminal that prints the file, NUL, C1, overrides) are shown as visible stand-ins (`inert`), tab,
LF and CR kept. A cell is cut at 32,000 characters (spreadsheets hold 32,767): records.jsonl has the full output.
"""

from __future__ import annotations

import csv
import io
import json

from ..text import inert
from .view import CaseRow, RunView

__all__ = ["render_csv", "COLUMNS", "neutralise"]

COLUMNS = (
    "case_id", "suite", "tags", "passed", "answer", "format", "forbidden", "why", "error", "output",
    "ttft_ms", "tpot_ms", "e2e_ms", "input_tokens", "output_tokens",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CELL_CHARS = 32_000  # spreadsheets cap a cell at 32,767 characters


def render_csv(view: RunView) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)  # RFC 4180 line ends, so a field holding a lone CR is quoted too
    writer.writerow(COLUMNS)
    for row in view.cases():
        writer.writerow([_cell(v) for v in _values(row)])
    return buf.getvalue()


def neutralise(text: str) -> str:
    """Text a spreadsheet will not evaluate as a formula."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def _values(row: CaseRow) -> list:
    check = {key: ("pass" if ok else "fail") for key, ok in row.checks.items()}
    return [
        row.case_id, row.suite, json.dumps(row.tags, ensure_ascii=False, sort_keys=True) if row.tags else "",
        "pass" if row.passed else "fail", check.get("answer", ""), check.get("format", ""), check.get("forbidden", ""),
        "; ".join(row.why), row.error or "", row.output if row.output is not None else "",
        row.ttft_ms, row.tpot_ms, row.e2e_ms, row.input_tokens, row.output_tokens,
    ]


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return round(value, 3)  # numbers we measured stay numbers
    if isinstance(value, int):
        return value
    return neutralise(inert(value)[:_CELL_CHARS])
