"""The response-cache probe's curve for the HTML report: hit rate and wrong-hit rate (with its upper bound)
against the similarity threshold. Imported only when an HTML report of a semantic probe is rendered (matplotlib,
through matplotlib_svg)."""

from __future__ import annotations

from ..record.cache_probe_report import CacheProbeSection
from .matplotlib_svg import RC, figure_svg

__all__ = ["cache_probe_plot"]


def cache_probe_plot(probe: CacheProbeSection | None) -> str:
    """An SVG of the curve; '' without a semantic probe of two thresholds or more."""
    rows = sorted((r for r in (probe.rows if probe else []) if r.threshold is not None), key=lambda r: r.threshold or 0)
    if len(rows) < 2 or probe is None:
        return ""
    from matplotlib import rc_context  # only when a curve is drawn
    from matplotlib.figure import Figure

    with rc_context(RC):
        fig = Figure(figsize=(7, 3.0), layout="constrained")
        ax = fig.subplots()
        x = [r.threshold or 0.0 for r in rows]
        ax.plot(x, [r.hit_rate or 0 for r in rows], marker="o", markersize=3, color="#3b6fb6", label="hit rate")
        ax.plot(x, [r.harmful_share or 0 for r in rows], marker="o", markersize=3, color="#c93c3c",
                label="harmful share of hits")
        ax.plot(x, [r.wrong_hit_upper or 0 for r in rows], linestyle="--", color="#c93c3c", linewidth=0.9,
                label="harmful-share upper bound")
        if probe.recommended is not None and probe.recommended.limit is not None:
            ax.axhline(probe.recommended.limit, color="#6b7280", linestyle=":", linewidth=0.9, label="limit")
        if probe.threshold is not None:
            ax.axvline(probe.threshold, color="#2f8f6f", linestyle=":", linewidth=0.9, label="deployed threshold")
        ax.set_xlabel("similarity threshold")
        ax.set_ylabel("share of cases")
        ax.set_ylim(0, 1)
        ax.legend(loc="upper right", frameon=False, fontsize=8)
        return figure_svg(fig)
