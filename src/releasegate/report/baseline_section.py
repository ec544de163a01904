"""The baseline a report compares with, the same in every format: which blessing it is (name, run, who, when,
why) or which run, and the comparison as a table (metric, baseline, candidate, delta, interval, margin, McNemar p,
verdict) with its slices and the reasons it may not stand."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from ..data_classes import dataclass
from ..text import inert
from .paired_models import BaselineComparison, ComparedMetric, PairedComparison, read_section

__all__ = ["baseline_line", "baseline_of", "comparison_view", "ComparisonView", "comparison_md", "comparison_notes", "metric_cells", "num", "COMPARISON_COLUMNS"]

COMPARISON_COLUMNS = ("metric", "baseline", "candidate", "delta", "interval", "margin", "McNemar p", "verdict")
_SLICE_COLUMNS = ("slice", "n", "baseline", "candidate", "delta", "McNemar p", "verdict")
_LATENCY_ROWS = ("ttft_ms", "tpot_ms", "e2e_ms")
_REASON_SHOWN = 300
"""Characters of a blessing's reason a report line shows (report.json keeps it as bless bounds it)."""


def num(value: Any, spec: str = ".4g") -> str:
    return "—" if value is None else format(value, spec)


def _interval(row: ComparedMetric) -> str:
    return f"[{row.interval[0]:+.3g}, {row.interval[1]:+.3g}]" if row.interval else "—"


def metric_cells(row: ComparedMetric) -> list[str]:
    """metric, baseline, candidate, delta, interval, margin, McNemar p, as text."""
    p = f"{row.p_value:.3g}" if row.p_value is not None else "—"
    return [row.metric, num(row.baseline), num(row.candidate), num(row.delta, "+.4g"), _interval(row),
            f"{row.margin:.3g}", p]


def comparison_notes(result: PairedComparison, whys: tuple[str | None, ...] = (), verdict: str = "") -> list[str]:
    """The lines under the table: each metric's note, what keeps the comparison from standing (`whys`, each said
    after `verdict`), the flips."""
    lines = [f"{row.metric}: {row.note}" for row in result.rows if row.note]
    lines += [f"{verdict}: {why}" for why in whys if why]
    lines += _latency_lines(result)
    flipped = result.flipped
    if flipped:
        lines.append(f"flipped cases: {flipped.pass_to_fail} pass -> fail, {flipped.fail_to_pass} fail -> pass")
    return lines


def _latency_lines(result: PairedComparison) -> list[str]:
    """Where the latency rows come from (each run's quality cases), and a warning when the two runs sent them
    under different loads: a TTFT delta then measures the load as much as the model."""
    sources = result.latency_sources
    if not sources or not any(row.metric in _LATENCY_ROWS for row in result.rows):
        return []
    base, cand = sources.baseline, sources.candidate
    if base.in_flight == cand.in_flight and base.text == cand.text:
        return [f"latency rows measured on: {cand.text}, in both runs"]
    return [f"latency rows measured under different loads: baseline {base.text}, candidate {cand.text}: "
            "a latency delta measures the load as well as the target"]


def baseline_of(comparison: Any) -> BaselineComparison | None:
    """A report's `comparison` section read as the baseline comparison; None for none, or one of another shape
    (no `rows`: shown as a generic table). A section with rows that does not fit is an input error naming it."""
    if not isinstance(comparison, dict) or "rows" not in comparison:
        return None
    return read_section(BaselineComparison, comparison, "comparison")


def baseline_line(comparison: Any) -> str | None:
    """'baseline: blessed 'prod', run r1 (blessed by ana, 2026-12-07 06:45 UTC: "shipped in 1.4")', or
    'baseline: run r1' for a rubric naming a run; None for a report without a baseline comparison. Shown inert."""
    found = baseline_of(comparison)
    return None if found is None else _baseline_line(found)


