"""Latency plots for the HTML report, written directly as inline SVG (svg_plot): the cumulative distributions of
TTFT, TPOT and E2E with their P50 and P95 and the rubric's thresholds, and each request's time split into prefill
and decode. No plotting library: drawing them costs milliseconds, where importing and laying out matplotlib cost
more than the rest of `gate` together.
"""

from __future__ import annotations

import math

from ..record.gate_report import CriterionRow
from ..stats.intervals import percentile
from .svg_plot import Panel, svg_document

__all__ = ["latency_plots"]

_COLORS = {"ttft_ms": "#3b6fb6", "tpot_ms": "#8a5cc2", "e2e_ms": "#2f8f6f", "prefill": "#3b6fb6", "decode": "#e39a3b"}
_TITLES = {"ttft_ms": "TTFT (prefill)", "tpot_ms": "TPOT (decode, per token)", "e2e_ms": "End-to-end"}
_GATE, _MARK = "#c93c3c", "#6b7280"
_MAX_POINTS = 300  # per curve: keeps the page small for large runs; the percentile lines use every sample
_WIDTH, _CDF_HEIGHT, _SPLIT_HEIGHT = 1056.0, 278.0, 250.0  # px: 11 x 2.9 and 11 x 2.6 inches at 96 dpi
_SHARES = [(0.0, "0"), (0.5, "50%"), (0.95, "95%"), (1.0, "100%")]


def latency_plots(samples: dict[str, list[float]], split: list[tuple[float, float]], criteria: list[CriterionRow]) -> dict[str, str]:
    """SVG plots: 'cdf' (distributions of `samples`: ttft_ms, tpot_ms, e2e_ms) and 'split' (per request
    (prefill, decode) in ms); {} when nothing was measured. Latency criteria of the rubric are drawn as lines."""
    if not any(samples.values()):
        return {}
    plots = {"cdf": _cdf_plot(samples, criteria)}
    if split:
        plots["split"] = _split_plot(split)
    return plots


def _cdf_plot(samples: dict[str, list[float]], criteria: list[CriterionRow]) -> str:
    width = _WIDTH / len(_TITLES)
    panels = [_cdf_panel(Panel(i * width, 0.0, width, _CDF_HEIGHT), key, samples.get(key, []), criteria)
              for i, key in enumerate(_TITLES)]
    return svg_document(_WIDTH, _CDF_HEIGHT, panels, "Cumulative distributions of TTFT, TPOT and end-to-end latency")


def _cdf_panel(panel: Panel, key: str, values: list[float], criteria: list[CriterionRow]) -> Panel:
    title = f"{_TITLES[key]}  (n={len(values)})"
    ylabel = "share of requests ≤ x" if key == "ttft_ms" else ""
    if not values:
        panel.frame(title, "milliseconds", ylabel, yticks=[])
        panel.note("no samples")
        return panel
    ordered = sorted(values)
    keep = _spread(len(ordered), _MAX_POINTS)  # every order statistic up to _MAX_POINTS, evenly spaced above
    xs, ys = [ordered[i] for i in keep], [(i + 1) / len(ordered) for i in keep]
    gates = [c for c in criteria if c.metric.startswith(key + "_p") and not c.slice]  # thresholds on the whole run
    panel.xlim = (0.0, _upper([xs[-1], *(c.threshold for c in gates)]))
    panel.ylim = (0.0, 1.04)
    panel.frame(title, "milliseconds", ylabel, yticks=_SHARES)
    panel.step(xs, ys, _COLORS[key])
    for q, dash, height in ((50, "1.5 2", 0.03), (95, "5 3", 0.14)):
        x = percentile(values, q)
        if x is None:
            continue
        panel.vline(x, _MARK, dash=dash)
        panel.label(x, height, f"P{q} {x:.3g}", "#374151", backdrop=True)
    for c in gates:
        panel.vline(c.threshold, _GATE, width=1.2)
        panel.label(c.threshold, 0.55, f"gate {c.metric.rpartition('_')[2].upper()} {c.op} {c.threshold:g}", _GATE,
                    anchor="end", backdrop=True)
    return panel


def _split_plot(split: list[tuple[float, float]]) -> str:
    split = sorted(split, key=sum)
    n = len(split)
    # past _MAX_POINTS requests, each step is the mean of a run of neighbours (in end-to-end order)
    edges = [round(i * n / min(n, _MAX_POINTS)) for i in range(min(n, _MAX_POINTS) + 1)]
    groups = [split[a:b] for a, b in zip(edges, edges[1:])]
    prefill = [sum(p for p, _ in g) / len(g) for g in groups]
    top = [sum(p + d for p, d in g) / len(g) for g in groups]
    total = sum(p + d for p, d in split)
    share = sum(p for p, _ in split) / total if total else 0.0
    panel = Panel(0.0, 0.0, _WIDTH, _SPLIT_HEIGHT, xlim=(0.5, n + 0.5), ylim=(0.0, _upper(top, 1.08)))
    panel.frame(f"Where the time goes: prefill {share:.0%}, decode {1 - share:.0%} of all request time",
                "requests, sorted by end-to-end latency", "milliseconds", xgrid=False)
    bounds = [e + 0.5 for e in edges]  # request i (1-based) spans i - 0.5 to i + 0.5
    panel.band(bounds, [0.0] * len(prefill), prefill, _COLORS["prefill"])
    panel.band(bounds, prefill, top, _COLORS["decode"])
    panel.legend([("prefill (TTFT)", _COLORS["prefill"]), ("decode (E2E − TTFT)", _COLORS["decode"])])
    return svg_document(_WIDTH, _SPLIT_HEIGHT, [panel], "Each request's end-to-end time split into prefill and decode")


def _upper(values: list[float], margin: float = 1.05) -> float:
    """The axis' upper limit: a margin above the largest finite value; 1 where nothing is above 0, and the largest
    value itself where the margin would overflow (a record may hold any finite number, a report.json read back an
    infinite threshold)."""
    top = max((v for v in values if math.isfinite(v)), default=0.0)
    if not top > 0:
        return 1.0
    return top * margin if math.isfinite(top * margin) else top


def _spread(n: int, most: int) -> list[int]:
    """Indices 0..n-1, or `most` of them evenly spaced (first and last included) when n is larger."""
    if n <= most:
        return list(range(n))
    return sorted({round(i * (n - 1) / (most - 1)) for i in range(most)})
