"""matplotlib's look and its SVG output for the plots still drawn with it (the capacity sweep and the response-cache
probe): Agg, no pyplot, inlined as SVG text. Imported only when one of those is drawn; the latency plots every run
has are written directly (plots.py), so a page without a sweep or a probe never imports matplotlib.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["RC", "figure_svg"]

RC: Any = {  # matplotlib types its rc keys as a Literal of every name
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


def figure_svg(fig: Figure) -> str:
    """The figure as inline SVG text."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    # inline <svg> needs neither the XML prolog nor the DTD (whose URL is the only address in the file)
    return re.sub(r"\A.*?(?=<svg)", "", text, flags=re.S)
