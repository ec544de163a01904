"""The gate as a rich table for the terminal (what `check` and `gate` print), and `FitTable`, the table every command
prints for people: it reads whole at the console's width."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Iterator, Sequence
from itertools import combinations
from typing import Any, Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..data_classes import dataclass
from ..inputs.scale_config import computed_words
from ..record.gate_report import GateReport, as_report
from ..record.metrics import is_phased
from ..text import inert
from .baseline_section import baseline_line
from .cache_probe_section import cache_probe_lines, wrong_hit_lines
from .capacity_section import capacity_lines, prefix_cache_lines
from .feature_sections import section_lines
from .formatting import format_metric, format_threshold, latency_source_text
from .judge_section import guard_lines, judge_lines
from .stability_section import stability_lines

__all__ = ["answered_words", "criteria_table", "verdict_lines", "request_summary", "judged_by_line", "whatif_of", "Col", "FitTable"]

_STYLE = {"PASS": "bold green", "FAIL": "bold red", "NEEDS_REVIEW": "bold yellow", "INCONCLUSIVE": "bold yellow",
          "TARGET_ERROR": "bold red"}
_CELL = {"pass": "green", "fail": "red", "insufficient": "yellow"}

FREE_MIN = 24
"""The narrowest a free-text column may get inside a table; narrower, its text goes below the table instead."""
MAX_GROUPS = 3
"""The most tables a `FitTable` is split into; narrower than that, it prints one block per row."""
COMPACT = {"box": box.SIMPLE_HEAD, "padding": (0, 1), "pad_edge": False, "collapse_padding": True, "show_edge": False}
"""The table style tried when a table's own style is too wide: no borders, two spaces between columns."""
TIGHT = {**COMPACT, "padding": 0}
"""Then this: one space between columns."""
_INDENT = 2


def criteria_table(report: GateReport | dict[str, Any]) -> FitTable:
    """The gate as a table: criterion, value, threshold, n, verdict, why; at any width (see `FitTable`). A dict
    is validated into a GateReport first."""
    report = as_report(report)
    verdict = report.verdict
    columns = [Col("criterion", "left"), Col("value"), Col("threshold"), Col("n"), Col("verdict", "left"),
               Col("why", "left", free=True)]
    rows: list[list[Text | str]] = [
        [c.name, format_metric(c.metric, c.value), format_threshold(c), str(c.n),
         Text(c.verdict, style=_CELL[c.verdict]), c.reason or ""]
        for c in report.criteria
    ]
    title = f"releasegate: {verdict}" + (" (what-if)" if report.whatif else "")
    return FitTable(Text(title, style=_STYLE[verdict]), columns, rows)


@dataclass(frozen=True)
class Col:
    """A column of a `FitTable`. `free`: free text (a reason), which may wrap at its spaces; every other column
    holds a name or a number, which is never wrapped, folded or cut."""

    header: str
    justify: Literal["left", "center", "right"] = "right"
    free: bool = False


