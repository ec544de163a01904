"""The trend page (`releasegate history --html`): each criterion's value, the confidence bound that decided it and
its threshold over the runs of the history, one marker per run coloured by its verdict and labelled with the run,
a ring on a blessed run, in the report's own style (report.css, the same CSP: no script, no outside resource). The
charts are drawn here as inline SVG: numbers, and run ids and blessing names escaped (`_marker`); every other text
reaches the page through the template's autoescape."""

from __future__ import annotations

from importlib import resources
from typing import Any

from markupsafe import escape

from ..text import inert
from .formatting import CSP, format_value
from .history_models import Bounded, HistoryRun, TrendPoint, TrendSeries, read_runs
from .paired_models import read_section

__all__ = ["render_trend", "trend_series", "deciding_bound"]

_WIDTH, _HEIGHT, _PAD = 640, 160, 28
_LABELS = 70  # room under the axis for the slanted run labels
_LABEL_CHARS = 24
_VERDICT_CLASS = {"PASS": "pass", "FAIL": "fail", "TARGET_ERROR": "fail"}
"""A run's verdict as the marker's class: anything else (NEEDS_REVIEW, INCONCLUSIVE, no verdict) is drawn as a
warning."""


def trend_series(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One series per criterion name found in the runs (`history --json` rows, oldest first): its metric,
    comparator, and one point per run that has it: run id, time, run verdict, blessings, value, threshold, the
    bound that decided (`deciding_bound`), criterion verdict."""
    return [s.model_dump() for s in _series(read_runs(rows))]


def _series(runs: list[HistoryRun]) -> list[TrendSeries]:
    series: dict[str, TrendSeries] = {}
    for run in runs:
        for c in run.criteria:
            entry = series.setdefault(c.name, TrendSeries(name=c.name, metric=c.metric, op=c.op))
            bound, side = _deciding_bound(c)
            entry.points.append(TrendPoint(run_id=run.run_id, dir=run.dir, created_at=run.created_at,
                                           run_verdict=run.verdict, blessed=run.blessed or [], value=c.value,
                                           threshold=c.threshold, bound=bound, bound_side=side, verdict=c.verdict))
    return list(series.values())


def deciding_bound(criterion: dict[str, Any]) -> tuple[float | None, str]:
    """The one-sided confidence bound the gate held against the threshold (`decision.criterion`): the safe side
    (the lower bound of a higher-is-better metric, the upper of a lower-is-better one) for a pass or an undecided
    criterion, the other side for a fail; and its words ('lower 95%'). (None, '') when the run has no bounds."""
    return _deciding_bound(read_section(Bounded, criterion, "criterion"))


def _deciding_bound(criterion: Bounded) -> tuple[float | None, str]:
    lo, hi = (list(criterion.bounds or []) + [None, None])[:2]
    higher = criterion.op in (">=", ">")
    fail = criterion.verdict == "fail"
    bound, side = (lo, "lower") if higher != fail else (hi, "upper")
    if not isinstance(bound, (int, float)):
        return None, ""
    confidence = criterion.confidence
    return bound, f"{side} {confidence:.0%}" if isinstance(confidence, (int, float)) else side


def render_trend(rows: list[dict[str, Any]], root: str) -> str:
    """The trend page of the history rows, as HTML text."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # only for HTML
    from markupsafe import Markup

    folder = resources.files(__package__) / "templates"
    env = Environment(loader=FileSystemLoader(str(folder)), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True,
                      finalize=lambda v: inert(v) if isinstance(v, str) and not isinstance(v, Markup) else v)
    runs = read_runs(rows)
    charts = [(s, Markup(_chart(s.points)), [_cells(p) for p in s.points]) for s in _series(runs)]
    return env.get_template("trend.html.j2").render(
        csp=CSP, css=Markup((folder / "report.css").read_text("utf-8")), root=root, runs=runs, charts=charts,
        verdict_class=lambda v: _VERDICT_CLASS.get(v or "", "insufficient"))  # the amber pill


def _cells(point: TrendPoint) -> dict[str, Any]:
    def shown(value: Any) -> str:
        return format_value(value) if value is not None else "n/a"

    return {**point.model_dump(), "value_text": shown(point.value), "threshold_text": shown(point.threshold),
            "bound_text": f"{shown(point.bound)} ({point.bound_side})" if point.bound is not None else "n/a"}


def _chart(points: list[TrendPoint]) -> str:
    """An SVG of the values (a line through the markers), the deciding bound (dashed), the threshold (dotted),
    each run's label under its marker and a ring with the name over a blessed run; text escaped."""
    numbers = [v for p in points for v in (p.value, p.bound, p.threshold) if isinstance(v, (int, float))]
    low, high = (min(numbers), max(numbers)) if numbers else (0.0, 1.0)
    if high == low:
        low, high = low - 1.0, high + 1.0
    step = (_WIDTH - 2 * _PAD) / max(len(points) - 1, 1)

    def x(i: int) -> float:
        return round(_PAD + i * step if len(points) > 1 else _WIDTH / 2, 2)

    def y(v: float) -> float:
        return round(_HEIGHT - _PAD - (v - low) / (high - low) * (_HEIGHT - 2 * _PAD), 2)

    parts = [f'<svg class="trend" viewBox="0 0 {_WIDTH} {_HEIGHT + _LABELS}" width="{_WIDTH}" '
             f'height="{_HEIGHT + _LABELS}" role="img">',
             f'<line x1="{_PAD}" y1="{_HEIGHT - _PAD}" x2="{_WIDTH - _PAD}" y2="{_HEIGHT - _PAD}" stroke="#999"/>']
    for key, style, values in (("threshold", 'stroke="#777" stroke-dasharray="2 3"', [p.threshold for p in points]),
                               ("bound", 'stroke="#9a6700" stroke-dasharray="6 4"', [p.bound for p in points]),
                               ("value", 'stroke="#333"', [p.value for p in points])):
        line = [(x(i), y(v)) for i, v in enumerate(values) if isinstance(v, (int, float))]
        if line:
            parts.append(f'<polyline class="{key}" fill="none" {style} points="{_points(line)}"/>')
    for i, p in enumerate(points):
        parts += _marker(p, x(i), y(p.value) if isinstance(p.value, (int, float)) else _HEIGHT - _PAD)
    parts.append(f'<text x="2" y="{_PAD - 8}" font-size="11">{high:.4g}</text>'
                 f'<text x="2" y="{_HEIGHT - _PAD + 4}" font-size="11">{low:.4g}</text></svg>')
    return "".join(parts)


def _marker(point: TrendPoint, cx: float, cy: float) -> list[str]:
    """A run's marker coloured by its verdict, its label slanted under the axis, and a blessed run's ring and names."""
    colour = {"pass": "#1a7f37", "fail": "#c62828"}.get(_VERDICT_CLASS.get(point.run_verdict or "", ""), "#9a6700")
    label = escape(inert(str(point.run_id), keep="")[:_LABEL_CHARS])
    parts = [f'<circle class="marker" cx="{cx}" cy="{cy}" r="5" fill="{colour}"><title>{label}</title></circle>',
             f'<text class="run-label" x="{cx}" y="{_HEIGHT - _PAD + 14}" font-size="10" text-anchor="end" '
             f'transform="rotate(-35 {cx} {_HEIGHT - _PAD + 14})">{label}</text>']
    if point.blessed:
        names = escape(inert(" ".join(f"@{n}" for n in point.blessed), keep="")[:_LABEL_CHARS])
        parts += [f'<circle class="blessed" cx="{cx}" cy="{cy}" r="9" fill="none" stroke="#0969da" stroke-width="2"/>',
                  f'<text class="blessed-label" x="{cx}" y="{max(cy - 13, 10)}" font-size="10" text-anchor="middle" '
                  f'fill="#0969da">{names}</text>']
    return parts


def _points(pairs: list[tuple[float, float]]) -> str:
    return " ".join(f"{a},{b}" for a, b in pairs)
