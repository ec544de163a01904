"""Reports from a judged run, one module per format:

    json      report.json        the report dict as judged (machines)
    md        report.md          verdict and criteria for a PR comment or a CI job summary (markdown)
    html      report.html        one self-contained page with plots and every case (html, plots)
    junit     report.junit.xml   one testcase per criterion, for CI test views (junit)
    csv       report.csv         one row per case, for a spreadsheet (csv)

plus the terminal table (terminal). Every format reads the run directory, never the model, so
`releasegate report RUN_DIR` renders any of them again. matplotlib and jinja2 are imported only for HTML.
"""

from __future__ import annotations

import json

from ..record.gate_report import load_report
from ..record.records import RunDir
from ..redaction import redact_values
from ..text import json_inert
from .csv import render_csv
from .formatting import format_value
from .junit import render_junit
from .markdown import append_step_summary, render_markdown
from .terminal import criteria_table, verdict_lines
from .view import RunView

__all__ = [
    "write_reports", "rendered_reports", "render", "FORMATS", "append_step_summary", "criteria_table", "verdict_lines",
    "render_markdown", "format_value", "RunView",
]

FORMATS = {"json": "report.json", "md": "report.md", "html": "report.html", "junit": "report.junit.xml", "csv": "report.csv"}
"""Format name -> the file `check` and `gate` write into the run directory."""


def write_reports(run: RunDir, report: dict) -> None:
    """Write every format into the run directory, and the Markdown to GITHUB_STEP_SUMMARY when that is set. The
    report is redacted as data first (its records are, on disk), so no format's escaping can hide a secret."""
    for name, text in rendered_reports(run, report).items():
        run.write_text(name, text)
    append_step_summary(render_markdown(report))


def rendered_reports(run: RunDir, report: dict) -> dict[str, str]:
    """File name -> text of every format, from the report redacted as data first. `write_reports` writes them into
    the run; a what-if judgment (`gate --rubric`) writes them beside it."""
    view = RunView.load(run, redact_values(report))
    return {name: render(view, fmt) for fmt, name in FORMATS.items()}


def render(view: RunView | RunDir, fmt: str, *, junit_cases: bool = False) -> str:
    """One report format as text; a RunDir is read with its saved report.json."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}")
    if fmt in ("json", "md", "junit"):  # these need only the report, not the records
        report = view.report if isinstance(view, RunView) else load_report(view)
        if fmt == "json":  # model text escaped where a terminal would act on it (cat report.json), same JSON value
            return json_inert(json.dumps(report, indent=2, ensure_ascii=False, default=str)) + "\n"
        if fmt == "md":
            return render_markdown(report)
        return render_junit(report, cases=junit_cases)
    view = view if isinstance(view, RunView) else RunView.load(view)
    if fmt == "csv":
        return render_csv(view)
    from .html import render_html  # jinja2 and matplotlib load only for HTML

    return render_html(view)