def _baseline_line(comparison: BaselineComparison) -> str:
    run = _run_name(comparison.baseline_run)
    blessing = comparison.baseline_blessing
    if blessing is not None:
        reason = str(blessing.reason)
        reason = reason if len(reason) <= _REASON_SHOWN else reason[:_REASON_SHOWN] + "…"  # every CSV row holds it
        signed = f", signed by {blessing.signer}" if blessing.signer else ""
        line = (f"baseline: blessed '{blessing.name}', run {blessing.run} (blessed by "
                f"{blessing.by}, {_when(blessing.blessed_at)}{signed}: \"{reason}\")")
    elif comparison.baseline_blessed:
        line = f"baseline: '{comparison.baseline_blessed}', run {run} (no blessing of it found)"
    else:
        line = f"baseline: run {run}"
    return inert(line, keep="")


def _run_name(run: Any) -> str:
    """A run directory by its name: the folder it lay in on the machine that ran the gate is no one's business."""
    return PurePath(str(run)).name if run else "?"


def _when(stamp: Any) -> str:
    try:
        return datetime.fromisoformat(str(stamp)).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return str(stamp)


def _summary(comparison: BaselineComparison) -> str:
    return (f"{comparison.shared_cases} shared cases, {comparison.identical_outputs} identical "
            f"outputs, {comparison.changed_cases} changed since the baseline")


def _notes(comparison: BaselineComparison) -> list[str]:
    """Why the comparison may not stand (problems), what is stale (warnings), then each metric's note."""
    return [*(f"does not stand: {p}" for p in comparison.baseline_problems or []),
            *(f"stale: {w}" for w in comparison.baseline_warnings or []),
            *comparison_notes(comparison)]


def _rows(comparison: BaselineComparison) -> list[list[str]]:
    return [[*metric_cells(row), row.verdict] for row in comparison.rows]


def _slices(comparison: BaselineComparison) -> list[list[str]]:
    return [[s.slice, str(s.n), num(s.baseline), num(s.candidate), num(s.delta, "+.4g"), num(s.p_value, ".3g"),
             s.verdict] for s in comparison.slices or []]


@dataclass(frozen=True)
class ComparisonView:
    """What every format shows of a baseline comparison."""

    baseline: str
    summary: str
    rows: list[list[str]]
    slices: list[list[str]]
    notes: list[str]
    columns: tuple[str, ...] = COMPARISON_COLUMNS
    slice_columns: tuple[str, ...] = _SLICE_COLUMNS


def comparison_view(comparison: Any) -> ComparisonView | None:
    """What the HTML report shows of a baseline comparison: its baseline line, a summary, the metric and slice
    tables and the notes; None for no comparison or one of another shape (shown as a generic table)."""
    found = baseline_of(comparison)
    if found is None:
        return None
    return ComparisonView(_baseline_line(found), _summary(found), _rows(found), _slices(found), _notes(found))


def comparison_md(comparison: Any, md_text: Callable[[Any], str], md_label: Callable[[Any], str]) -> list[str]:
    """The Markdown section (`md_text`, `md_label`: the report's escaping of a cell and of a line)."""
    view = comparison_view(comparison)
    if view is None:
        return []
    lines = ["", "### Comparison with the baseline", "", md_label(view.baseline), "", md_label(view.summary), "",
             "| " + " | ".join(view.columns) + " |", "|---|" + "---:|" * 6 + "---|"]
    lines += [_md_row(row, md_text) for row in view.rows]
    if view.slices:
        lines += ["", "| " + " | ".join(view.slice_columns) + " |", "|---|" + "---:|" * 5 + "---|"]
        lines += [_md_row(row, md_text) for row in view.slices]
    return lines + ([""] + [f"- {md_label(n)}" for n in view.notes] if view.notes else [])


def _md_row(row: list[str], md_text: Callable[[Any], str]) -> str:
    """The first and last cells (a metric or slice, a verdict) escaped; the figures between are releasegate's own."""
    return "| " + " | ".join([md_text(row[0]), *row[1:-1], md_text(row[-1])]) + " |"