class FitTable:
    """A table that reads whole at the console's width (the terminal's; without one, COLUMNS, else 80): no name
    or number is ever cut to '…' or broken across lines. The first layout that fits the width:

    1. the table in its own style, then compact (no borders), then tight (one space between columns), free-text
       columns wrapping at their spaces;
    2. the same without the free-text columns, their text on lines of its own below the table (the column's
       header, then 'row: text' for each row that has some);
    3. stacked: each row's key (the first column) on a line of its own, the row's other cells on the line under it,
       then its free text;
    4. the other columns in at most MAX_GROUPS tables, each led by the key column;
    5. one block per row: the key on a line of its own, then one 'column: value' line per cell.

    Cells are text, never rich markup: a name like 'accuracy[domain=x]' shows as it is.
    """

    def __init__(self, title: Text | str | None, columns: Sequence[Col], rows: Iterable[Sequence[Text | str]],
                 **style: Any) -> None:
        self.title = Text(title, style="table.title") if isinstance(title, str) else title
        self.columns = list(columns)
        self.rows = [[c if isinstance(c, Text) else Text(str(c)) for c in row] for row in rows]
        self.style = {"title_justify": "left", **style}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width

        def fits(style: dict[str, Any], which: Sequence[int]) -> bool:
            return self._natural_width(console, options, style, which) <= width

        every = list(range(len(self.columns)))
        fixed = [i for i in every if not self.columns[i].free]
        styles = [self.style, {**self.style, **COMPACT}, {**self.style, **TIGHT}]
        below = self._free_below(width)
        for which, after in ((every, []), (fixed, below)) if len(fixed) < len(every) else ((every, []),):
            for style in styles:
                if fits(style, which):
                    yield self._table(style, which, title=True)
                    yield from after
                    return
        for gap in (2, 1):
            stacked = self._stacked(fixed, gap, width)
            if stacked is not None:
                yield from stacked
                return
        groups = self._groups(fits, fixed[1:], styles[1:])
        if groups is not None:
            style, runs = groups
            for n, group in enumerate(runs):
                if n:
                    yield Text()
                yield self._table(style, [0, *group], title=n == 0)
            yield from below
            return
        yield from self._blocks()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(options.max_width, FREE_MIN), options.max_width)

    def _table(self, style: dict[str, Any], which: Sequence[int], *, title: bool) -> Table:
        table = Table(title=self.title if title else None, **style)
        for i in which:
            col = self.columns[i]
            # a name or number column is exactly as wide as its widest cell: never wrapped, never cut
            table.add_column(col.header, justify=col.justify, overflow="fold", width=None if col.free else self._width(i))
        for row in self.rows:
            table.add_row(*(row[i] for i in which))
        return table

    def _width(self, i: int) -> int:
        cells = [Text(self.columns[i].header), *(row[i] for row in self.rows)]
        return max(cell_len(line) for text in cells for line in text.plain.split("\n"))

    def _natural_width(self, console: Console, options: ConsoleOptions, style: dict[str, Any], which: Sequence[int]) -> int:
        """The table's width with every name and number column whole and each free column at its narrowest
        readable width (FREE_MIN, or its widest cell when that is narrower)."""
        probe = Table(**{k: v for k, v in style.items() if k in ("box", "padding", "pad_edge", "collapse_padding", "show_edge")})
        for i in which:
            probe.add_column(width=min(FREE_MIN, self._width(i)) if self.columns[i].free else self._width(i))
        return Measurement.get(console, options.update_width(10**6), probe).maximum

    def _stacked(self, fixed: list[int], gap: int, width: int) -> list[RenderableType] | None:
        """Each key on its own line, the row's other cells on the next, indented, then its free text ('why: ...'),
        wrapped and indented: None if the cells do not fit on one line."""
        rest = fixed[1:]
        widths = [self._width(i) for i in rest]
        if not rest or _INDENT + sum(widths) + gap * (len(rest) - 1) > width:
            return None

        def line(cells: list[Text]) -> Text:
            out = Text(" " * _INDENT)
            for n, (i, cell, w) in enumerate(zip(rest, cells, widths)):
                cell = cell.copy()
                cell.align(self.columns[i].justify, w)
                out.append(" " * gap if n else "")
                out.append_text(cell)
            out.rstrip()
            return out

        out: list[RenderableType] = [] if self.title is None else [self.title]
        head = Text(self.columns[0].header, style="table.header")
        out += [head, line([Text(self.columns[i].header, style="table.header") for i in rest])]
        out.append(Text("─" * min(width, max(cell_len(head.plain), _INDENT + sum(widths) + gap * (len(rest) - 1)))))
        for row in self.rows:
            out += [Text.assemble(row[0], overflow="fold"), line([row[i] for i in rest])]
            out += [_indent(Text.assemble(f"{col.header}: ", row[i]), _INDENT)
                    for i, col in enumerate(self.columns) if col.free and row[i].plain]
        return out

    def _groups(self, fits: Any, rest: list[int], styles: list[dict[str, Any]]) -> tuple[dict[str, Any], list[list[int]]] | None:
        """`rest` cut into the fewest runs of columns (at most MAX_GROUPS) that each fit beside the key column in
        one of `styles` (the first that needs no more runs than the others), as even in width as can be (so the
        last is not one column alone); None when none does."""
        best = None
        for style in styles:
            if not rest or not all(fits(style, [0, i]) for i in rest):
                continue
            for k in range(1, min(len(rest), MAX_GROUPS) + 1):
                found = None
                for cuts in combinations(range(1, len(rest)), k - 1):
                    bounds = (0, *cuts, len(rest))
                    groups = [rest[a:b] for a, b in zip(bounds, bounds[1:])]
                    if all(fits(style, [0, *g]) for g in groups):
                        spread = max(sum(self._width(i) for i in g) for g in groups)
                        if found is None or spread < found[0]:
                            found = (spread, groups)
                if found is not None:
                    if best is None or len(found[1]) < len(best[1]):
                        best = (style, found[1])
                    break
        return best

    def _free_below(self, width: int) -> list[RenderableType]:
        """Free-text columns as lines under the table: the header, then 'key: text' for each row that has text
        (the key on a line of its own, the text indented under it, when both do not fit on one line)."""
        out: list[RenderableType] = []
        for i, col in enumerate(self.columns):
            lines = [(row[0], row[i]) for row in self.rows if row[i].plain]
            if not col.free or not lines:
                continue
            out.append(Text(f"{col.header}:"))
            for key, text in lines:
                line = Text.assemble(key, ": ", text)
                if _INDENT + cell_len(line.plain) <= width:
                    out.append(_indent(line, _INDENT))
                else:
                    out += [_indent(Text.assemble(key, ":"), _INDENT), _indent(text.copy(), 2 * _INDENT)]
        return out

    def _blocks(self) -> Iterator[RenderableType]:
        """One block per row: the key on its own line, then 'column: value' lines, indented."""
        if self.title is not None:
            yield self.title
        for row in self.rows:
            yield Text.assemble(row[0], overflow="fold")
            for col, cell in zip(self.columns[1:], row[1:]):
                if cell.plain or not col.free:
                    yield _indent(Text.assemble(f"{col.header}: ", cell), _INDENT)


