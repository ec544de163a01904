"""The trend page (`releasegate history --html`): each criterion's value and bound over the runs of the history,
one marker per run coloured by its verdict, in the report's own style (report.css, the same CSP: no script, no
outside resource). The charts are drawn here as inline SVG of numbers only; every text reaches the page through
the template's autoescape."""

from __future__ import annotations

from importlib import resources

from ..text import inert
from .formatting import CSP, format_value

__all__ = ["render_trend", "trend_series"]

_WIDTH, _HEIGHT, _PAD = 640, 160, 28
_VERDICT_CLASS = {"PASS": "pass", "FAIL": "fail", "TARGET_ERROR": "fail"}
"""A run's verdict as the marker's class: anything else (NEEDS_REVIEW, INCONCLUSIVE, no verdict) is drawn as a
warning."""


def trend_series(rows: list[dict]) -> list[dict]:
    """One series per criterion name found in the runs (`history --json` rows, oldest first): its metric,
    comparator, and one point per run that has it: run id, time, run verdict, value, bound, criterion verdict."""
    series: dict[str, dict] = {}
    for row in rows:
        for c in row.get("criteria", []):
            entry = series.setdefault(c["name"], {"name": c["name"], "metric": c["metric"], "op": c["op"], "points": []})
            entry["points"].append({"run_id": row["run_id"], "dir": row["dir"], "created_at": row["created_at"],
                                    "run_verdict": row.get("verdict"), "value": c.get("value"),
                                    "bound": c.get("threshold"), "verdict": c.get("verdict")})
    return list(series.values())


def render_trend(rows: list[dict], root: str) -> str:
    """The trend page of the history rows, as HTML text."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # only for HTML
    from markupsafe import Markup

    folder = resources.files(__package__) / "templates"
    env = Environment(loader=FileSystemLoader(str(folder)), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True,
                      finalize=lambda v: inert(v) if isinstance(v, str) and not isinstance(v, Markup) else v)
    series = trend_series(rows)
    charts = [(s, Markup(_chart(s["points"])), [_cells(p) for p in s["points"]]) for s in series]
    return env.get_template("trend.html.j2").render(
        csp=CSP, css=Markup((folder / "report.css").read_text("utf-8")), root=root, runs=rows, charts=charts,
        verdict_class=lambda v: _VERDICT_CLASS.get(v or "", "insufficient"))  # the amber pill


def _cells(point: dict) -> dict:
    return {**point, "value_text": format_value(point["value"]) if point["value"] is not None else "n/a",
            "bound_text": format_value(point["bound"]) if point["bound"] is not None else "n/a"}


def _chart(points: list[dict]) -> str:
    """An SVG of the values (a line through the markers) and the bound (a dashed line); numbers only."""
    numbers = [v for p in points for v in (p["value"], p["bound"]) if isinstance(v, (int, float))]
    low, high = (min(numbers), max(numbers)) if numbers else (0.0, 1.0)
    if high == low:
        low, high = low - 1.0, high + 1.0
    step = (_WIDTH - 2 * _PAD) / max(len(points) - 1, 1)

    def x(i: int) -> float:
        return round(_PAD + i * step if len(points) > 1 else _WIDTH / 2, 2)

    def y(v: float) -> float:
        return round(_HEIGHT - _PAD - (v - low) / (high - low) * (_HEIGHT - 2 * _PAD), 2)

    parts = [f'<svg class="trend" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" height="{_HEIGHT}" role="img">',
             f'<line x1="{_PAD}" y1="{_HEIGHT - _PAD}" x2="{_WIDTH - _PAD}" y2="{_HEIGHT - _PAD}" stroke="#999"/>']
    bound = [(x(i), y(p["bound"])) for i, p in enumerate(points) if isinstance(p["bound"], (int, float))]
    if bound:
        parts.append(f'<polyline class="bound" fill="none" stroke="#9a6700" stroke-dasharray="6 4" '
                     f'points="{_points(bound)}"/>')
    value = [(x(i), y(p["value"])) for i, p in enumerate(points) if isinstance(p["value"], (int, float))]
    if value:
        parts.append(f'<polyline class="value" fill="none" stroke="#333" points="{_points(value)}"/>')
    for i, p in enumerate(points):
        colour = {"pass": "#1a7f37", "fail": "#c62828"}.get(_VERDICT_CLASS.get(p["run_verdict"] or "", ""), "#9a6700")
        at = y(p["value"]) if isinstance(p["value"], (int, float)) else _HEIGHT - _PAD
        parts.append(f'<circle class="marker" cx="{x(i)}" cy="{at}" r="5" fill="{colour}"/>')
    parts.append(f'<text x="2" y="{_PAD - 8}" font-size="11">{high:.4g}</text>'
                 f'<text x="2" y="{_HEIGHT - 6}" font-size="11">{low:.4g}</text></svg>')
    return "".join(parts)


def _points(pairs: list[tuple[float, float]]) -> str:
    return " ".join(f"{a},{b}" for a, b in pairs)
