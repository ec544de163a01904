"""Small charts written directly as SVG text: panels with linear axes, ticks, grid, step curves, filled bands,
marker lines and labels. The HTML report's latency plots use it, so a page with latency needs no plotting library
(importing and laying out matplotlib cost more than everything else `gate` does).

Every text is XML-escaped here; coordinates are rounded to 0.1 px, so the same data writes the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import field
from xml.sax.saxutils import escape, quoteattr

from ..data_classes import dataclass

__all__ = ["Panel", "svg_document", "nice_ticks", "tick_text"]

INK, MUTED, GRID, AXIS = "#374151", "#4b5563", "#e4e7eb", "#9aa3ad"
FONT = 'font-family="DejaVu Sans, Liberation Sans, Arial, sans-serif"'
_TITLE_H, _BOTTOM, _LEFT, _RIGHT = 22.0, 34.0, 48.0, 10.0  # room for the title, x ticks + label, y ticks + label


def nice_ticks(low: float, high: float, most: int = 6) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 times a power of ten) covering [low, high], at most about `most`."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else []
    raw = (high - low) / max(most - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    count = int(math.floor((high - first) / step + 1e-9)) + 1
    return [round(first + i * step, 12) for i in range(count)]


def tick_text(value: float) -> str:
    """A tick label: no trailing zeros, thousands grouped (1,500), small values to 3 significant digits."""
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _n(value: float) -> str:
    """A coordinate in px: 0.1 px steps; one that overflowed (a record may hold any finite number) is pinned far
    outside the picture, where the <svg> clips it, rather than written as nan or inf."""
    if not math.isfinite(value):
        value = 0.0 if math.isnan(value) else math.copysign(1e5, value)
    value = max(-1e5, min(1e5, value))
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


@dataclass
class Panel:
    """One chart in a document: a box at (left, top) of `width` x `height` px, holding its title, axes and plot
    area, and data limits `xlim` and `ylim` mapped linearly onto the plot area."""

    left: float
    top: float
    width: float
    height: float
    xlim: tuple[float, float] = (0.0, 1.0)
    ylim: tuple[float, float] = (0.0, 1.0)
    parts: list[str] = field(default_factory=list)

    @property
    def box(self) -> tuple[float, float, float, float]:
        """The plot area: x0, y0 (top), x1, y1 (bottom) in px."""
        return (self.left + _LEFT, self.top + _TITLE_H, self.left + self.width - _RIGHT, self.top + self.height - _BOTTOM)

    def x(self, value: float) -> float:
        x0, _, x1, _ = self.box
        low, high = self.xlim
        return x0 + (value - low) / ((high - low) or 1.0) * (x1 - x0)

    def y(self, value: float) -> float:
        _, y0, _, y1 = self.box
        low, high = self.ylim
        return y1 - (value - low) / ((high - low) or 1.0) * (y1 - y0)

    def frame(self, title: str, xlabel: str, ylabel: str = "", *, yticks: Sequence[tuple[float, str]] | None = None,
              xgrid: bool = True) -> None:
        """Title, grid, the left and bottom axes, ticks and axis labels. `yticks`: (value, label) pairs instead of
        round numbers."""
        x0, y0, x1, y1 = self.box
        self.text(self.left + 4, self.top + 14, title, size=12.5, weight="bold", color=INK)
        ys = list(yticks) if yticks is not None else [(v, tick_text(v)) for v in nice_ticks(*self.ylim)]
        for value, label in ys:
            y = self.y(value)
            self.parts.append(f'<line x1="{_n(x0)}" y1="{_n(y)}" x2="{_n(x1)}" y2="{_n(y)}" stroke="{GRID}"/>')
            self.text(x0 - 4, y + 3.5, label, anchor="end", color=MUTED, size=10)
        for value in nice_ticks(*self.xlim):
            x = self.x(value)
            if xgrid:
                self.parts.append(f'<line x1="{_n(x)}" y1="{_n(y0)}" x2="{_n(x)}" y2="{_n(y1)}" stroke="{GRID}"/>')
            self.parts.append(f'<line x1="{_n(x)}" y1="{_n(y1)}" x2="{_n(x)}" y2="{_n(y1 + 4)}" stroke="{AXIS}"/>')
            self.text(x, y1 + 15, tick_text(value), anchor="middle", color=MUTED, size=10)
        self.parts.append(f'<path d="M{_n(x0)} {_n(y0)}V{_n(y1)}H{_n(x1)}" fill="none" stroke="{AXIS}"/>')
        self.text((x0 + x1) / 2, y1 + 29, xlabel, anchor="middle", color=INK)
        if ylabel:
            cx, cy = self.left + 10, (y0 + y1) / 2
            self.text(cx, cy, ylabel, anchor="middle", color=INK, rotate=True)

    def step(self, xs: Sequence[float], ys: Sequence[float], color: str, width: float = 1.6) -> None:
        """A step curve that holds each y from its x to the next x (matplotlib's where='post')."""
        if not xs:
            return
        d = [f"M{_n(self.x(xs[0]))} {_n(self.y(ys[0]))}"]
        d += [f"H{_n(self.x(x))}V{_n(self.y(y))}" for x, y in zip(xs[1:], ys[1:])]
        self.parts.append(f'<path d="{"".join(d)}" fill="none" stroke="{color}" stroke-width="{width:g}"/>')

    def band(self, edges: Sequence[float], lower: Sequence[float], upper: Sequence[float], color: str) -> None:
        """A filled band between two step curves: value i holds from edges[i] to edges[i + 1]."""
        if not lower:
            return
        top = [f"{_n(self.x(a))} {_n(self.y(v))} {_n(self.x(b))} {_n(self.y(v))}"
               for a, b, v in zip(edges, edges[1:], upper)]
        bottom = [f"{_n(self.x(b))} {_n(self.y(v))} {_n(self.x(a))} {_n(self.y(v))}"
                  for a, b, v in reversed(list(zip(edges, edges[1:], lower)))]
        self.parts.append(f'<path d="M{" L".join(top + bottom)}Z" fill="{color}"/>')

    def vline(self, value: float, color: str, *, dash: str = "", width: float = 0.9) -> None:
        _, y0, _, y1 = self.box
        x = _n(self.x(value))
        pattern = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x}" y1="{_n(y0)}" x2="{x}" y2="{_n(y1)}" stroke="{color}" '
                          f'stroke-width="{width:g}"{pattern}/>')

    def label(self, x_value: float, y_value: float, text: str, color: str, *, anchor: str = "start",
              backdrop: bool = False) -> None:
        """A small label beside the data point (3 px off it, on the side `anchor` says; to its left when the
        point is too near the right edge for the text to fit)."""
        x = self.x(x_value)
        if anchor == "start" and x + 6.0 * len(text) > self.box[2] + _RIGHT:
            anchor = "end"
        shift = {"start": 3.0, "end": -3.0}.get(anchor, 0.0)
        self.text(x + shift, self.y(y_value) + 3.5, text, anchor=anchor, color=color, size=10.5, backdrop=backdrop)

    def note(self, text: str) -> None:
        """A line in the middle of the plot area (an empty panel's 'no samples')."""
        x0, y0, x1, y1 = self.box
        self.text((x0 + x1) / 2, (y0 + y1) / 2, text, anchor="middle", color="#6b7280")

    def legend(self, entries: Sequence[tuple[str, str]]) -> None:
        """Colour swatches with their labels at the top left of the plot area."""
        x0, y0, _, _ = self.box
        for i, (label, color) in enumerate(entries):
            y = y0 + 8 + i * 16
            self.parts.append(f'<rect x="{_n(x0 + 8)}" y="{_n(y - 5)}" width="18" height="9" fill="{color}"/>')
            self.text(x0 + 32, y + 3.5, label, color=INK)

    def text(self, x: float, y: float, text: str, *, anchor: str = "start", color: str = INK, size: float = 11.0,
             weight: str = "", rotate: bool = False, backdrop: bool = False) -> None:
        attrs = [f'x="{_n(x)}" y="{_n(y)}"', f'font-size="{size:g}"', f'fill="{color}"']
        if anchor != "start":
            attrs.append(f'text-anchor="{anchor}"')
        if weight:
            attrs.append(f'font-weight="{weight}"')
        if rotate:
            attrs.append(f'transform="rotate(-90 {_n(x)} {_n(y)})"')
        if backdrop:  # a white halo under the letters keeps a label readable over lines
            attrs.append('stroke="#ffffff" stroke-width="3" paint-order="stroke"')
        self.parts.append(f'<text {" ".join(attrs)}>{escape(text)}</text>')


def svg_document(width: float, height: float, panels: Sequence[Panel], title: str) -> str:
    """One inline <svg> holding the panels; `title` is its accessible name. Inline in HTML it needs no xmlns, so
    the page holds no address at all."""
    body = "".join(part for panel in panels for part in panel.parts)
    return (f'<svg viewBox="0 0 {_n(width)} {_n(height)}" '
            f'width="{_n(width)}" height="{_n(height)}" role="img" aria-label={quoteattr(title)} {FONT}>'
            f"<title>{escape(title)}</title>{body}</svg>")
