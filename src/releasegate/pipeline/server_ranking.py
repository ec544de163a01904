"""Which of the compared targets to choose (`servers`): eligibility, and an honest order of capacities when
some are floors.

A capacity is a range: a measured value X is [X, X]; a floor "at least X" (the sweep stopped at max_rps without
breaking the objective) is [X, infinity). One target's capacity is higher than another's only when its range lies
wholly above: a floor at or above a measured value is not worse than it, a floor below one cannot be ordered
with it. The targets no other one is shown higher than are left; among them the lowest cost decides.
"""

from __future__ import annotations

import math

from ..report.formatting import format_money

__all__ = ["recommend", "eligible", "choose_cheapest"]


def eligible(t: dict) -> bool:
    """Its gate passed, it was judged by the reference's rubric, its quality parity with the reference was
    decided (not merely not refuted) on enough of the reference's cases, and, when it ran a capacity sweep, the
    sweep established a capacity (a target that met its objective at no rate is never chosen for its cost)."""
    if t["verdict"] != "PASS" or t.get("comparable"):
        return False
    if t.get("sweep") and t["capacity_rps"] is None:  # swept, and no rate met the objective: unknown, not chosen
        return False
    return t.get("parity") is None or t["parity"]["quality_verdict"] == "PASS"


def recommend(targets: list[dict]) -> dict:
    """The recommended run id (None when no target is eligible) and the sentence that says why."""
    chosen = [t for t in targets if eligible(t)]
    if not chosen:
        states = ", ".join(f"{t['run_id']} {t['verdict']}" + (f" ({t['comparable']})" if t.get("comparable") else "")
                           for t in targets)
        return {"recommended": None, "recommendation": f"no recommendation: no target passed its gate with quality "
                                                       f"shown no worse than the reference ({states})"}
    best, why = _best(chosen)
    others = len(targets) - len(chosen)
    rest = f"; {others} target(s) not eligible (their gate did not pass, quality parity was not shown, or their sweep established no capacity)" if others else ""
    bound = f"; it is {best['bottleneck']}-bound at the median" if best["bottleneck"] else ""
    return {"recommended": best["run_id"],
            "recommendation": f"{best['target']} (run {best['run_id']}): passes its gate, {why}{bound}{rest}"}


def _best(chosen: list[dict]) -> tuple[dict, str]:
    if all(t["capacity_rps"] is not None for t in chosen):
        return _by_capacity(chosen)
    if all(t["cost_per_1m_output_tokens"] is not None for t in chosen):
        best = min(chosen, key=lambda t: t["cost_per_1m_output_tokens"])
        return best, f"the lowest cost per 1M output tokens ({format_money(best['cost_per_1m_output_tokens'])})"
    if all(t["ttft_ms_p95"] is not None for t in chosen):
        best = min(chosen, key=lambda t: t["ttft_ms_p95"])
        return best, f"the lowest TTFT p95 ({best['ttft_ms_p95']:.4g} ms)"
    return chosen[0], "the only basis left: it passed its gate"


def _range(t: dict) -> tuple[float, float]:
    return t["capacity_rps"], (math.inf if t["capacity_at_least"] else t["capacity_rps"])


def _by_capacity(chosen: list[dict]) -> tuple[dict, str]:
    top = [t for t in chosen if not any(_range(u)[0] > _range(t)[1] for u in chosen)]
    if len(top) == 1 or len({_range(t) for t in top}) == 1 and not top[0]["capacity_at_least"]:
        best = min(top, key=_cost)
        return best, f"the highest capacity at the latency objective ({_rate(best)})"
    best = min(top, key=_cost)
    rates = " vs ".join(_rate(t, cost=False) for t in top)
    return best, f"capacity cannot order {rates}; the lowest cost among them ({_rate(best)})"


def _cost(t: dict) -> float:
    cost = t["cost_per_1m_at_capacity"] if t["cost_per_1m_at_capacity"] is not None else t["cost_per_1m_output_tokens"]
    return cost if cost is not None else math.inf


def _rate(t: dict, cost: bool = True) -> str:
    floor = "at least " if t["capacity_at_least"] else ""
    there = f", {format_money(t['cost_per_1m_at_capacity'])} per 1M output tokens there" if cost and t["cost_per_1m_at_capacity"] else ""
    return f"{floor}{t['capacity_rps']:.4g} req/s{there}"


