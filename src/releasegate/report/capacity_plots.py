"""Capacity plots for the HTML report: P95 latency against the offered rate, and the server's signals against it.

Imported only when an HTML report of a sweep is rendered (matplotlib, through matplotlib_svg).
"""

from __future__ import annotations

from typing import Any

from ..record.capacity_sweep import CapacityStep, CapacitySweep
from .matplotlib_svg import RC, figure_svg

__all__ = ["capacity_plots"]

_LATENCY = (("ttft_sched_ms_p95", "ttft_ms_p95", "P95 TTFT from the scheduled send", "#3b6fb6"),
            ("tpot_ms_p95", "tpot_ms_p95", "P95 TPOT", "#8a5cc2"),
            ("e2e_sched_ms_p95", "e2e_ms_p95", "P95 E2E from the scheduled send", "#6b7280"))
_SIGNALS = (("queue", "queue (waiting)", "#c93c3c"), ("running", "running", "#2f8f6f"), ("kv_cache", "KV use x10", "#e39a3b"))


def capacity_plots(capacity: CapacitySweep | None) -> dict[str, str]:
    """{'capacity': SVG} with two panels, latency vs rate and signals vs rate; {} without a sweep."""
    steps = sorted(capacity.steps if capacity else [], key=lambda s: s.rate)
    if not steps or capacity is None:
        return {}
    from matplotlib import rc_context  # only when a sweep is drawn
    from matplotlib.figure import Figure

    with rc_context(RC):
        fig = Figure(figsize=(11, 3.0), layout="constrained")
        latency, signals = fig.subplots(1, 2)
        _latency_panel(latency, steps, capacity)
        _signals_panel(signals, steps, capacity)
        return {"capacity": figure_svg(fig)}


def _latency_panel(ax: Any, steps: list[CapacityStep], capacity: CapacitySweep) -> None:
    ax.set_title("P95 latency against the offered rate")
    rates = [s.rate for s in steps]
    for key, slo_key, label, color in _LATENCY:
        points = [(s.rate, v) for s in steps if (v := getattr(s, key)) is not None]
        if not points:
            continue
        ax.plot(*zip(*points), marker="o", markersize=3, color=color, label=label, linewidth=1.4)
        limit = capacity.slo.get(slo_key)
        if limit is not None:
            ax.axhline(limit, color=color, linestyle="--", linewidth=0.9)
    ax.set_yscale("log")
    ax.set_xlabel("offered rate, requests/s")
    ax.set_ylabel("milliseconds (log)")
    _mark_capacity(ax, capacity, rates)
    ax.legend(loc="upper left", frameon=False, fontsize=8)


def _signals_panel(ax: Any, steps: list[CapacityStep], capacity: CapacitySweep) -> None:
    ax.set_title("Server signals (mean per step)")
    drawn = False
    for key, label, color in _SIGNALS:
        points = [(s.rate, mean * (10 if key == "kv_cache" else 1))
                  for s in steps if key in s.signals and (mean := s.signals[key].mean) is not None]
        if points:
            ax.plot(*zip(*points), marker="o", markersize=3, color=color, label=label, linewidth=1.4)
            drawn = True
    if not drawn:
        ax.text(0.5, 0.5, "the server exposed no queue, running or KV figures", ha="center", va="center",
                transform=ax.transAxes, color="#6b7280")
    ax.set_xlabel("offered rate, requests/s")
    _mark_capacity(ax, capacity, [s.rate for s in steps])
    if drawn:
        ax.legend(loc="upper left", frameon=False, fontsize=8)


def _mark_capacity(ax: Any, capacity: CapacitySweep, rates: list[float]) -> None:
    value = capacity.capacity_rps
    if value is None:
        return
    ax.axvline(value, color="#374151", linestyle=":", linewidth=1.0)
    ax.annotate(f"capacity {value:.4g}", (value, 0.92), xycoords=("data", "axes fraction"), xytext=(3, 0),
                textcoords="offset points", fontsize=8, color="#374151")
    ax.set_xlim(0, max(rates) * 1.05)
