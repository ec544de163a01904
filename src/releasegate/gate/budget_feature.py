"""The budget gate feature: what a run with a spend budget (`budget:`, `check --budget-usd`) spent, by part, and,
when dispatch stopped at a cap, that it did (`budget_exhausted`) and the cases each undecided criterion still
needs. The verdicts are the stopping feature's: a budgeted run asks its cases in the seed's random order and is
judged on the longest completed prefix of it (`gate.stopping_feature`), so a criterion decided before the cap
keeps its verdict and any other is undecided (INCONCLUSIVE), never FAIL for want of cases."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from .context import GateContext
from .feature import GateFeature
from .stopping_feature import stop_state_of

__all__ = ["FEATURE", "budget_of"]


def budget_of(ctx: GateContext) -> dict[str, Any] | None:
    """run.json `budget`, or None for a run with no budget."""
    budget = ctx.info.budget
    return budget if isinstance(budget, dict) else None


def _still_needs(ctx: GateContext) -> dict[str, int]:
    """Criterion -> the cases of the order not asked, for each criterion the prefix left undecided: at most that
    many more decide it (the whole suite, where the exact bound or the fixed-size gate decides the rest)."""
    state = stop_state_of(ctx)
    if state is None or state.complete:
        return {}
    left = state.planned - state.asked
    return {name: left for name, found in state.decided.items() if found.verdict is None}


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    budget = budget_of(ctx)
    if budget is None:
        return {}
    exhausted = budget.get("exhausted")
    section: dict[str, Any] = {"caps": budget.get("caps") or {}, "spent_usd": budget.get("spent_usd") or {},
                               "tokens": budget.get("tokens"), "exhausted": exhausted}
    if exhausted:
        section["still_needs"] = _still_needs(ctx)
    return {"budget": section, "budget_exhausted": bool(exhausted)}


def _usd(value: Any) -> str:
    return f"${value:.4g}" if isinstance(value, (int, float)) else "unknown"


def _summary(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    budget = budget_of(ctx)
    if budget is None:
        return {}
    spent = budget.get("spent_usd") or {}
    caps = budget.get("caps") or {}
    rows = [{"label": "caps", "value": ", ".join(f"{k} {v:g}" for k, v in caps.items()) or "none"},
            {"label": "spent", "value": ", ".join(f"{part} {_usd(spent.get(part))}"
                                                  for part in ("target", "judge", "guard", "total"))},
            {"label": "target tokens", "value": f"{budget.get('tokens')}"}]
    exhausted = budget.get("exhausted")
    if exhausted:
        state = stop_state_of(ctx)
        asked = f" after {state.asked} of {state.planned} case(s)" if state is not None else ""
        rows.append({"label": "budget exhausted", "value": f"dispatch stopped at the {exhausted} cap{asked}"})
        for name, left in _still_needs(ctx).items():
            rows.append({"label": name, "value": f"undecided: needs up to {left} more case(s) of the order"})
    return {"title": "Budget", "rows": rows}


FEATURE = GateFeature(name="budget", section=_section, summary=_summary)