def _indent(text: Text, n: int) -> Padding:
    text.overflow = "fold"  # a word wider than the line is folded, never cut
    return Padding(text, (0, 0, 0, n), expand=False)


def request_summary(report: GateReport) -> str:
    """Requests per phase with failures by error class, e.g. 'requests: quality 100 (0 failed); load 60 (24 failed:
    stall_timeout 24)'; and how many requests latency leaves out."""
    phases = report.counts.phases if report.counts else {}
    parts = []
    for name in ("quality", "load"):
        p = phases.get(name)
        if not p:
            continue
        kinds = ", ".join(f"{kind} {n}" for kind, n in p.errors.items())
        repaired = f", {p.repaired} with invalid Unicode repaired" if p.repaired else ""
        parts.append(f"{name} {p.requests} ({p.failed} failed{': ' + kinds if kinds else ''}{repaired}"
                     f"{ledger_words((p.ledger or {}).get(name))})")
    line = "requests: " + "; ".join(parts) if parts else ""
    ex = report.latency_excluded
    if ex and ex.requests > ex.measured:
        left = ex.requests - ex.measured
        line += f"; latency ({report.latency_from}) from {ex.measured} of {ex.requests}, {left} left out"
    return line


def ledger_words(kept: dict[str, Any] | None) -> str:
    """'; 6 of them (3 failed) from other sessions: cut load phase, session 0 6 (3 failed)': the phase's attempts
    that no kept record holds (`record.ledger`), and where they came from; '' when none."""
    if not kept:
        return ""
    where = ", ".join(f"{name} {n['attempts']} ({n['failed']} failed)" for name, n in sorted(kept["from"].items()))
    return f"; {kept['attempts']} of them ({kept['failed']} failed) from other sessions: {where}"


