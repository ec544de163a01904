"""Reports from a judged run, one module per format, each registered in `formats.REGISTRY`:

    json      report.json        the report as judged (machines)
    md        report.md          verdict and criteria for a PR comment or a CI job summary (markdown)
    html      report.html        one self-contained page with plots and every case (html, plots)
    junit     report.junit.xml   one testcase per criterion, for CI test views (junit)
    csv       report.csv         one row per case, for a spreadsheet (csv)
    summary   report.summary.csv the verdict, every criterion and every feature summary line (csv)

plus the terminal table (terminal). Every format renders the typed `GateReport` (record.gate_report), or a
`RunView` (the report and the run's records) when it needs the cases; a dict given here is validated into a
GateReport once. Every format reads the run directory, never the model, so `releasegate report RUN_DIR`
renders any of them again. jinja2 is imported only for HTML, and matplotlib only for the plot of a capacity sweep or
a response-cache probe (the latency plots are written directly).

A new format touches exactly:
    src/releasegate/report/<name>.py      its renderer (GateReport or RunView -> text)
    src/releasegate/report/formats.py     one `register(ReportFormat(name, file, needs, renderer))` line
    src/releasegate/cli/report.py         its name in `Format` (the choices `--help` shows without importing the
                                          reports; tests/test_architecture.py checks they equal the registry)
`render`, `write_reports` and `rendered_reports` pick it up from the registry; `check` and `gate` write it.
"""

from __future__ import annotations

from typing import Any

from ..border.files import replace_file
from ..record.gate_report import GateReport, as_report, load_report
from ..record.records import RunDir
from ..redaction import redact, redact_values
from ..scorers import ScoredRun
from ..text import valid_text
from .formats import REGISTRY, RenderOptions, ReportFormat, format_names
from .formatting import format_value
from .markdown import append_step_summary, render_markdown
from .relative_paths import relative_to_places, run_places
from .terminal import criteria_table, verdict_lines
from .view import RunView

__all__ = [
    "write_reports", "rendered_reports", "render", "FORMATS", "REGISTRY", "ReportFormat", "format_names",
    "append_step_summary", "criteria_table", "verdict_lines", "render_markdown", "format_value", "RunView",
]

FORMATS = {fmt.name: fmt.file for fmt in REGISTRY.values()}
"""Format name -> the file `check` and `gate` write into the run directory (from the registry)."""


def write_reports(run: RunDir, report: GateReport | dict[str, Any], scored: ScoredRun | None = None) -> None:
    """Write every format into the run directory, and the Markdown to GITHUB_STEP_SUMMARY when that is set. The
    report is redacted as data first (its records are, on disk), so no format's escaping can hide a secret."""
    view, options = _redacted_view(run, report, scored), RenderOptions()
    for fmt in REGISTRY.values():
        if fmt.chunks is None:
            run.write_text(fmt.file, fmt.render(view, options))
        else:  # written as it is made (every case's row): the text is never held whole
            replace_file(run.path / fmt.file, (valid_text(redact(chunk)).encode("utf-8")
                                               for chunk in fmt.chunks(view, options)), what=fmt.file)
    append_step_summary(render(view, "md"), run.path)


def rendered_reports(run: RunDir, report: GateReport | dict[str, Any], scored: ScoredRun | None = None) -> dict[str, str]:
    """File name -> text of every format, from the report redacted as data first. `write_reports` writes them into
    the run; a what-if judgment (`gate --rubric`) writes them beside it. `scored`: the records as the gate read
    and scored them (`scorers.scored_run`), when the caller has them."""
    view = _redacted_view(run, report, scored)
    return {fmt.file: render(view, fmt.name) for fmt in REGISTRY.values()}


def _redacted_view(run: RunDir, report: GateReport | dict[str, Any], scored: ScoredRun | None) -> RunView:
    """The run to render, its report redacted as data first, with no machine's folders in it."""
    plain = report.as_json() if isinstance(report, GateReport) else report
    plain = relative_to_places(plain, run_places(run))
    return RunView.load(run, as_report(redact_values(plain)), scored)


def render(view: RunView | RunDir, fmt: str, *, junit_cases: bool = False) -> str:
    """One report format as text; a RunDir is read with its saved report.json (validated once)."""
    if fmt not in REGISTRY:
        raise ValueError(f"unknown report format {fmt!r}")
    chosen, options = REGISTRY[fmt], RenderOptions(junit_cases=junit_cases)
    if isinstance(view, RunView):
        return chosen.render(view, options)
    if chosen.needs == "report":  # no records read for these
        return chosen.render(load_report(view), options)
    return chosen.render(RunView.load(view), options)
