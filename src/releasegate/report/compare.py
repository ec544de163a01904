"""The comparison of two runs as a terminal table: one row per metric, whole at any width."""

from __future__ import annotations

from rich.text import Text

from .terminal import Col, FitTable

__all__ = ["comparison_table"]

_STYLE = {"pass": "green", "fail": "red", "insufficient": "yellow"}


def _num(value, spec: str = ".4g") -> str:
    return "—" if value is None else format(value, spec)


def comparison_table(result: dict):
    """One row per metric, whole at any width (see `FitTable`)."""
    columns = [Col("metric", "left"), *(Col(c) for c in ("baseline", "candidate", "delta", "interval", "margin", "McNemar p")),
               Col("verdict", "left")]
    rows = []
    for row in result["rows"]:
        interval = f"[{row['interval'][0]:+.3g}, {row['interval'][1]:+.3g}]" if row["interval"] else "—"
        p = f"{row['p_value']:.3g}" if row["p_value"] is not None else "—"
        rows.append([
            row["metric"], _num(row["baseline"]), _num(row["candidate"]), _num(row["delta"], "+.4g"), interval,
            f"{row['margin']:.3g}", p, Text(row["verdict"], style=_STYLE[row["verdict"]]),
        ])
    title = f"compare: {result['verdict']} ({result['shared_cases']} shared cases, {result['identical_outputs']} identical outputs)"
    return FitTable(title, columns, rows)
