"""Number formatting shared by every report format, so a value reads the same in the terminal, Markdown and HTML;
and `inert`, the one rule for untrusted text (model outputs, case ids, tags) that any report shows.

Characters that can act instead of being read are shown as visible stand-ins, in every format alike:
C0 controls (tab, LF and CR kept where a format allows them), DEL, C1 controls, the bidirectional overrides,
embeddings, isolates and marks, and lone UTF-16 surrogates. So no output can drive a terminal (ESC and OSC
sequences), reorder what a reader sees (bidi), or make a file invalid (NUL in XML, unencodable surrogates).
"""

from __future__ import annotations

import re

__all__ = [
    "format_value", "format_interval", "format_threshold", "inert", "reveal", "json_inert", "UNSAFE", "bounds_note",
]

UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""Every character `inert` replaces (before `keep` is applied)."""
_TOKEN = re.compile("[\u2400-\u241f\u2421]|\u27e8U\\+([0-9A-F]{4})\u27e9")


def _stand_in(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␀ ... ␛ ... ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\u27e8U+{code:04X}\u27e9"  # ⟨U+202E⟩: C1 controls, bidi controls, lone surrogates


def inert(text, keep: str = "\t\n\r") -> str:
    """Untrusted text with every control, bidi and surrogate character replaced by a visible stand-in: C0 as its
    Control Picture (ESC -> '␛'), DEL as '␡', anything else as '⟨U+XXXX⟩'. Characters in `keep` stay."""
    text = str(text)
    if not UNSAFE.search(text):
        return text
    return UNSAFE.sub(lambda m: m.group() if m.group() in keep else _stand_in(m.group()), text)


def reveal(text: str, keep: str = "\t\n\r") -> str:
    """`inert` undone (with the same `keep`): every stand-in back to its character. Exact for a text that held no
    stand-in glyphs of its own; callers that must be exact compare both readings."""

    def back(m: re.Match) -> str:
        if m.group(1) is None:
            char = "\x7f" if m.group() == "\u2421" else chr(ord(m.group()) - 0x2400)
        else:
            char = chr(int(m.group(1), 16))
        return char if UNSAFE.fullmatch(char) and char not in keep else m.group()

    return _TOKEN.sub(back, text)


def json_inert(text: str) -> str:
    """JSON text with every `UNSAFE` character but JSON's own whitespace written as a \\uXXXX escape: the same
    JSON value, safe to print (such characters can only stand inside JSON strings, where any character may be
    escaped); a lone surrogate, which no UTF-8 file can hold, as \\ufffd."""

    def escape(m: re.Match) -> str:
        char = m.group()
        if char in "\t\n\r":  # JSON whitespace between tokens; json.dumps escapes them inside strings
            return char
        return "\\ufffd" if "\ud800" <= char <= "\udfff" else f"\\u{ord(char):04x}"

    return UNSAFE.sub(escape, text)


def format_value(value) -> str:
    """A metric value for people: 4 significant digits, thousands separators for large numbers, '—' for none."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)


def format_interval(interval) -> str:
    """Bounds as '[lo, hi]' ('—' for a side the sample is too small to give), or '' when the metric has none.
    Which confidence they are at is said once per table (`bounds_note`)."""
    if not interval:
        return ""
    lo, hi = ("—" if x is None else f"{x:.3g}" for x in interval[:2])
    return f"[{lo}, {hi}]"


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
    workers = (load_phase.get("client") or {}).get("workers")
    if workers:  # sent from several Ray workers (scale:): each one's own send lag and late start
        lag = " / ".join(format_value((w.get("send_lag_ms") or {}).get("p99")) for w in workers)
        skew = " / ".join(format_value(w.get("start_skew_ms")) for w in workers)
        rows.append(("load workers", f"{len(workers)} Ray workers; send lag p99 {lag} ms; start skew {skew} ms"))
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


def bounds_note(items) -> str:
    """What the reports' bounds mean, with the confidences really used: 'one-sided bounds at 95% (each side)'.
    `items`: criteria or metric dicts; those with bounds carry their `confidence`."""
    levels = sorted({float(i["confidence"]) for i in items if i.get("bounds") is not None and i.get("confidence")})
    if not levels:
        return ""
    shown = ", ".join(f"{c * 100:.4g}%" for c in levels)
    return (f"bounds: [lower, upper], each one-sided at {shown} (a missing side, '—', needs more samples); "
            "rates: Wilson, latency percentiles: order statistics, ITL: bootstrap over requests")