def answered_words(counts: Any) -> str:
    """'43 answered, 0 right': cases that got an answer and, of them, those that passed every check (a report
    that predates `right` says only how many were answered). A request that succeeded says nothing of its answer."""
    right = f", {counts.right} right" if counts.right is not None else ""
    return f"{counts.succeeded} answered{right}"


def whatif_of(report: GateReport) -> bool:
    """Whether the report was judged by another rubric than the run's own (`gate --rubric`: `judged_by.whatif`)."""
    return report.whatif


def judged_by_line(report: GateReport) -> str | None:
    """Which rubric file judged the report, with its sha256; for a what-if, that it is not the run's rubric and
    which that is. None for a report that predates `judged_by`."""
    by = report.judged_by
    if not by:
        return None
    file = inert(by.file, keep="")  # a path from the command line: shown, never acted on by a terminal
    if not by.whatif:
        return f"judged by the run's rubric: {file}{_source(by)}, sha256 {by.sha256}"
    return (f"what-if: judged by {file} (sha256 {by.sha256}), not the run's rubric (rubric.yaml, sha256 "
            f"{by.snapshot_sha256}); the run's own reports are unchanged")


def _source(by: Any) -> str:
    """' (snapshot of rubrics/triage.yaml, named by rubric: in base.yaml)': where the run's snapshot came from."""
    source = getattr(by, "source", None)
    if not source:
        return ""
    named_by = getattr(by, "named_by", None)
    if named_by and named_by.startswith("--set"):
        layer = f", named by {named_by}"
    else:
        layer = f", named by rubric: in {named_by} (extends:)" if named_by else ""
    return inert(f" (snapshot of {source}{layer})", keep="")


def verdict_lines(report: GateReport | dict[str, Any]) -> list[str]:
    """The lines under the criteria table: which rubric judged it, why the verdict, what the run is missing,
    requests and errors. A dict is validated into a GateReport first."""
    report = as_report(report)
    judged = judged_by_line(report)  # wrapped at its spaces, a path or hash never broken
    lines = [textwrap.fill(judged, 80, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)] \
        if judged else []
    if report.computed is not None:  # where the run was computed, when the run recorded it
        lines.append(computed_words(report.computed))
    if baseline := baseline_line(report.comparison):
        lines.append(textwrap.fill(baseline, 80, subsequent_indent="  ", break_on_hyphens=False))
    if report.verdict_reason:
        lines.append(f"verdict: {report.verdict}: {report.verdict_reason}")
    if report.incomplete and "incomplete" not in report.verdict_reason:
        lines.append(f"incomplete: {report.incomplete}")
    summary = request_summary(report)
    if summary:
        lines.append(summary)
    if report.client_saturated:
        lines.append(report.client_saturated)
    if any(is_phased(c.metric) for c in report.criteria):  # under what load the latency criteria were measured
        lines.append(f"latency measured on: {latency_source_text(report)}")
    # long figures wrapped to 80 columns with a hanging indent, for CI logs read without a terminal
    lines += [textwrap.fill(line, 80, subsequent_indent="  ", break_on_hyphens=False)
              for line in capacity_lines(report.capacity) + prefix_cache_lines(report.prefix_cache)
              + cache_probe_lines(report.response_cache_probe)
              + [f"wrong hit: {w}" for w in wrong_hit_lines(report.response_cache_probe, limit=3)]]
    lines += judge_lines(report.judge)
    lines += [textwrap.fill(line, 80, initial_indent="", subsequent_indent="    ", break_on_hyphens=False)
              for line in guard_lines(report.guard)]
    lines += [textwrap.fill(line, 80, subsequent_indent="  ", break_on_hyphens=False)
              for line in stability_lines(report) + section_lines(report)]
    return lines
