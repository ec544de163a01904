"""Each anytime-valid criterion's confidence sequence over the cases of a stopping run's order, for report.json
`confidence_sequences` and the HTML report's plot (`record.confidence_sequences`): at up to MAX_POINTS cases,
evenly spread with the deciding case among them, the running bounds its e-processes give on the values of the
completed prefix up to that case, each side at the level its decision is checked at."""

from __future__ import annotations

from typing import Any

from ..decision.stopping import anytime_method, decision_levels
from ..record.confidence_sequences import MAX_POINTS
from ..stats.anytime import confidence_bounds
from .stopping import StopState

__all__ = ["confidence_sequences"]


def confidence_sequences(state: StopState) -> list[dict[str, Any]]:
    """One sequence (report.json's shape) per criterion and tracked baseline row whose values can decide it."""
    out = []
    paired = {key: criterion for key, criterion in state.paired}
    for criterion, key in [*state.keys, *((c, k) for k, c in state.paired)]:
        track = state.tracks[key]
        if track.blocked or not track.values or anytime_method(criterion):
            continue
        out.append(_sequence(key, criterion, state, key in paired))
    return out


def _sequence(key: str, criterion: Any, state: StopState, paired: bool) -> dict[str, Any]:
    track, found = state.tracks[key], state.decided[key]
    to_pass, pass_alpha, fail_alpha = decision_levels(criterion, state.fail_tests)
    n = len(track.values)
    chosen = {round(1 + i * (n - 1) / (MAX_POINTS - 2)) for i in range(MAX_POINTS - 1)} if n > MAX_POINTS else set()
    at: dict[int, int] = {}  # case of the order -> its last value: a case holds several values (one per request)
    for value in sorted((chosen or set(range(1, n + 1))) | ({found.at} if found.at else set())):
        at[track.case_at(value)] = value
    cases, lower, upper = [], [], []
    for case, value in sorted(at.items()):
        shown = track.values[:value]
        pass_lo, pass_hi = confidence_bounds(shown, pass_alpha)
        fail_lo, fail_hi = confidence_bounds(shown, fail_alpha)
        low, high = (pass_lo, fail_hi) if to_pass == "above" else (fail_lo, pass_hi)
        cases.append(case)
        lower.append(round(2.0 * low - 1.0 if paired else low, 6))
        upper.append(round(2.0 * high - 1.0 if paired else high, 6))
    threshold = round(2.0 * criterion.threshold - 1.0 if paired else float(criterion.threshold), 9)
    return {"name": key, "metric": criterion.metric, "op": criterion.op, "threshold": threshold, "paired": paired,
            "verdict": found.verdict.value if found.verdict is not None else None,
            "decided_at": track.case_at(found.at) if found.at else None, "asked": state.asked,
            "cases": cases, "lower": lower, "upper": upper}
