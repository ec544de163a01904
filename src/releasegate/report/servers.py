"""The server comparison (`releasegate servers`) in every format: terminal, Markdown, HTML, JSON, CSV."""

from __future__ import annotations

import json
from typing import Any

from ..record.decided_results import ServersResult, typed
from ..record.gate_report import LatencySource
from ..redaction import redact_values
from ..spreadsheet import csv_text
from ..text import inert
from .decided_models import ServersView, ServerTarget
from .formatting import format_money, format_value
from .markdown import md_label
from .paired_models import read_section
from .terminal import Col, FitTable

__all__ = ["COLUMNS", "SERVERS_FORMATS", "servers_rows", "render_servers", "servers_table", "load_warning"]

SERVERS_FORMATS = ("md", "html", "json", "csv")
"""What `render_servers` renders (`servers --format` offers these)."""

COLUMNS = (
    ("run_id", "run"), ("target", "target"), ("verdict", "verdict"), ("accuracy", "accuracy"),
    ("format_compliance", "format"), ("ttft_ms_p95", "TTFT p95 ms"), ("tpot_ms_p95", "TPOT p95 ms"),
    ("bottleneck", "bound by"), ("output_tokens_per_s", "tok/s"), ("cost_per_1m_output_tokens", "$/1M tok"),
    ("capacity_rps", "capacity req/s"), ("cost_per_1m_at_capacity", "$/1M at capacity"),
    ("identical_outputs", "identical outputs"), ("shared_share", "ref cases shared"), ("accuracy_delta", "accuracy vs ref"),
    ("quality_verdict", "quality vs ref"), ("comparable", "comparable"), ("latency_source", "latency measured on"),
)
_MONEY = ("cost_per_1m_output_tokens", "cost_per_1m_at_capacity")
_PARITY_KEYS = ("identical_outputs", "shared_share", "accuracy_delta", "quality_verdict", "comparable")


def _read(comparison: dict[str, Any] | ServersView) -> ServersView:
    if isinstance(comparison, ServersView):
        return comparison
    return read_section(ServersView, comparison, "servers")


def servers_rows(comparison: dict[str, Any] | ServersView) -> list[list[str]]:
    """One row of text cells per target (the reference's parity cells say 'reference')."""
    return [_row(t) for t in _read(comparison).targets]


def _row(target: ServerTarget) -> list[str]:
    parity = target.parity
    cells = {**target.figures(), **(parity.model_dump(exclude_unset=True) if parity else {})}
    if parity is not None:
        cells["identical_outputs"] = f"{parity.identical_outputs}/{parity.shared_cases}"
    row = []
    for key, _ in COLUMNS:
        value = cells.get(key)
        if parity is None and key in _PARITY_KEYS:
            value = "reference"
        elif key == "comparable" and value is None:
            value = "yes"
        if key == "latency_source":
            value = _source_text(target)
        if key == "capacity_rps" and value is not None and target.capacity_at_least:
            value = f">= {format_value(value)}"
        row.append(value if isinstance(value, str) else (format_money if key in _MONEY else format_value)(value))
    return [inert(c) for c in row]


def _source_text(target: ServerTarget) -> str:
    source = target.latency_source
    return source.text if isinstance(source, LatencySource) and source.text else (target.latency_from or "—")


def load_warning(comparison: dict[str, Any] | ServersView) -> str | None:
    """A warning when the targets' latency figures were measured under different loads (another phase, or
    another number of requests in flight): their TTFT and TPOT then answer different questions. None otherwise."""
    return _load_warning(_read(comparison))


def _load_warning(view: ServersView) -> str | None:
    targets = view.targets
    sources = [t.latency_source if isinstance(t.latency_source, LatencySource) else None for t in targets]
    loads = {((s.phase if s else None) or t.latency_from, s.in_flight if s else None) for t, s in zip(targets, sources)}
    if len(loads) < 2:
        return None
    each = "; ".join(f"{t.run_id}: {_source_text(t)}" for t in targets)
    return f"the targets' latency was measured under different loads, so TTFT and TPOT are not like for like: {each}"


def servers_table(comparison: dict[str, Any] | ServersView) -> FitTable:
    """The terminal table, whole at any width (see `FitTable`)."""
    view = _read(comparison)
    columns = [Col(label, "left" if key in ("run_id", "target", "verdict", "bottleneck", "quality_verdict") else "right",
                   free=key == "latency_source") for key, label in COLUMNS]
    return FitTable(f"servers: {len(view.targets)} targets, reference {view.reference}", columns, [_row(t) for t in view.targets])


def render_servers(comparison: dict[str, Any], fmt: str) -> str:
    """The comparison in `fmt` (json, csv, md, html); registered secrets redacted in the data first, read through
    `ServersResult` (one without its decision is an error, never a report)."""
    comparison = typed(ServersResult, redact_values(comparison))
    if fmt == "json":
        return json.dumps(comparison, indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        return csv_text([[label for _, label in COLUMNS], *servers_rows(comparison)])
    if fmt == "md":
        return _markdown(_read(comparison))
    if fmt == "html":
        return _html(_read(comparison))
    raise ValueError(fmt)


def _markdown(comparison: ServersView) -> str:
    lines = ["# Server comparison", "", f"**Recommendation:** {md_label(comparison.recommendation)}", "",
             "| " + " | ".join(label for _, label in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(md_label(c) for c in row) + " |" for row in (_row(t) for t in comparison.targets)]
    lines += ["", _BOUND_NOTE, ""] + ([f"**Warning:** {md_label(w)}", ""] if (w := _load_warning(comparison)) else [])
    return "\n".join(lines)


_BOUND_NOTE = ("bound by: where the median request spends most of its time, prefill (TTFT at least half of E2E) or "
               "decode. Parity is on the cases each target shares with the reference (the same id, input and expected "
               "answer), greedy outputs compared as text; it counts only when decided on enough of the reference's "
               "cases. Each run is judged again from its records.")


def _html(comparison: ServersView) -> str:
    from jinja2 import Environment

    env = Environment(autoescape=True)
    template = env.from_string(_PAGE)
    return template.render(recommendation=comparison.recommendation, columns=[label for _, label in COLUMNS],
                           rows=[_row(t) for t in comparison.targets], note=_BOUND_NOTE,
                           warning=inert(_load_warning(comparison) or "", keep=""))


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>releasegate: server comparison</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.3rem .5rem;text-align:right}td:nth-child(-n+3),th{text-align:left}</style>
</head><body>
<h1>Server comparison</h1>
<p><strong>Recommendation:</strong> {{ recommendation }}</p>
<table><thead><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in rows %}<tr>{% for v in row %}<td>{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody></table>
<p>{{ note }}</p>
{% if warning %}<p><strong>Warning:</strong> {{ warning }}</p>{% endif %}
</body></html>
"""
