"""The typed shape of run.json's parts, checked when a stored run is read back (`RunInfo`).

run.json is written by releasegate, but it is a file on disk: anyone can edit it, and a stored figure that is
a string, NaN, a negative count or a missing key would otherwise surface deep in the gate as an internal error.
Every part the gate, the reports and `check --resume` read is checked here against the shape releasegate
writes; a part of another shape refuses the run (exit 2) with one line naming the field (`problem_line`).
Unknown keys are kept: a newer releasegate may write more.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, Strict, ValidationError, model_validator

from ..model_base import Model

__all__ = ["Count", "Seconds", "Figure", "PART_MODELS", "check_part", "check_sessions", "problem_line", "finite_tree", "non_finite_as_null",
           "MAX_JSON_DEPTH"]

MAX_JSON_DEPTH = 64
"""The deepest a stored JSON document nests; releasegate writes at most about 8 levels."""

Count = Annotated[int, Strict(), Field(ge=0)]
"""A count: a whole number, 0 or more (never a string, a bool or a float)."""
Seconds = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
"""A duration or a price: a finite number, 0 or more."""
Figure = Annotated[float, Strict(), Field(allow_inf_nan=False)]
"""A measured figure: a finite number."""


class _Part(Model):
    model_config = ConfigDict(extra="allow")


class CostFacts(_Part):
    mode: Literal["api", "self_hosted"]
    hourly_usd: Seconds | None = None
    input_usd_per_1m: Seconds | None = None
    output_usd_per_1m: Seconds | None = None

    @model_validator(mode="after")
    def _prices_of_its_mode(self) -> CostFacts:
        needed = ("hourly_usd",) if self.mode == "self_hosted" else ("input_usd_per_1m", "output_usd_per_1m")
        missing = [k for k in needed if k not in self.model_fields_set]
        if missing:
            raise ValueError(f"a {self.mode} cost needs {missing[0]}")
        return self


class WrongCaseFacts(_Part):
    """A wrong case of a probe row (`record.cache_probe_report.CacheWrongCase`), as the reports read it."""

    case_id: str
    cached_case_id: str
    similarity: Figure
    within_group: Annotated[bool, Strict()]
    harmful: Annotated[bool, Strict()] = True
    stale: Annotated[bool, Strict()] = False
    wrong_neighbours: Count | None = None
    donors: Count | None = None


class WrongHitFacts(WrongCaseFacts):
    question: str
    cached_question: str
    answer: str | None = None
    cached_answer: str | None = None


class ProbeRow(_Part):
    """One threshold of the probe: every figure the gate computes on or a report shows, of its type (a string
    where a count belongs would otherwise be an internal error in the gate's bound)."""

    threshold: Figure | None = None
    n: Count
    hits: Count
    wrong_hits: Count
    hit_rate: Figure | None = None
    hittable: Count | None = None
    right_hits: Count | None = None
    harmful_hits: Count | None = None
    unknown_hits: Count = 0
    harmful_share: Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    effective_hits: Seconds | None = None
    wrong_hit_rate: Figure | None = None
    wrong_hit_upper: Figure | None = None
    within_group: Count = 0
    across_group: Count = 0
    wrong_across_group: Count = 0
    tokens_saved: dict[str, Count | None] = {}
    cost_saved_usd: Figure | None = None
    stale_time_sensitive: Count = 0
    stale_cases: list[str] = []
    wrong: list[WrongHitFacts] = []
    wrong_cases: list[WrongCaseFacts] = []


class CacheProbeFacts(_Part):
    mode: Literal["exact", "semantic"]
    threshold: Figure | None = None
    rows: list[ProbeRow]
    error: str | None = None


class SweepStepFacts(_Part):
    step: Count
    rate: Figure | None = None
    seconds: Seconds | None = None
    client: dict[str, Any] | None = None  # a client figure that is not a number says nothing (evidence)
    cache_session: str | None = None  # the session's name in the response cache (`ResponseCache.session`)


class SweepFacts(_Part):
    """The sweep as the load phase records it (the gate judges its steps; `record.capacity_sweep` is the
    report's)."""

    steps: list[SweepStepFacts] = []
    capacity_step: Count | None = None


class LoadPhaseFacts(_Part):
    seconds: Seconds | None = None
    requests: Count | None = None
    concurrency: Count | None = None
    profile: str | None = None
    client: dict[str, Any] | None = None  # a client figure that is not a number says nothing (evidence)
    sweep: SweepFacts | None = None


class ProbeSide(_Part):
    failed: Count | None = None


class PrefixCacheFacts(_Part):
    pairs: Count = 0
    warm: ProbeSide | None = None
    cold: ProbeSide | None = None


class SessionFacts(_Part):
    mode: str | None = None
    cases: Count | None = None
    cached: Count | None = None
    generation_seconds: Seconds | None = None
    concurrency: Count | None = None
    status: str | None = None
    client: dict[str, Any] | None = None  # a client figure that is not a number says nothing (evidence)


class JudgeFacts(_Part):
    fingerprint: str | None = None


class GuardFacts(_Part):
    fingerprint: str
    questions: list[str]


GuardsFacts = RootModel[dict[str, GuardFacts]]


class BudgetFacts(_Part):
    """`run.budget`'s record: the caps and the spend as numbers (the report formats them), the cap dispatch
    stopped at as its name."""

    caps: dict[str, Seconds] = {}
    spent_usd: dict[str, Seconds] = {}
    tokens: Count | None = None
    exhausted: str | None = None
    asked: Count | None = None
    exceeded: list[str] | None = None
    """The dollar caps the judge's and guards' billed spend went over once reconciled (`pipeline.grader_spend`)."""


PART_MODELS: dict[str, type[BaseModel]] = {
    "cost": CostFacts, "response_cache_probe": CacheProbeFacts, "load_phase": LoadPhaseFacts,
    "prefix_cache": PrefixCacheFacts, "judge": JudgeFacts, "guards": GuardsFacts, "budget": BudgetFacts,
}
"""run.json's dict-valued fields, each with the shape it must have (None: the part did not run)."""


def check_part(name: str, value: Any) -> Any:
    """`value` unchanged when it has the shape of run.json's part `name` (or is None); else ValueError."""
    if value is not None:
        PART_MODELS[name].model_validate(value)
    return value


def check_sessions(value: list[Any]) -> list[Any]:
    for session in value:
        SessionFacts.model_validate(session)
    return value


def non_finite_as_null(value: Any) -> Any:
    """`value` with every float that is not finite replaced by None: what run.json is written with, so that
    `finite_tree` never refuses what releasegate wrote (a server's +Inf gauge becomes null, not a lost run)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: non_finite_as_null(v) for k, v in value.items()}
    if isinstance(value, list):
        return [non_finite_as_null(v) for v in value]
    return value


def finite_tree(value: Any, depth: int = 0) -> Any:
    """`value` unchanged when every number in it is finite and it nests at most MAX_JSON_DEPTH levels; else
    ValueError naming what is wrong (NaN and Infinity are what Python's json writes for no number at all)."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    if isinstance(value, dict):
        for item in value.values():
            finite_tree(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            finite_tree(item, depth + 1)
    return value


def problem_line(exc: Exception) -> str:
    """A validation error as one line: the field's path and what is wrong with it."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"] if not str(p).startswith("function-"))
        return f"field '{where}': {first['msg']}" if where else first["msg"]
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
