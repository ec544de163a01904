"""The HTML report's confidence-sequence plots (report.json `confidence_sequences`): for each anytime-valid
criterion of a run that may stop, its running lower and upper bounds over the cases of the run's random order,
the threshold, and the case at which its e-process decided it. Written as inline SVG (`svg_plot`); each figure
carries its numbers as data attributes, so the page says what it draws."""

from __future__ import annotations

from typing import Any

from ..record.confidence_sequences import ConfidenceSequence
from .svg_plot import Panel, svg_document

__all__ = ["sequence_figures"]

_BAND, _BOUND, _GATE, _DECIDED = "#dbe7f5", "#3b6fb6", "#c93c3c", "#2f8f6f"
_WIDTH, _HEIGHT = 528.0, 250.0
_PAD = 0.05


def sequence_figures(sequences: list[ConfidenceSequence]) -> list[dict[str, Any]]:
    """One figure per sequence: its SVG and the numbers it draws ({} of them for none: a run that asks every
    case has no sequence, and no figure)."""
    return [_figure(s) for s in sequences if s.cases]


def _figure(s: ConfidenceSequence) -> dict[str, Any]:
    what = "candidate − baseline" if s.paired else s.metric
    title = f"{s.name}: {s.op} {s.threshold:g}"
    low = -1.0 if s.paired else 0.0
    panel = Panel(0.0, 0.0, _WIDTH, _HEIGHT, xlim=(0.0, float(s.cases[-1] + 1)),
                  ylim=(max(low, min(*s.lower, s.threshold) - _PAD), min(1.0, max(*s.upper, s.threshold) + _PAD)))
    panel.frame(title, "cases asked, in the run's random order", what)
    edges = [float(c) for c in s.cases] + [float(s.cases[-1] + 1)]
    panel.band(edges, s.lower, s.upper, _BAND)
    panel.step(edges[:-1], s.lower, _BOUND)
    panel.step(edges[:-1], s.upper, _BOUND)
    panel.step([0.0, edges[-1]], [s.threshold, s.threshold], _GATE, width=1.2)
    if s.decided_at is not None:
        panel.vline(float(s.decided_at), _DECIDED, dash="4 3", width=1.2)
        panel.label(float(s.decided_at), panel.ylim[0] + 0.1 * (panel.ylim[1] - panel.ylim[0]),
                    f"decided at case {s.decided_at}: {s.verdict}", _DECIDED, backdrop=True)
    svg = svg_document(_WIDTH, _HEIGHT, [panel], f"Confidence sequence of {s.name} over the cases asked")
    numbers = " ".join
    return {"svg": svg, "name": s.name, "threshold": f"{s.threshold:g}", "op": s.op,
            "decided_at": "" if s.decided_at is None else str(s.decided_at), "verdict": s.verdict or "",
            "cases": numbers(str(c) for c in s.cases), "lower": numbers(f"{v:.6g}" for v in s.lower),
            "upper": numbers(f"{v:.6g}" for v in s.upper)}
