"""The `budget:` section of a config (and `check --budget-usd`): a cap on what one `check` may spend.

    budget: {usd: 5, target_usd: 3, judge_usd: 1.5, guard_usd: 0.5, tokens: 2000000, wall_s: 3600}

Dollars over the target (the model under test, priced by `cost:`), the judge (`judge.price`) and each guard
(`guards.NAME.price`), all of them (`usd`) or one part each; `tokens` caps the target's input and output tokens,
`wall_s` the generation's wall time. Every cap is a finite number greater than 0 (a cap of 0 would send nothing);
the dispatch side is `run.budget`.
"""

from __future__ import annotations

import math
from typing import Any

from ..data_classes import dataclass
from ..errors import InputError
from .backend_facts import capabilities

__all__ = ["Budget", "BUDGET_KEYS", "parse_budget", "refuse_unbilled"]

BUDGET_KEYS = ("usd", "target_usd", "judge_usd", "guard_usd", "tokens", "wall_s")


@dataclass(frozen=True)
class Budget:
    """A run's caps (None: not capped)."""

    usd: float | None = None
    target_usd: float | None = None
    judge_usd: float | None = None
    guard_usd: float | None = None
    tokens: float | None = None
    wall_s: float | None = None

    def as_dict(self) -> dict[str, float]:
        return {k: v for k in BUDGET_KEYS if (v := getattr(self, k)) is not None}

    @property
    def capped(self) -> bool:
        return bool(self.as_dict())

    @property
    def dollars(self) -> bool:
        """Whether any cap is in dollars (every metered model then needs a price)."""
        return any(getattr(self, k) is not None for k in ("usd", "target_usd", "judge_usd", "guard_usd"))


def parse_budget(raw: Any, at: Any) -> Budget | None:
    """The `budget:` section; None when the config has none. The schema checked the shape; a value that is no
    finite number greater than 0 (0, NaN, infinity, a string, a boolean) is refused here, naming the key."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InputError(f"budget must be a mapping of caps, got {type(raw).__name__}", **at("budget"),
                         hint=f"e.g. budget: {{usd: 5}} (keys: {', '.join(BUDGET_KEYS)})")
    caps: dict[str, float] = {}
    for key, value in raw.items():
        if key not in BUDGET_KEYS:
            raise InputError(f"budget has no key '{key}'", **at("budget", key), hint=f"keys: {', '.join(BUDGET_KEYS)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise InputError(f"budget.{key} must be a finite number greater than 0, got {value!r}", **at("budget", key),
                             hint="a cap in dollars, tokens or seconds; a cap of 0 would send nothing")
        caps[key] = float(value)
    return Budget(**caps)


def refuse_unbilled(budget: Budget | None, target: Any, load: Any, leakage: Any, at: Any) -> None:
    """Refuse (exit 2, one line naming both keys) a budget beside a part of the run it does not bill on a metered
    model: a load phase (`load:`: a duration, a sweep or a replayed trace bounds no count of requests a
    reservation could cover) and the leakage probe (`leakage:`: it asks the target and `leakage.base`, which has
    no price, outside the seeded order the cap cuts). Either would carry the spend past a cap unseen."""
    if budget is None:
        return
    metered = bool(capabilities(target.backend).endpoint)
    if load is not None and metered:
        raise InputError("budget and load cannot go together on a metered target: a load phase's requests are "
                         "not billed by the budget, so the cap could be crossed unseen", **at("load"),
                         hint="gate the load in a run of its own (drop budget: there), or drop load:")
    base = getattr(leakage, "base", None) if leakage is not None else None
    if leakage is not None and (metered or (base is not None and capabilities(base.backend).endpoint)):
        which = "target" if metered else "leakage.base"
        raise InputError(f"budget and leakage cannot go together on a metered {which}: the leakage probe's "
                         "requests are not billed by the budget, so the cap could be crossed unseen",
                         **at("leakage"), hint="probe leakage in a run of its own (drop budget: there), or drop leakage:")
