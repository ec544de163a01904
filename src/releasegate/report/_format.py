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


def load_phase_rows(load_phase: dict | None) -> list[tuple[str, str]]:
    """The load phase and what the server's /metrics said, as (label, text) rows for people."""
    if not load_phase:
        return []
    rows = [
        ("profile", load_phase.get("profile", "")),
        ("requests", f"{load_phase.get('requests')} measured, {load_phase.get('warmup', 0)} warm-up (left out)"),
        ("duration", f"{format_value(load_phase.get('seconds'))} s"),
    ]
    server = load_phase.get("server_metrics") or {}
    if "error" in server or not server:
        return rows + [("server /metrics", f"not scraped: {server.get('error') or 'no samples'}")]
    rows.append(("server", f"{server.get('server') or 'unknown'} ({server.get('samples')} /metrics samples)"))
    for key, label, scale in (("queue", "queue length", 1), ("running", "requests running", 1), ("kv_cache", "KV cache use", 100)):
        stats = server.get(key)
        unit = "%" if scale == 100 else ""
        rows.append((label, "not exposed by the server" if not stats else
                     " / ".join(f"{name} {format_value(stats[name] * scale)}{unit}" for name in ("max", "mean", "last"))))
    gap = server.get("ttft_gap_ms")
    rows.append(("client − server TTFT", "the server exposes no TTFT" if not gap else
                 f"client {format_value(gap['client_mean_ms'])} ms, server {format_value(gap['server_mean_ms'])} ms, "
                 f"gap {format_value(gap['gap_ms'])} ms (means)"))
    rows.append(("scaling reading", server.get("reading", "")))
    return rows
