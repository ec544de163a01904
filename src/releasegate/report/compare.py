"""The comparison of two runs (`releasegate compare`): the terminal table, and `--format md|html|json` for a pull
request or a person: the verdict, one row per metric, per-slice accuracy deltas and the flipped cases (pass ->
fail, fail -> pass) with their input and both outputs.

Every text from the runs (case ids, slice names, inputs, outputs, why) is untrusted: inert and escaped in every
format (Markdown by `md_text`, HTML by jinja2's autoescape after `inert`), never markup.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from rich.text import Text

from ..record.decided_results import CompareResult, typed
from ..redaction import redact_values
from ..text import inert, json_inert
from .baseline_section import comparison_notes as _notes
from .baseline_section import metric_cells
from .baseline_section import num as _num
from .formatting import CSP
from .markdown import md_code, md_label, md_text
from .paired_models import ComparedRuns, FlippedCase, read_section
from .terminal import Col, FitTable

__all__ = ["comparison_table", "render_comparison", "COMPARE_FORMATS", "comparison_notes", "metric_cells"]

COMPARE_FORMATS = ("md", "html", "json")
FLIPPED_SHOWN_MD = 20
"""Markdown (a PR comment) lists this many flipped cases per direction; HTML and JSON every one the comparison keeps."""
_TEXT_MD = 120
_STYLE = {"pass": "green", "fail": "red", "insufficient": "yellow"}
_DIRECTIONS = (("pass_to_fail", "pass → fail (lost by the candidate)"), ("fail_to_pass", "fail → pass (gained)"))


def _read(result: dict[str, Any] | ComparedRuns) -> ComparedRuns:
    return result if isinstance(result, ComparedRuns) else read_section(ComparedRuns, result, "compare")


def comparison_table(result: dict[str, Any] | ComparedRuns) -> FitTable:
    """One row per metric, whole at any width (see `FitTable`)."""
    compared = _read(result)
    columns = [Col("metric", "left"), *(Col(c) for c in ("baseline", "candidate", "delta", "interval", "margin", "McNemar p")),
               Col("verdict", "left")]
    rows: list[list[Text | str]] = [[*metric_cells(row), Text(row.verdict, style=_STYLE[row.verdict])] for row in compared.rows]
    return FitTable(_title(compared), columns, rows)


def comparison_notes(result: dict[str, Any] | ComparedRuns) -> list[str]:
    """The lines under the table: each metric's note, what keeps the comparison from standing, the flips."""
    return _compared_notes(_read(result))


def _compared_notes(compared: ComparedRuns) -> list[str]:
    return _notes(compared, (compared.target_error, compared.incomplete, compared.settings_note), compared.verdict)


def _title(result: ComparedRuns) -> str:
    return (f"compare: {result.verdict} ({result.shared_cases} shared cases, "
            f"{result.identical_outputs} identical outputs)")


def render_comparison(result: dict[str, Any], fmt: str) -> str:
    """The comparison as Markdown, HTML or JSON text; registered secrets redacted in the data first, read through
    `CompareResult` (a comparison without its decision is an error, never a report)."""
    result = typed(CompareResult, redact_values(result))
    if fmt == "json":
        return json_inert(json.dumps(result, indent=2, ensure_ascii=False, default=str)) + "\n"
    if fmt == "md":
        return _markdown(_read(result))
    if fmt == "html":
        return _html(_read(result))
    raise ValueError(f"unknown comparison format {fmt!r}")


def _markdown(result: ComparedRuns) -> str:
    lines = [f"## releasegate {md_label(_title(result))}", "",
             f"- baseline: {md_label(result.baseline_run)}", f"- candidate: {md_label(result.candidate_run)}",
             *(f"- {md_text(line)}" for line in _compared_notes(result)), "",
             "| metric | baseline | candidate | delta | interval | margin | McNemar p | verdict |",
             "|---|---:|---:|---:|---|---:|---:|---|"]
    for row in result.rows:
        cells = metric_cells(row)
        lines.append(f"| {md_code(cells[0])} | " + " | ".join(cells[1:]) + f" | {row.verdict} |")
    if result.slices:
        lines += ["", "### Accuracy per slice", "", "| slice | n | baseline | candidate | delta | McNemar p | verdict |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        lines += [f"| {md_text(s.slice)} | {s.n} | {_num(s.baseline)} | {_num(s.candidate)} | "
                  f"{_num(s.delta, '+.4g')} | {_num(s.p_value, '.3g')} | {s.verdict} |" for s in result.slices]
    for direction, title in _DIRECTIONS:
        lines += _flip_md(result, direction, title)
    return "\n".join(lines) + "\n"


def _flip_md(result: ComparedRuns, direction: str, title: str) -> list[str]:
    cases = result.flips(direction)
    total = result.flipped.count(direction) if result.flipped else 0
    if not total:
        return []
    shown = cases[:FLIPPED_SHOWN_MD]
    rows = ["| case | suite | why | input | baseline output | candidate output |", "|---|---|---|---|---|---|"]
    for c in shown:
        cells = [c.case_id, c.suite, "; ".join(c.why), c.input, c.baseline_output, c.candidate_output]
        rows.append("| " + " | ".join(md_text(_cut(x)) for x in cells) + " |")
    more = f" (first {len(shown)})" if len(shown) < total else ""
    return ["", f"<details><summary>Flipped {title}: {total}{more}</summary>", "", *rows, "", "</details>"]


def _cut(text: str) -> str:
    return text if len(text) <= _TEXT_MD else text[:_TEXT_MD] + "…"


def _html(result: ComparedRuns) -> str:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # only for HTML
    from markupsafe import Markup

    folder = resources.files(__package__) / "templates"
    env = Environment(loader=FileSystemLoader(str(folder)), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True,
                      finalize=lambda v: inert(v) if isinstance(v, str) and not isinstance(v, Markup) else v)
    flips: list[tuple[str, int, list[FlippedCase]]] = [
        (title, result.flipped.count(d) if result.flipped else 0, result.flips(d)) for d, title in _DIRECTIONS]
    return env.get_template("compare.html.j2").render(
        csp=CSP, css=Markup((folder / "report.css").read_text("utf-8")), result=result, title=_title(result),
        notes=_compared_notes(result), rows=[(metric_cells(r), r) for r in result.rows],
        slices=result.slices or [], num=_num, flips=flips,
    )
