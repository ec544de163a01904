"""Whether the server completed what a capacity sweep's step offered (see KEEP_UP): the pace its answers came back
at, and how its backlog and E2E grew over the step. Figures of `capacity.step_figures`, read by its verdicts."""

from __future__ import annotations

from .stats import percentile

__all__ = ["KEEP_UP", "DUE_TAG", "growth_ms", "completion", "kept_up_ratio", "kept_up", "unknown_why", "behind_why"]

KEEP_UP = 0.9
"""A step meets the objective only if the server completed what was offered, which three figures decide together
(`kept_up` is the least of them, each >= KEEP_UP):
- the completion share: the pace at which answers came back over the pace requests were sent, both over the
  middle half of the step (the due times of its scheduled sends, and those plus each request's E2E from the
  scheduled send): 1 when the server kept pace, mu / lambda when it completes mu req/s of lambda offered;
- its backlog: span / (span + growth), the growth being the median TTFT from the scheduled send of the step's
  last quarter of requests (in schedule order) minus that of its first quarter;
- its E2E: the same with E2E from the scheduled send, so a server that sends the first token at once and queues
  the rest of the answer (prefill-first schedulers do this under overload) falls behind too.
A rate the server cannot sustain delays every later request more, while one request slowed by a stall moves no
median or quartile by more than one rank. On a short step a growing backlog can still be inside the latency
objective, so without these a burst above the capacity would pass for it."""
DUE_TAG = "sweep_due_s"
"""The tag of a load record that says when its step's schedule had it due: seconds after the step's first
scheduled send. Its answer came back `e2e_sched_ms` later."""


def growth_ms(done: list, field: str) -> float | None:
    """Median `field` (TTFT or E2E from the scheduled send) of the last quarter of requests minus that of the
    first quarter, in schedule order (the number in a sweep request's id, `s03-00042:...`); None with too few."""
    timed = sorted((_order(r.case_id), v) for r in done if (v := getattr(r.timing, field)) is not None)
    quarter = len(timed) // 4
    if quarter < 5:
        return None
    return percentile([t for _, t in timed[-quarter:]], 50) - percentile([t for _, t in timed[:quarter]], 50)


def _order(case_id: str) -> int:
    number = case_id.split(":", 1)[0].rpartition("-")[2]
    return int(number) if number.isdigit() else 0


def completion(done: list) -> dict | None:
    """How long the middle half of the step's answered requests took to be sent (by their due times) and to come
    back (due time + E2E from the scheduled send), and the share of the offered pace that gives (see KEEP_UP).
    None without due times (a run recorded before they were) or with too few answers."""
    timed = [(r.tags[DUE_TAG], r.timing.e2e_sched_ms / 1000) for r in done
             if isinstance(r.tags.get(DUE_TAG), (int, float)) and r.timing.e2e_sched_ms is not None]
    quarter = len(timed) // 4
    if quarter < 5:
        return None
    due = sorted(t for t, _ in timed)
    back = sorted(t + e2e for t, e2e in timed)
    sent_s, back_s = due[-quarter - 1] - due[quarter], back[-quarter - 1] - back[quarter]
    if sent_s <= 0 or back_s <= 0:
        return None
    return {"sent_s": sent_s, "back_s": back_s, "share": sent_s / back_s}


def kept_up_ratio(span_s: float | None, growth_ms: float | None, late_ms: float = 0.0) -> float | None:
    """span / (span + backlog growth less `late_ms` a late client may have added): 1 when the server kept up
    with the schedule, below 1 when its backlog grew."""
    if not span_s or growth_ms is None:
        return None
    return span_s / (span_s + max(0.0, growth_ms - late_ms) / 1000)


def kept_up(span_s, growth_ms, e2e_growth_ms, pace: dict | None, late_ms: float = 0.0) -> float | None:
    """The least of the completion share, the backlog's and the E2E's kept-up ratios (KEEP_UP); None when any is
    unknown. A late client delays every send by at most `late_ms`: each figure is taken with that much forgiven."""
    share = pace["sent_s"] / max(pace["sent_s"], pace["back_s"] - late_ms / 1000) if pace else None
    parts = [share, kept_up_ratio(span_s, growth_ms, late_ms), kept_up_ratio(span_s, e2e_growth_ms, late_ms)]
    return None if None in parts else min(parts)


def unknown_why(figures: dict) -> str:
    """Why whether a step kept up is unknown: which of its figures could not be had."""
    if not figures["span_s"]:
        return "no span for the step"
    if figures["backlog_growth_ms"] is None or figures["e2e_growth_ms"] is None:
        return "too few TTFTs or E2Es from the scheduled send"
    return "no due times recorded for its requests: run the sweep again"


def behind_why(figures: dict) -> str:
    """Why a step fell behind, in every figure that says so."""
    parts = []
    if figures["completion"]["share"] < KEEP_UP:
        parts.append(f"completed {figures['completed_rps']:.3g} req/s of {figures['offered_rps']:.3g} offered "
                     f"({figures['completion']['share']:.2f} < {KEEP_UP:g})")
    for key, what in (("backlog_growth_ms", "its backlog (TTFT from the scheduled send)"),
                      ("e2e_growth_ms", "E2E from the scheduled send")):
        if kept_up_ratio(figures["span_s"], figures[key]) < KEEP_UP:
            parts.append(f"{what} grew {figures[key] / 1000:.3g} s")
    return (f"the server fell behind over the {figures['span_s']:.3g} s step: " + ", ".join(parts)
            + f" (kept up {figures['kept_up']:.2f} < {KEEP_UP:g})")
