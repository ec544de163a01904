"""Number formatting shared by every report format, so a value reads the same in the terminal, Markdown and HTML.
Untrusted text goes through `releasegate.text.inert` in every format."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..record.gate_report import CriterionRow, GateReport, MetricRow
from .paired_models import read_section

if TYPE_CHECKING:  # the load phase's view loads with a run that has one (`load_phase_rows`)
    from .run_models import ServerMetrics

CSP = (
    "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src 'none'; "
    "connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'"
)
"""The Content-Security-Policy of every HTML page releasegate writes: no script, inline or not, and no fetch."""

__all__ = ["CSP", "latency_source_text", "format_value", "format_metric", "format_money", "format_interval", "format_threshold", "bounds_note", "load_phase_rows"]


def format_value(value: Any) -> str:
    """A metric value for people: 4 significant digits, thousands separators for large numbers, '—' for none."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)


def format_metric(metric: str, value: Any) -> str:
    """A metric's value: money for the cost metrics (`format_money`), else `format_value`."""
    return format_money(value) if metric.startswith("cost_") else format_value(value)


def format_money(usd: Any) -> str:
    """US dollars for people: cents from $1 up ('$1,234.50'), 3 significant digits below ('$0.0000759', never
    '$7.59e-05'); '—' for none."""
    if usd is None:
        return "—"
    if abs(usd) >= 1:
        return f"${usd:,.2f}"
    return "$" + (_fixed(usd, 3) if usd else "0")


def _fixed(value: float, digits: int) -> str:
    """`value` in fixed-point notation with `digits` significant digits, trailing zeros dropped."""
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_interval(interval: Any) -> str:
    """Bounds as '[lo, hi]' ('—' for a side the sample is too small to give), or '' when the metric has none.
    Which confidence they are at is said once per table (`bounds_note`)."""
    if not interval:
        return ""
    lo, hi = ("—" if x is None else f"{x:.3g}" for x in interval[:2])
    return f"[{lo}, {hi}]"


def format_threshold(criterion: CriterionRow | dict[str, Any]) -> str:
    """The criterion's comparison (a `CriterionRow`, or its JSON form from report.json), e.g. '>= 0.9'."""
    if isinstance(criterion, dict):
        return f"{criterion['op']} {criterion['threshold']:g}"
    return f"{criterion.op} {criterion.threshold:g}"


def load_phase_rows(load_phase: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The load phase and what the server's /metrics said, as (label, text) rows for people."""
    if not load_phase:
        return []
    from .run_models import LoadPhaseView, ServerMetrics

    phase = read_section(LoadPhaseView, load_phase, "load_phase")
    rows = [
        ("profile", phase.profile),
        ("requests", f"{phase.requests} measured, {phase.warmup} warm-up (left out)"),
        ("duration", f"{format_value(phase.seconds)} s"),
    ]
    workers = phase.client.workers if phase.client else None
    if workers:  # sent from several Ray workers (scale:): each one's own send lag and late start
        lag = " / ".join(format_value(w.send_lag_ms.p99 if w.send_lag_ms else None) for w in workers)
        skew = " / ".join(format_value(w.start_skew_ms) for w in workers)
        rows.append(("load workers", f"{len(workers)} Ray workers; send lag p99 {lag} ms; start skew {skew} ms"))
    server = phase.server_metrics or ServerMetrics()
    if not server.scraped:
        return rows + [("server /metrics", f"not scraped: {server.error or 'no samples'}")]
    return rows + _server_rows(server)


def _server_rows(server: ServerMetrics) -> list[tuple[str, str]]:
    rows = [("server", f"{server.server or 'unknown'} ({server.samples} /metrics samples)")]
    for stats, label, scale in ((server.queue, "queue length", 1), (server.running, "requests running", 1),
                                (server.kv_cache, "KV cache use", 100)):
        unit = "%" if scale == 100 else ""
        rows.append((label, "not exposed by the server" if not stats else
                     " / ".join(f"{name} {format_value(value * scale)}{unit}"
                                for name, value in (("max", stats.max), ("mean", stats.mean), ("last", stats.last)))))
    gap = server.ttft_gap_ms
    rows.append(("client − server TTFT", "the server exposes no TTFT" if not gap else
                 f"client {format_value(gap.client_mean_ms)} ms, server {format_value(gap.server_mean_ms)} ms, "
                 f"gap {format_value(gap.gap_ms)} ms (means)"))
    rows.append(("scaling reading", server.reading))
    return rows


def bounds_note(items: Iterable[MetricRow]) -> str:
    """What the reports' bounds mean, with the confidences really used: 'one-sided bounds at 95% (each side)'.
    `items`: criteria or metrics; those with bounds carry their `confidence`."""
    levels = sorted({float(i.confidence) for i in items if i.bounds is not None and i.confidence})
    if not levels:
        return ""
    shown = ", ".join(f"{c * 100:.4g}%" for c in levels)
    return (f"bounds: [lower, upper], each one-sided at {shown} (a missing side, '—', needs more samples); "
            "rates: Wilson, latency percentiles: order statistics, ITL: bootstrap over requests")


_PHASE_TEXT = {"quality": "quality cases", "load": "load phase", "both": "quality cases and load phase, together"}


def latency_source_text(report: GateReport, *, slices: bool = False) -> str:
    """Where the report's latency (and throughput and cost) figures come from, e.g. 'load phase, closed loop,
    1 in flight, 80 requests'; `slices`: the slices table's latency columns, always the quality cases. A report
    from before `latency_source` still says its phase."""
    source = report.slices_latency_source if slices else report.latency_source
    if source is not None and source.text:
        return source.text
    return _PHASE_TEXT.get("quality" if slices else report.latency_from, "quality cases")
