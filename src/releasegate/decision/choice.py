"""Which served variant or server to choose, from `Contender`s (one per run, the reference first).

Rules, once for `servers`' recommendation and the served variants' choice:
- a contender qualifies when its own gate says PASS, it is comparable with the reference, its quality is shown
  non-inferior to the reference's (`decision.comparison`), a sweep it ran established a capacity, and, when it
  speculates, its server proposed draft tokens (one that proposed none is not speculative) without changing the
  greedy answers; and, where it ran a load phase, at any temperature, its flip probe spoke (pairs observed alone
  and beside others, covering enough cases) and its answers under load change in no larger a share of cases than
  the quality margin (the upper bound of `load_flip_rate`; for the reference, which needs no proof against
  itself, its measured rate), plus, at temperature > 0, how often its own repeated draws disagree (sampling);
- the reference must qualify itself (whole, healthy, its gate PASS) before anything is chosen over it;
- another contender is better than the reference only when its interval says so: its whole range of cost (or of
  capacity, or of the latency p95's bounds) lies on the better side of the reference's; otherwise the reference
  stays;
- a choice resting on a run whose required review was waived (`--allow-pending`) is NEEDS_REVIEW, not PASS, and
  says so.
"""

from __future__ import annotations

import math
from typing import Any

from ..data_classes import dataclass
from ..record.decision_evidence import Contender
from .verdicts import INCONCLUSIVE, NEEDS_REVIEW, PASS, TARGET_ERROR, Decision, decision

__all__ = ["Choice", "choose", "why_not", "BASES", "unserved"]

BASES = {
    "cost": ("cost", "lower", "cost per 1M output tokens"),
    "capacity": ("capacity", "higher", "capacity at the latency objective"),
    "latency": ("e2e_p95", "lower", "E2E p95"),
}
"""What a contender is ranked on, in the order tried: the first basis every qualifying contender has a range of."""


@dataclass(frozen=True)
class Choice:
    """The chosen contender (None: none), the basis it was ranked on, the decision, and why each other one was
    not chosen."""

    chosen: str | None
    basis: str | None
    decision: Decision
    why_not: dict[str, str | None]

    def as_dict(self) -> dict[str, Any]:
        """The served variants' result keys."""
        return {"choice": self.chosen, "rule": self.basis, "choice_reason": self.decision.reason,
                **self.decision.as_dict()}

    def as_recommendation(self) -> dict[str, Any]:
        """`servers`' result keys."""
        return {"recommended": self.chosen, "recommendation": self.decision.reason, **self.decision.as_dict()}


def why_not(c: Contender) -> str | None:
    """Why a contender does not qualify; None when it does."""
    if c.verdict != PASS:
        return f"its gate said {c.verdict}"
    if c.not_comparable:
        return c.not_comparable
    if c.swept and c.capacity is None:
        return "its capacity sweep met the objective at no rate"
    if not c.is_reference and c.parity != PASS:
        return f"quality not shown non-inferior to the reference ({c.parity or 'not compared'})"
    if c.speculative and not c.draft_tokens:
        return ("its server proposed no draft token: it did not speculate" if c.draft_tokens == 0
                else "its draft tokens were not counted: speculation not shown")
    if c.flip_margin is not None and c.load_flip is None and c.load_flip_unknown:
        return f"its answers under load were not shown stable: {c.load_flip_unknown}"
    if c.load_flip is not None and c.flip_margin is not None:
        # the reference needs no proof against itself (as its quality needs no parity): its measured rate must
        # be within the margin; another contender must show it, its upper bound within the margin; at
        # temperature > 0 the change its own draws show alone is sampling, not the load
        value, upper = c.load_flip
        limit = c.flip_margin + (c.flip_variation or 0.0)
        if (value if c.is_reference else upper) > limit:
            shown = f"load_flip_rate {value:.3g}" if c.is_reference else f"load_flip_rate {value:.3g}, upper bound {upper:.3g}"
            over = f"the margin {c.flip_margin:g}" + (f" plus its draws' variation {c.flip_variation:.3g}"
                                                     if c.flip_variation else "")
            return f"its answers change under load: {shown} over {over}"
    return c.speculation_changed


def choose(contenders: list[Contender], *, bases: tuple[str, ...] = ("cost", "capacity", "latency")) -> Choice:
    """The choice among `contenders` (the reference first): the reference, unless another qualifying one is shown
    better on the first basis every qualifying contender has a range of."""
    reasons = {c.name: why_not(c) for c in contenders}
    ref = contenders[0] if contenders else None
    if ref is None or reasons[ref.name] is not None:
        states = "; ".join(f"{c.name}: {reasons[c.name] or 'qualifies'}" for c in contenders) or "nothing ran"
        why = f"the reference {ref.name} does not qualify, so nothing is chosen over it" if ref else "no contender"
        return Choice(None, None, decision(INCONCLUSIVE, f"no choice: {why} ({states})"), reasons)
    ok = [c for c in contenders if reasons[c.name] is None]
    basis = next((b for b in bases if all(_range(c, b) is not None for c in ok)), None)
    best, why = _best(ref, ok, basis)
    waived = [c.name for c in {ref.name: ref, best.name: best}.values() if c.review_waived]
    others = len(contenders) - len(ok)
    rest = f"; {others} not qualifying" if others else ""
    if waived:
        return Choice(best.name, basis, decision(NEEDS_REVIEW, f"{best.name}: {why}{rest}; required human review "
                                                 f"of {', '.join(waived)} was waived (--allow-pending): not a PASS "
                                                 "until it is reviewed"), reasons)
    return Choice(best.name, basis, decision(PASS, f"{best.name}: {why}{rest}"), reasons)


def _range(c: Contender, basis: str) -> tuple[float, float] | None:
    found: tuple[float, float] | None = getattr(c, BASES[basis][0])
    return found


def _span_of(c: Contender, basis: str) -> tuple[float, float]:
    """The range of a contender known to have one (every qualifying contender has the basis's range)."""
    found = _range(c, basis)
    if found is None:
        raise ValueError(f"{c.name} has no {basis} range")
    return found


def _best(ref: Contender, ok: list[Contender], basis: str | None) -> tuple[Contender, str]:
    if basis is None:
        return ref, "the reference qualifies and no figure every qualifying contender has can rank the others"
    _, side, what = BASES[basis]
    lo, hi = _span_of(ref, basis)
    better = [c for c in ok if c is not ref and _shown_better(_span_of(c, basis), (lo, hi), side)]
    if not better:
        return ref, (f"the reference stays: no qualifying contender's {what} interval lies wholly "
                     f"{'below' if side == 'lower' else 'above'} the reference's {_span(lo, hi)}")
    key = (lambda c: _span_of(c, basis)[1]) if side == "lower" else (lambda c: -_span_of(c, basis)[0])
    best = min(better, key=key)
    b_lo, b_hi = _span_of(best, basis)
    return best, (f"{what} {_span(b_lo, b_hi)} lies wholly {'below' if side == 'lower' else 'above'} the "
                  f"reference {ref.name}'s {_span(lo, hi)}; quality non-inferior to it")


def _shown_better(mine: tuple[float, float], ref: tuple[float, float], side: str) -> bool:
    return mine[1] < ref[0] if side == "lower" else mine[0] > ref[1]


def _span(lo: float, hi: float) -> str:
    return f"[{lo:.4g}, {'inf' if math.isinf(hi) else f'{hi:.4g}'}]"


def unserved(why: str) -> Decision:
    """A variant whose server could not be had: nothing of it was measured."""
    return decision(TARGET_ERROR, why)
