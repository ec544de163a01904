"""report.summary.csv: the run as a spreadsheet reads it, one row per finding: the verdict, every criterion,
and every line of every gate feature's summary (report.json `sections`).

report.csv is one row per case, where a run-level figure has no row; this file holds them, so a sheet that
tracks releases reads each feature's figures (a guard's corrected rate, the stopping point, the leakage deltas)
beside the criteria without parsing report.json. Cells follow the one CSV rule (`spreadsheet.csv_text`).
"""

from __future__ import annotations

from ..record.gate_report import CriterionRow, GateReport
from ..spreadsheet import csv_text
from ..text import inert

__all__ = ["render_summary_csv", "SUMMARY_COLUMNS"]

SUMMARY_COLUMNS = ("kind", "part", "name", "value", "verdict", "detail")
"""kind: 'run', 'criterion' or 'section'; part: the rubric or the feature; name: the criterion or the line's
label; value: the measured value (a criterion's) or the line's text; detail: op and threshold, bound, reason."""


def render_summary_csv(report: GateReport) -> str:
    """report.summary.csv: the header, the run's verdict, one row per criterion, one per feature summary line."""
    rows: list[list[object]] = [["run", inert(report.rubric), inert(report.run_id), "",
                                 str(report.verdict), inert(report.verdict_reason)]]
    rows += [_criterion(c) for c in report.criteria]
    rows += [["section", inert(s.feature), inert(r.label), inert(r.value), "", inert(s.title)]
             for s in report.sections for r in s.rows]
    return csv_text([SUMMARY_COLUMNS, *rows])


def _criterion(row: CriterionRow) -> list[object]:
    value = "" if row.value is None else round(row.value, 6)
    detail = f"{row.metric} {row.op} {row.threshold:g}"
    if row.bounds:
        detail += " bounds " + ", ".join("-" if b is None else f"{b:.4g}" for b in row.bounds)
    if row.reason:
        detail += f"; {row.reason}"
    return ["criterion", row.origin or "rubric", inert(row.name), value, row.verdict, inert(detail)]
