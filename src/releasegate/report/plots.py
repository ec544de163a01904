"""Latency plots for the HTML report, drawn with matplotlib (Agg, no pyplot) and inlined as SVG text.

Imported only when an HTML report is rendered, and matplotlib (about half a second to import) only when a plot
is drawn: a run with nothing timed renders its page without it.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

from ..record.gate_report import CriterionRow
from ..stats.intervals import percentile

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["latency_plots"]

_COLORS = {"ttft_ms": "#3b6fb6", "tpot_ms": "#8a5cc2", "e2e_ms": "#2f8f6f", "prefill": "#3b6fb6", "decode": "#e39a3b"}
_TITLES = {"ttft_ms": "TTFT (prefill)", "tpot_ms": "TPOT (decode, per token)", "e2e_ms": "End-to-end"}
_MAX_POINTS = 300  # per curve: keeps the page small for large runs; the percentile lines use every sample
_RC: Any = {  # matplotlib types its rc keys as a Literal of every name
    "svg.fonttype": "none",  # text stays text: small files, the page's own font
    "svg.hashsalt": "releasegate",  # stable element ids: the same run renders the same file
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # ships with matplotlib, so layout never depends on installed fonts
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e4e7eb",
    "axes.edgecolor": "#9aa3ad",
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "xtick.color": "#4b5563",
    "ytick.color": "#4b5563",
}


def latency_plots(samples: dict[str, list[float]], split: list[tuple[float, float]], criteria: list[CriterionRow]) -> dict[str, str]:
    """SVG plots: 'cdf' (distributions of `samples`: ttft_ms, tpot_ms, e2e_ms) and 'split' (per request
    (prefill, decode) in ms); {} when nothing was measured. Latency criteria of the rubric are drawn as lines."""
    if not any(samples.values()):
        return {}
    from matplotlib import rc_context

    with rc_context(_RC):
        plots = {"cdf": _svg(_cdf_figure(samples, criteria))}
        if split:
            plots["split"] = _svg(_split_figure(split))
    return plots


def _cdf_figure(samples: dict[str, list[float]], criteria: list[CriterionRow]) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 2.9), layout="constrained")
    axes = fig.subplots(1, 3)
    for ax, key in zip(axes, _TITLES):
        values = samples.get(key, [])
        ax.set_title(f"{_TITLES[key]}  (n={len(values)})")
        ax.set_xlabel("milliseconds")
        if not values:
            ax.text(0.5, 0.5, "no samples", ha="center", va="center", transform=ax.transAxes, color="#6b7280")
            ax.set_yticks([])
            continue
        ordered = sorted(values)
        keep = _spread(len(ordered), _MAX_POINTS)  # every order statistic up to _MAX_POINTS, evenly spaced above
        xs, ys = [ordered[i] for i in keep], [(i + 1) / len(ordered) for i in keep]
        ax.step(xs, ys, where="post", color=_COLORS[key], linewidth=1.6)
        ax.set_ylim(0, 1.04)
        ax.set_yticks([0, 0.5, 0.95, 1.0], ["0", "50%", "95%", "100%"])
        for q, style in ((50, ":"), (95, "--")):
            x = percentile(values, q)
            ax.axvline(x, color="#6b7280", linestyle=style, linewidth=0.9)
            ax.annotate(f"P{q} {x:.3g}", (x, 0.03 if q == 50 else 0.14), xytext=(3, 0), textcoords="offset points",
                        fontsize=8, color="#374151")
        gates = [c for c in criteria if c.metric.startswith(key + "_p") and not c.slice]
        for c in gates:  # the rubric's latency thresholds on the whole run
            ax.axvline(c.threshold, color="#c93c3c", linewidth=1.2)
            ax.annotate(f"gate {c.metric.rpartition('_')[2].upper()} {c.op} {c.threshold:g}",
                        (c.threshold, 0.55), xytext=(-3, 0), textcoords="offset points", ha="right",
                        fontsize=8, color="#c93c3c", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
        ax.set_xlim(0, max([xs[-1], *(c.threshold for c in gates)]) * 1.05 or 1)
    axes[0].set_ylabel("share of requests ≤ x")
    return fig


def _split_figure(split: list[tuple[float, float]]) -> Figure:
    split = sorted(split, key=sum)
    n = len(split)
    # past _MAX_POINTS requests, each point is the mean of a run of neighbours (in end-to-end order)
    edges = [round(i * n / min(n, _MAX_POINTS)) for i in range(min(n, _MAX_POINTS) + 1)]
    groups = [split[a:b] for a, b in zip(edges, edges[1:])]
    prefill = [sum(p for p, _ in g) / len(g) for g in groups]
    decode = [sum(d for _, d in g) / len(g) for g in groups]
    xs = [(a + b + 1) / 2 for a, b in zip(edges, edges[1:])]
    total = sum(p + d for p, d in split)
    share = sum(p for p, _ in split) / total if total else 0.0
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 2.6), layout="constrained")
    ax = fig.subplots()
    ax.set_title(f"Where the time goes: prefill {share:.0%}, decode {1 - share:.0%} of all request time")
    top = [p + d for p, d in zip(prefill, decode)]
    ax.fill_between(xs, 0, prefill, step="mid", color=_COLORS["prefill"], label="prefill (TTFT)", linewidth=0)
    ax.fill_between(xs, prefill, top, step="mid", color=_COLORS["decode"], label="decode (E2E − TTFT)", linewidth=0)
    ax.set_ylim(0, max(top) * 1.08 or 1)
    ax.set_xlim(0.5, n + 0.5)
    ax.set_xlabel("requests, sorted by end-to-end latency")
    ax.set_ylabel("milliseconds")
    ax.legend(loc="upper left", frameon=False)
    ax.grid(axis="x", visible=False)
    return fig


def _spread(n: int, most: int) -> list[int]:
    """Indices 0..n-1, or `most` of them evenly spaced (first and last included) when n is larger."""
    if n <= most:
        return list(range(n))
    return sorted({round(i * (n - 1) / (most - 1)) for i in range(most)})


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    # inline <svg> needs neither the XML prolog nor the DTD (whose URL is the only address in the file)
    return re.sub(r"\A.*?(?=<svg)", "", text, flags=re.S)
