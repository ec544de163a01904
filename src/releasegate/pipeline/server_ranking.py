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

from ..decision.choice import Choice, choose, why_not
from ..decision.latency import widen
from ..record.decision_evidence import Contender
from .server_rows import RankedRow

__all__ = ["recommend", "eligible", "choose_cheapest", "choose_among", "contender"]


def contender(row: dict[str, Any] | RankedRow, *, is_reference: bool, name_key: str = "run_id") -> Contender:
    """A target row (`servers`) or variant row (served variants) as the choice sees it."""
    read = _ranked(row)
    name = read.variant if name_key == "variant" else read.run_id
    parity = read.parity
    return Contender(
        name=str(name), is_reference=is_reference, verdict=read.verdict,
        review_waived=bool(read.review_waived), not_comparable=read.comparable,
        parity=None if is_reference else (parity.quality_verdict if parity else None), swept=bool(read.sweep),
        capacity=_capacity(read), cost=_cost(read),
        e2e_p95=widen(_bounds(read.e2e_ms_p95_bounds), _lateness(read.client_lateness_ms)),
        speculative=bool(read.speculative), draft_tokens=_drafted(read.draft_tokens),
        speculation_changed=read.speculation_changed, load_flip=_flip(read),
        flip_margin=read.flip_margin, load_flip_unknown=read.load_flip_unknown,
        flip_variation=read.flip_variation)


def _drafted(count: float | None) -> int | None:
    """Draft tokens as a count: a server's counter delta is read as a float, and any part of a token proposed is
    a proposal (none is zero only when it is zero); a count that is not finite is no count."""
    return None if count is None or not math.isfinite(count) else math.ceil(count)


def _ranked(row: dict[str, Any] | RankedRow) -> RankedRow:
    return row if isinstance(row, RankedRow) else RankedRow.model_validate(row)


def _flip(row: RankedRow) -> tuple[float, float] | None:
    """A row's `load_flip_rate` and its upper bound; None when either is missing (not probed)."""
    value, upper = row.load_flip_rate, row.load_flip_upper
    return None if value is None or upper is None else (float(value), float(upper))


def _capacity(row: RankedRow) -> tuple[float, float] | None:
    lo = row.capacity_rps
    if lo is None:
        return None
    hi = math.inf if row.capacity_at_least else row.capacity_break_rps
    return (lo, hi) if hi is not None else None


def _cost(row: RankedRow) -> tuple[float, float] | None:
    at_capacity, capacity = row.cost_per_1m_at_capacity, _capacity(row)
    if at_capacity is not None and capacity is not None:
        lo, hi = capacity
        return (0.0 if math.isinf(hi) else at_capacity * lo / hi), at_capacity
    cost = row.cost_per_1m_output_tokens
    if cost is not None and row.cost_mode == "api" and not row.sweep:
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
    read = _ranked(row)
    return why_not(contender(read, is_reference=read.parity is None)) is None


def recommend(targets: list[dict[str, Any]]) -> dict[str, Any]:
    """`servers`: the recommended run id (None when nothing is chosen), the sentence that says why, the verdict
    and exit code."""
    contenders = [contender(t, is_reference=i == 0) for i, t in enumerate(targets)]
    return choose(contenders, bases=("capacity", "cost", "latency")).as_recommendation()


def choose_cheapest(rows: list[dict[str, Any]], *, reference: str) -> dict[str, Any]:
    """The served-variant choice (the reference row first, `reference` its name): {choice, rule, choice_reason,
    verdict, exit_code, verdict_reason} and each row's `why_not`."""
    read = [_ranked(row) for row in rows]
    picked = choose_among(read, reference=reference)
    for row, was in zip(rows, read):
        row.update(why_not=was.why_not, eligible=was.why_not is None)
    return picked.as_dict()


def choose_among(rows: list[RankedRow], *, reference: str) -> Choice:
    """`choose_cheapest` over typed rows: each row's `why_not` set (kept where it already says why)."""
    ordered = sorted(rows, key=lambda r: r.variant != reference)
    contenders = [contender(r, is_reference=r.variant == reference, name_key="variant") for r in ordered]
    picked = choose(contenders, bases=("cost", "capacity", "latency"))
    for row in rows:
        if row.why_not is None:
            row.why_not = picked.why_not.get(str(row.variant))
    return picked
