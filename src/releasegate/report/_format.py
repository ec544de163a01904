"""Number formatting shared by every report format, so a value reads the same in the terminal, Markdown and HTML."""

from __future__ import annotations

__all__ = ["format_value", "format_interval", "format_threshold"]


def format_value(value) -> str:
    """A metric value for people: 4 significant digits, thousands separators for large numbers, '—' for none."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)


def format_interval(interval) -> str:
    """A 95% interval as '[lo, hi]', or '' when the metric has none."""
    if not interval:
        return ""
    return f"[{interval[0]:.3g}, {interval[1]:.3g}]"


def format_threshold(criterion: dict) -> str:
    """The criterion's comparison, e.g. '>= 0.9'."""
    return f"{criterion['op']} {criterion['threshold']:g}"