def choose_cheapest(rows: list[dict], *, reference: str) -> dict:
    """The served-variant choice: among the `eligible` rows (gate passed, quality shown non-inferior to the
    reference, capacity established when swept), the cheapest: the lowest cost per 1M output tokens at capacity
    when every one has it, else the lowest cost per 1M output tokens, else the lowest E2E p95. A capacity floor
    ("at least X") makes its cost there an upper bound: it is cheaper than a measured cost above that bound, and
    cannot be ordered with one below it (the lowest bound is then chosen, and the reason says so).
    {choice: name | None, choice_reason: text, rule: cost_at_capacity | cost | e2e_p95 | None}."""
    chosen = [r for r in rows if eligible(r)]
    if not chosen:
        states = "; ".join(f"{r['variant']}: {r.get('why_not') or r['verdict']}" for r in rows) or "no variant ran"
        return {"choice": None, "rule": None, "choice_reason": f"no variant qualifies ({states})"}
    rule, key, what = _rule(chosen)
    if key == "capacity_rps":
        best, why = _by_capacity(chosen)
        return {"choice": best["variant"], "rule": rule, "choice_reason": f"{_qualifies(best, reference)}, {why}"}
    if key == "order":
        return {"choice": chosen[0]["variant"], "rule": rule,
                "choice_reason": f"{_qualifies(chosen[0], reference)}, the first in the plan "
                                 "(no cost or latency was measured to order them)"}
    lowest = [r for r in chosen if not any(_cost_range(u, key)[1] < _cost_range(r, key)[0] for u in chosen)]
    best = min(lowest, key=lambda r: (r[key], r["variant"] != reference))  # a tie goes to the reference
    why = f"the lowest {what} ({_figure(best, key)})"
    if len(lowest) > 1 and any(r["capacity_at_least"] for r in lowest) and key == "cost_per_1m_at_capacity":
        others = " vs ".join(f"{r['variant']} {_figure(r, key)}" for r in lowest)
        why = f"cost cannot order {others} (a capacity floor's cost is at most its figure); the lowest figure"
    return {"choice": best["variant"], "rule": rule, "choice_reason": f"{_qualifies(best, reference)}, {why}"}


def _rule(rows: list[dict]) -> tuple[str, str, str]:
    if all(r.get("cost_per_1m_at_capacity") is not None for r in rows):
        return "cost_at_capacity", "cost_per_1m_at_capacity", "cost per 1M output tokens at capacity"
    if all(r.get("cost_per_1m_output_tokens") is not None for r in rows):
        return "cost", "cost_per_1m_output_tokens", "cost per 1M output tokens"
    if all(r.get("capacity_rps") is not None for r in rows):  # swept: each one's latency is at its own rate
        return "capacity", "capacity_rps", "highest capacity at the objective (no cost configured)"
    if all(r.get("e2e_ms_p95") is not None for r in rows):
        return "e2e_p95", "e2e_ms_p95", "E2E p95 (no cost configured)"
    return "order", "order", "place in the plan"


def _cost_range(row: dict, key: str) -> tuple[float, float]:
    value = row[key]
    floor = key == "cost_per_1m_at_capacity" and row.get("capacity_at_least")
    return (0.0 if floor else value), value


def _figure(row: dict, key: str) -> str:
    if key == "e2e_ms_p95":
        return f"{row[key]:.4g} ms"
    bound = "at most " if key == "cost_per_1m_at_capacity" and row.get("capacity_at_least") else ""
    return bound + format_money(row[key])


def _qualifies(row: dict, reference: str) -> str:
    parity = row.get("parity")
    if parity is None:
        return "the reference, its gate passes"
    delta, interval, margin = parity.get("accuracy_delta"), parity.get("accuracy_interval"), parity.get("margin")
    accuracy = ""
    if delta is not None:
        accuracy = f"accuracy {delta:+.3f}"
        if interval:
            accuracy += f", interval [{interval[0]:+.3f}, {interval[1]:+.3f}]"
        if margin is not None:
            accuracy += f", margin {margin:g}"
        accuracy = f" ({accuracy})"
    same = f"; {parity['identical_outputs']}/{parity['shared_cases']} outputs identical" if parity.get("shared_cases") else ""
    return f"its gate passes, quality non-inferior to {reference}{accuracy}{same}"
