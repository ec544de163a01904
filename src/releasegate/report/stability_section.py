"""The stability section of every report format: the repeated draws case by case (modal answer, agreement,
which draws failed) and the flip table (case, answer alone, answer under load). One source of rows, so the
Markdown, HTML, terminal, JUnit and CSV renderings say the same thing."""

from __future__ import annotations

from typing import Any

from ..record.gate_report import GateReport

__all__ = ["stability_lines", "draw_table", "flip_table_rows", "case_stability", "STABILITY_COLUMNS",
           "ROWS_SHOWN"]

ROWS_SHOWN = 20
"""Rows of each table a report shows (report.json keeps up to 1,000)."""
_TEXT = 60  # characters of an answer shown in a cell
STABILITY_COLUMNS = ("draws", "failing_draws", "modal_answer", "answer_under_load")
"""report.csv's columns for a run with a stability section, after every other column."""


def _cut(text: str | None) -> str:
    if text is None:
        return "(no answer)"
    return text if len(text) <= _TEXT else text[:_TEXT] + "…"


def stability_lines(report: GateReport) -> list[str]:
    """One-line facts: how many cases repeat and disagree, how many flipped under load, what was left out."""
    s = report.stability
    if s is None:
        return []
    lines = []
    if s.draws:
        unstable = sum(bool(r.failing_draws) or r.agreement < 1 for r in s.draws)
        lines.append(f"repeated draws: {len(s.draws)} case(s) asked more than once, {unstable} with a failing or "
                     "disagreeing draw")
    if s.draw_problem:
        lines.append(f"draws not counted: {s.draw_problem}")
    if s.flips:
        lines.append(f"answers changed under load: {len(s.flips)} case(s): "
                     + ", ".join(r.case_id for r in s.flips[:10]) + (" …" if len(s.flips) > 10 else ""))
    if s.load_answers_left_out:
        lines.append(f"{s.load_answers_left_out} load request(s) of no case of the run left out")
    return lines


def draw_table(report: GateReport) -> tuple[list[str], list[list[str]]]:
    """(columns, rows): the repeated cases, failing or disagreeing first."""
    s = report.stability
    rows = [] if s is None else [
        [r.case_id, f"{r.draws}/{r.planned}", f"{r.agreement:.2f}", ", ".join(map(str, r.failing_draws)) or "-",
         _cut(r.modal_answer)] for r in s.draws[:ROWS_SHOWN]]
    return ["case", "draws", "agreement", "failing draws", "modal answer"], rows


def flip_table_rows(report: GateReport) -> tuple[list[str], list[list[str]]]:
    """(columns, rows): the cases whose answer changed under load."""
    s = report.stability
    rows = [] if s is None else [
        [r.case_id, _cut(r.alone), _cut(r.under_load), f"{r.changed}/{r.asked}"] for r in s.flips[:ROWS_SHOWN]]
    return ["case", "answer alone", "answer under load", "changed"], rows


def case_stability(report: GateReport) -> dict[str, list[Any]]:
    """Case id -> its STABILITY_COLUMNS cells, for report.csv (empty without a stability section)."""
    s = report.stability
    if s is None:
        return {}
    out: dict[str, list[Any]] = {r.case_id: [r.draws, " ".join(map(str, r.failing_draws)), r.modal_answer or "", ""]
                            for r in s.draws}
    for f in s.flips:
        out.setdefault(f.case_id, ["", "", "", ""])[3] = f.under_load or ""
    return out
