"""The stopping feature's report of a spend budget (`budget:`, `check --budget-usd`): what the run spent, by
part, and, when dispatch stopped at a cap, that it did (`budget_exhausted`) and the cases each undecided
criterion still needs. The verdicts are the stopping feature's: a budgeted run asks its cases in the seed's random order and is
judged on the longest completed prefix of it (`gate.stopping_feature`), so a criterion decided before the cap
keeps its verdict and any other is undecided (INCONCLUSIVE), never FAIL for want of cases."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from ..data_classes import dataclass
from ..decision.stopping import cases_to_decide
from .context import GateContext
from .run_view import BudgetView
from .run_view import budget_of as run_budget
from .stopping import StopState

__all__ = ["budget_section", "budget_rows", "budget_of"]

StateOf = Callable[[GateContext], StopState | None]


def budget_of(ctx: GateContext) -> BudgetView | None:
    """run.json `budget`, or None for a run with no budget."""
    return run_budget(ctx.info)


@dataclass(frozen=True)
class Needs:
    """What an undecided criterion still needs: `at_most` the cases of the order not asked, `projected` the cases
    its e-process would need at the rate seen so far (None: not within them)."""

    at_most: int
    projected: int | None


def _still_needs(ctx: GateContext, stop_state_of: StateOf) -> dict[str, Needs]:
    """Criterion -> what it still needs, for each criterion the prefix left undecided: `at_most` the cases of the
    order not asked (the whole suite, where the exact bound or the fixed-size gate decides the rest) and
    `projected` the cases its e-process would need at the rate seen so far (None: not within them)."""
    state = stop_state_of(ctx)
    if state is None or state.complete:
        return {}
    left = state.planned - state.asked
    tests = state.fail_tests
    out: dict[str, Needs] = {}
    for criterion, name in state.keys:
        if state.decided[name].verdict is not None:
            continue
        track = state.tracks[name]
        per_case = len(track.values) / track.asked if track.asked else 1.0  # a slice's criterion holds fewer
        values = cases_to_decide(criterion, track, max(1, math.ceil(left * per_case)), tests)
        projected = math.ceil(values / per_case) if values is not None and per_case > 0 else None
        out[name] = Needs(at_most=left, projected=min(projected, left) if projected is not None else None)
    return out


def budget_section(ctx: GateContext, stop_state_of: StateOf) -> dict[str, Any]:
    """report.json `budget` and `budget_exhausted`; {} for a run with no budget."""
    budget = budget_of(ctx)
    if budget is None:
        return {}
    still = ({"still_needs": {name: asdict(needs) for name, needs in _still_needs(ctx, stop_state_of).items()}}
             if budget.exhausted else {})
    section = {"caps": budget.caps or {}, "spent_usd": budget.spent_usd or {}, "tokens": budget.tokens,
               "exhausted": budget.exhausted, "exceeded": budget.exceeded, **still}
    return {"budget": section, "budget_exhausted": bool(budget.exhausted)}


def _usd(value: Any) -> str:
    return f"${value:.4g}" if isinstance(value, (int, float)) else "unknown"


def budget_rows(ctx: GateContext, stop_state_of: StateOf) -> list[dict[str, str]]:
    """The report's rows of a budget: its caps, the spend by part and, at a cap, what it left undecided."""
    budget = budget_of(ctx)
    if budget is None:
        return []
    spent = budget.spent_usd or {}
    caps = budget.caps or {}
    rows = [{"label": "caps", "value": ", ".join(f"{k} {v:g}" for k, v in caps.items()) or "none"},
            {"label": "spent", "value": ", ".join(f"{part} {_usd(spent.get(part))}"
                                                  for part in ("target", "judge", "guard", "total"))},
            {"label": "target tokens", "value": f"{budget.tokens}"}]
    if budget.exceeded:  # billed past what the reservations kept to: said, never silent
        rows.append({"label": "over the cap", "value": "the judge's and guards' bills crossed "
                     + ", ".join(str(c) for c in budget.exceeded) + " (more tokens than reserved)"})
    if budget.exhausted:
        state = stop_state_of(ctx)
        asked = f" after {state.asked} of {state.planned} case(s)" if state is not None else ""
        rows.append({"label": "budget exhausted", "value": f"dispatch stopped at the {budget.exhausted} cap{asked}"})
        for name, needs in _still_needs(ctx, stop_state_of).items():
            guess = f", about {needs.projected} at the rate so far" if needs.projected is not None else ""
            rows.append({"label": name, "value": f"undecided: needs up to {needs.at_most} more case(s){guess}"})
    return rows
