"""Whether the server completed what a capacity sweep's step offered (see KEEP_UP): how its backlog and its E2E
grew over the step, and the share of the offered rate it completed that the E2E's growth gives. Figures of
`capacity.step_figures`, read by its verdicts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..stats.intervals import percentile

if TYPE_CHECKING:
    from .step_figures import StepFigures

__all__ = ["KEEP_UP", "growth_ms", "e2e_growth_ms", "completion_share", "kept_up_ratio", "kept_up", "unknown_why",
           "behind_why"]

KEEP_UP = 0.9
"""A step meets the objective only if the server completed what was offered, which two figures decide together
(`kept_up` is the lesser of them, each >= KEEP_UP):
- the completion share: the rate the server completed over the rate offered. A server completing mu req/s of
  lambda offered queues the rest, so each later answer comes back later: E2E from the scheduled send grows by
  lambda / mu - 1 s per second of the schedule, and the share is 1 / (1 + that growth rate). The growth is the
  median E2E of the step's last quarter of requests (in schedule order) minus that of its first quarter, each
  answer's own length taken out at the step's median time per output token (so a step whose later prompts
  happen to ask for longer answers has not fallen behind). A server that sends the first token at once and
  queues the rest of the answer (prefill-first schedulers do this under overload) keeps TTFT flat and still
  falls behind here;
- its backlog: span / (span + growth), the growth being the same difference of median TTFT from the scheduled
  send.
A rate the server cannot sustain delays every later request more, while one request slowed by a stall moves
neither median. On a short step a growing backlog can still be inside the latency objective, so without these a
burst above the capacity would pass for it."""


def growth_ms(done: list[Any], field: str, less: Callable[[Any], float] | None = None) -> float | None:
    """Median `field` (TTFT or E2E from the scheduled send; less `less(record)` ms when given) of the last quarter
    of requests minus that of the first quarter, in schedule order (the number in a sweep request's id,
    `s03-00042:...`); None with too few."""
    timed = sorted((_order(r.case_id), v - (less(r) if less else 0.0))
                   for r in done if (v := getattr(r.timing, field)) is not None)
    quarter = len(timed) // 4
    if quarter < 5:
        return None
    last, first = percentile([t for _, t in timed[-quarter:]], 50), percentile([t for _, t in timed[:quarter]], 50)
    assert last is not None and first is not None  # a quarter holds 5 or more
    return last - first


def _order(case_id: str) -> int:
    number = case_id.split(":", 1)[0].rpartition("-")[2]
    return int(number) if number.isdigit() else 0


def e2e_growth_ms(done: list[Any]) -> float | None:
    """How E2E from the scheduled send grew over the step (growth_ms), each answer's decode at the step's median
    TPOT taken out: (output tokens - 1) x that TPOT. Without token counts or TPOTs, plain E2E."""
    tpots = [r.timing.tpot_ms for r in done if r.timing.tpot_ms is not None]
    per_token = (percentile(tpots, 50) or 0.0) if tpots and all(r.tokens.output is not None for r in done) else 0.0
    return growth_ms(done, "e2e_sched_ms", less=lambda r: max(0, (r.tokens.output or 1) - 1) * per_token)


def completion_share(span_s: float | None, growth: float | None, n: int, late_ms: float = 0.0) -> float | None:
    """The share of the offered rate the server completed, from the E2E's growth between the medians of the
    step's first and last quarter of its n answered requests, which lie (n - n // 4) / (n - 1) of the span
    apart: 1 / (1 + growth rate). `late_ms` a late client may have added is forgiven."""
    if not span_s or growth is None or n < 2:
        return None
    apart_s = span_s * (n - n // 4) / (n - 1)
    return 1 / (1 + max(0.0, growth - late_ms) / 1000 / apart_s)


def kept_up_ratio(span_s: float | None, growth_ms: float | None, late_ms: float = 0.0) -> float | None:
    """span / (span + backlog growth less `late_ms` a late client may have added): 1 when the server kept up
    with the schedule, below 1 when its backlog grew."""
    if not span_s or growth_ms is None:
        return None
    return span_s / (span_s + max(0.0, growth_ms - late_ms) / 1000)


def kept_up(figures: StepFigures, late_ms: float = 0.0) -> float | None:
    """The lesser of a step's completion share and its backlog's kept-up ratio (KEEP_UP); None when either is
    unknown. A late client delays every send by at most `late_ms`: each figure is taken with that forgiven."""
    span = figures.span_s
    share = completion_share(span, figures.e2e_growth_ms, figures.answered, late_ms)
    ratio = kept_up_ratio(span, figures.backlog_growth_ms, late_ms)
    return None if share is None or ratio is None else min(share, ratio)


def unknown_why(figures: StepFigures) -> str:
    """Why whether a step kept up is unknown: which of its figures could not be had."""
    if not figures.span_s:
        return "no span for the step"
    return "too few TTFTs or E2Es from the scheduled send"


def behind_why(figures: StepFigures) -> str:
    """Why a step fell behind, in every figure that says so (`kept_up` is known and below KEEP_UP)."""
    parts = []
    assert figures.span_s and figures.kept_up is not None  # a step falls behind only on known figures
    if figures.completion_share is not None and figures.completion_share < KEEP_UP:
        assert figures.completed_rps is not None and figures.offered_rps is not None and figures.e2e_growth_ms is not None
        parts.append(f"completed {figures.completed_rps:.3g} req/s of {figures.offered_rps:.3g} offered "
                     f"(E2E from the scheduled send grew {figures.e2e_growth_ms / 1000:.3g} s)")
    ratio = kept_up_ratio(figures.span_s, figures.backlog_growth_ms)
    if ratio is not None and ratio < KEEP_UP and figures.backlog_growth_ms is not None:
        parts.append(f"its backlog (TTFT from the scheduled send) grew {figures.backlog_growth_ms / 1000:.3g} s")
    return (f"the server fell behind over the {figures.span_s:.3g} s step: " + ", ".join(parts)
            + f" (kept up {figures.kept_up:.2f} < {KEEP_UP:g})")
