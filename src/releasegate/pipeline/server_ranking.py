"""The figures of `servers`' targets and of the served variants gathered into `Contender`s, and the choice made
by `decision.choice` (the only place a choice is made).

A contender's ranges: its capacity lies between the highest rate that met the objective and the lowest that broke
it ([X, inf) for a floor); its cost at capacity between the cost measured there and that cost scaled to the rate
that broke it (a floor: [0, X]); a cost from an API price table is what it is (counted tokens times prices); a
self-hosted cost from one fixed load has no interval (no sweep bounds its throughput): it cannot show a variant
cheaper than the reference. E2E p95 ranges are its order-statistic bounds widened by the client's lateness.
"""

from __future__ import annotations

import math
from typing import Any

from ..decision.choice import choose, why_not
from ..decision.latency import widen
from ..record.decision_evidence import Contender

__all__ = ["recommend", "eligible", "choose_cheapest", "contender"]


def contender(row: dict[str, Any], *, is_reference: bool, name_key: str = "run_id") -> Contender:
    """A target row (`servers`) or variant row (served variants) as the choice sees it."""
    parity = row.get("parity")
    return Contender(
        name=str(row[name_key]), is_reference=is_reference, verdict=row["verdict"],
        review_waived=bool(row.get("review_waived")), not_comparable=row.get("comparable"),
        parity=None if is_reference else (parity or {}).get("quality_verdict"), swept=bool(row.get("sweep")),
        capacity=_capacity(row), cost=_cost(row),
        e2e_p95=widen(_bounds(row.get("e2e_ms_p95_bounds")), _lateness(row.get("client_lateness_ms"))),
        speculative=bool(row.get("speculative")), draft_tokens=row.get("draft_tokens"),
        speculation_changed=row.get("speculation_changed"), load_flip=_flip(row),
        flip_margin=row.get("flip_margin"), load_flip_unknown=row.get("load_flip_unknown"),
        flip_variation=row.get("flip_variation"))


def _flip(row: dict[str, Any]) -> tuple[float, float] | None:
    """A row's `load_flip_rate` and its upper bound; None when either is missing (not probed)."""
    value, upper = row.get("load_flip_rate"), row.get("load_flip_upper")
    return None if value is None or upper is None else (float(value), float(upper))


def _capacity(row: dict[str, Any]) -> tuple[float, float] | None:
    lo = row.get("capacity_rps")
    if lo is None:
        return None
    hi = math.inf if row.get("capacity_at_least") else row.get("capacity_break_rps")
    return (lo, hi) if hi is not None else None


def _cost(row: dict[str, Any]) -> tuple[float, float] | None:
    at_capacity, capacity = row.get("cost_per_1m_at_capacity"), _capacity(row)
    if at_capacity is not None and capacity is not None:
        lo, hi = capacity
        return (0.0 if math.isinf(hi) else at_capacity * lo / hi), at_capacity
    cost = row.get("cost_per_1m_output_tokens")
    if cost is not None and row.get("cost_mode") == "api" and not row.get("sweep"):
        return cost, cost
    return None


def _bounds(bounds: Any) -> tuple[float, float] | None:
    if not bounds or len(bounds) != 2 or any(b is None for b in bounds):
        return None
    return float(bounds[0]), float(bounds[1])


def _lateness(value: Any) -> float:
    """A row's client lateness (ms); a figure that is not a finite number is infinite: nothing read by such a
    client is shown faster than anything."""
    if value is None:
        return 0.0
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else math.inf


def eligible(row: dict[str, Any]) -> bool:
    """Whether a target or variant row qualifies (`decision.choice.why_not`); the first row passed to `recommend`
    is the reference, any other is compared with it."""
    return why_not(contender(row, is_reference=row.get("parity") is None)) is None


def recommend(targets: list[dict[str, Any]]) -> dict[str, Any]:
    """`servers`: the recommended run id (None when nothing is chosen), the sentence that says why, the verdict
    and exit code."""
    contenders = [contender(t, is_reference=i == 0) for i, t in enumerate(targets)]
    return choose(contenders, bases=("capacity", "cost", "latency")).as_recommendation()


def choose_cheapest(rows: list[dict[str, Any]], *, reference: str) -> dict[str, Any]:
    """The served-variant choice (the reference row first, `reference` its name): {choice, rule, choice_reason,
    verdict, exit_code, verdict_reason} and each row's `why_not`."""
    ordered = sorted(rows, key=lambda r: r["variant"] != reference)
    contenders = [contender(r, is_reference=r["variant"] == reference, name_key="variant") for r in ordered]
    picked = choose(contenders, bases=("cost", "capacity", "latency"))
    for row in rows:
        row["why_not"] = picked.why_not.get(row["variant"]) if row.get("why_not") is None else row["why_not"]
        row["eligible"] = row["why_not"] is None
    return picked.as_dict()
