"""The report formats: one registry of name, file, what a format renders from, and its renderer.

`render`, `write_reports` and `rendered_reports` (releasegate.report) read it; `releasegate report --format`
offers its names (tests/test_architecture.py checks that the CLI's choices are these). A format that needs only
the judged report (`needs="report"`) renders a GateReport; one that needs the records too (`needs="records"`)
renders a RunView (the report plus the run directory's cases).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Literal

from ..data_classes import dataclass
from ..record.gate_report import GateReport
from ..text import json_inert
from .csv import csv_chunks, render_csv
from .junit import render_junit
from .markdown import render_markdown
from .summary_csv import render_summary_csv
from .view import RunView

__all__ = ["ReportFormat", "RenderOptions", "REGISTRY", "register", "format_names"]


@dataclass(frozen=True)
class RenderOptions:
    """Options a format may read; the others ignore them."""

    junit_cases: bool = False
    """junit: also one failed testcase per failing case."""


@dataclass(frozen=True)
class ReportFormat:
    """One report format."""

    name: str
    """What `--format` takes."""
    file: str
    """The file `check` and `gate` write into the run directory."""
    needs: Literal["report", "records"]
    """'report': rendered from the GateReport alone; 'records': from a RunView (the report and the run's cases)."""
    render: Callable[[GateReport | RunView, RenderOptions], str]
    """The renderer: a GateReport (needs='report') or a RunView (needs='records') -> text."""
    chunks: Callable[[GateReport | RunView, RenderOptions], Iterable[str]] | None = None
    """The same text in pieces as it is made (a row per case), for a file written as they come, when the text
    grows with the cases; None: `render`'s text is written whole."""


REGISTRY: dict[str, ReportFormat] = {}
"""Format name -> its ReportFormat, in the order the files are written."""


def register(fmt: ReportFormat) -> ReportFormat:
    """Add a format to the registry (a name registered twice is a bug)."""
    if fmt.name in REGISTRY:
        raise ValueError(f"report format {fmt.name!r} is registered twice")
    REGISTRY[fmt.name] = fmt
    return fmt


def format_names() -> tuple[str, ...]:
    """Every registered format's name."""
    return tuple(REGISTRY)


def _report(subject: GateReport | RunView) -> GateReport:
    return subject.gate_report if isinstance(subject, RunView) else subject


def _view(subject: GateReport | RunView) -> RunView:
    if not isinstance(subject, RunView):
        raise TypeError("this report format renders from the run's records: give it a RunView")
    return subject


def _json(subject: GateReport | RunView, options: RenderOptions) -> str:
    # model text escaped where a terminal would act on it (cat report.json), same JSON value
    return json_inert(json.dumps(_report(subject).as_json(), indent=2, ensure_ascii=False, default=str)) + "\n"


def _html(subject: GateReport | RunView, options: RenderOptions) -> str:
    from .html import render_html  # jinja2 (and matplotlib for a sweep's plot) load only for HTML

    return render_html(_view(subject))


register(ReportFormat("json", "report.json", "report", _json))
register(ReportFormat("md", "report.md", "report", lambda s, o: render_markdown(_report(s))))
register(ReportFormat("html", "report.html", "records", _html))
register(ReportFormat("junit", "report.junit.xml", "report", lambda s, o: render_junit(_report(s), cases=o.junit_cases)))
register(ReportFormat("csv", "report.csv", "records", lambda s, o: render_csv(_view(s)),
                     chunks=lambda s, o: csv_chunks(_view(s))))
register(ReportFormat("summary", "report.summary.csv", "report", lambda s, o: render_summary_csv(_report(s))))
