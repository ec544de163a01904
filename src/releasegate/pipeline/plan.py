"""`releasegate plan`: what a `check` of a config will ask and cost, before the first request.

From the suites and the config: the cases, the draws (`generation.repeats`), the target's requests (the load
phase's too), the judge's calls (two per case compared with `judge.baseline`) and each guard's. From the newest
complete run of the same target in the config's reports folder, when there is one: the tokens a request took and
the generation seconds a case took, so the plan's tokens, spend and wall time are the ones measured; without one,
the worst case the config allows (every answer `max_new_tokens` long) and no wall time. Spend prices the target
by the config's `cost:` (API prices by tokens, a self-hosted hourly price by the wall time), the judge by its
`price:`, each guard by its `price:`. A config's `budget.usd` is the budget `--budget-usd` would give.
"""

from __future__ import annotations

import math
from dataclasses import asdict, field
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import ConfigDict

from ..data_classes import dataclass
from ..errors import ReleasegateError
from ..inputs.backend_facts import capabilities
from ..inputs.config import Config
from ..inputs.suites import Case
from ..inputs.validation import load_inputs
from ..model_base import Model
from ..record.records import CaseRecord, RunDir, RunInfo

__all__ = ["Plan", "plan_check"]

_CHARS_PER_TOKEN = 4  # a prompt's tokens, guessed from its characters where no run measured them


@dataclass
class Plan:
    """A check's plan (`plan_check`); None where it cannot be known before the run."""

    cases: int
    draws: int
    requests: int
    judge_calls: int
    guard_calls: int
    input_tokens: int
    output_tokens: int
    tokens_from: str
    """'history RUN_ID' (measured by a run of the same target) or 'worst case' (max_new_tokens per answer)."""
    wall_s: float | None = None
    spend_usd: dict[str, float | None] = field(default_factory=dict)
    """Spend by part: 'target', 'judge', 'guard' (None: the part is metered but not priced) and 'total'."""
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_check(config_path: Path, *, overrides: tuple[str, ...] = (), budget_usd: float | None = None) -> Plan:
    """The plan of `check -c config_path` (see the module docstring); `budget_usd`: warn when the spend is over."""
    config, rubric, cases = load_inputs(config_path, keep=True, overrides=overrides)
    draws = sum(config.draws_of(c.suite) for c in cases)
    load = config.load.requests if config.load is not None and config.load.requests else 0
    judged = sum(config.draws_of(c.suite) for c in cases if (c.answer or {}).get("type") == "judge")
    judge_calls = judged * (2 if config.judge is not None and config.judge.baseline else 1)
    guards = {r.guard for r in rubric.forbidden if r.guard}
    history = _same_target_run(config)
    per_request_in, per_request_out, seconds_per_draw, source = _per_request(config, cases, history)
    plan = Plan(len(cases), draws, draws + load, judge_calls, len(guards) * draws, math.ceil(per_request_in * draws),
                math.ceil(per_request_out * draws), source,
                wall_s=seconds_per_draw * draws if seconds_per_draw is not None else None)
    spend = _spend(config, plan, sorted(guards))
    plan.spend_usd = spend.as_dict()
    if budget_usd is None and config.budget is not None:  # the config's own cap (`budget:`)
        budget_usd = config.budget.usd
    plan.warnings += _warnings(config, plan, spend, budget_usd)
    return plan


def _same_target_run(config: Config) -> tuple[RunInfo, list[CaseRecord]] | None:
    """The newest complete run of the same target under the config's reports folder, with its records."""
    root = config.output_dir
    if not root.is_dir():
        return None
    target = config.target.describe()
    found: list[tuple[str, RunDir, RunInfo]] = []
    for path in sorted(p for p in root.iterdir() if (p / "run.json").is_file()):
        try:
            info = RunDir(path).read_info()
        except (ReleasegateError, OSError):
            continue  # a damaged run tells nothing of the next one
        if info.status == "complete" and info.target == target and info.generation_seconds:
            found.append((info.created_at, RunDir(path), info))
    if not found:
        return None
    _, run, info = max(found, key=lambda f: f[0])
    try:
        return info, run.read_records(required=False)
    except (ReleasegateError, OSError):
        return None


def _per_request(config: Config, cases: list[Case], history: tuple[RunInfo, list[CaseRecord]] | None
                 ) -> tuple[float, float, float | None, str]:
    """(input tokens, output tokens, generation seconds) per request, and where they come from."""
    if history is not None:
        info, records = history
        ins = [r.tokens.input for r in records if r.tokens.input is not None]
        outs = [r.tokens.output for r in records if r.tokens.output is not None]
        fresh = [r for r in records if not r.cached]
        if ins and outs and fresh and info.generation_seconds:
            return fmean(ins), fmean(outs), info.generation_seconds / len(fresh), f"history {info.run_id}"
    prompt = fmean([_prompt_chars(c) for c in cases]) / _CHARS_PER_TOKEN if cases else 0.0
    return prompt, float(config.max_new_tokens), None, "worst case"


def _prompt_chars(case: Case) -> int:
    if case.messages:
        return sum(len(str(m.get("content", ""))) for m in case.messages)
    return len(case.prompt or "")


@dataclass(frozen=True)
class _Spend:
    """The plan's spend in USD by part; None: unknown."""

    target: float | None
    judge: float | None
    guard: float | None

    @property
    def total(self) -> float | None:
        parts = [self.target, self.judge, self.guard]
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)

    def as_dict(self) -> dict[str, float | None]:
        return {"target": self.target, "judge": self.judge, "guard": self.guard, "total": self.total}


class _Price(Model):
    """A grader's `price:` (USD per 1M tokens; a side not priced costs nothing)."""

    model_config = ConfigDict(extra="allow")

    input_usd_per_1m: float = 0.0
    output_usd_per_1m: float = 0.0

    def per_call_1m(self, tokens_in: float, tokens_out: float) -> float:
        """USD of a million calls, each reading `tokens_in` and writing `tokens_out`."""
        return tokens_in * self.input_usd_per_1m + tokens_out * self.output_usd_per_1m


def _spend(config: Config, plan: Plan, guards: list[str]) -> _Spend:
    target: float | None = 0.0
    cost = config.cost
    if cost is not None and cost.mode == "api":
        target = (plan.input_tokens * (cost.input_usd_per_1m or 0.0)
                  + plan.output_tokens * (cost.output_usd_per_1m or 0.0)) / 1e6
    elif cost is not None and cost.mode == "self_hosted":
        target = (cost.hourly_usd or 0.0) * plan.wall_s / 3600 if plan.wall_s is not None else None
    elif capabilities(config.target.backend).endpoint:
        target = None  # an endpoint may bill per token: no `cost:`, no known spend
    judge: float | None = 0.0
    if plan.judge_calls and config.judge is not None:
        price = config.judge.price
        if price:  # a judge call reads about a prompt and an answer and writes at most max_tokens
            per_call_in = (plan.input_tokens + plan.output_tokens) / max(1, plan.requests)
            judge = plan.judge_calls * _Price.model_validate(price).per_call_1m(per_call_in, config.judge.max_tokens) / 1e6
        else:
            judge = None
    return _Spend(target, judge, _guard_spend(config, plan, guards))


def _guard_spend(config: Config, plan: Plan, guards: list[str]) -> float | None:
    """Each guard the rubric asks, once a draw, at `guards.NAME.price`: None where one behind an endpoint has no
    price; a local guard costs nothing."""
    spend = 0.0
    per_call_in = (plan.input_tokens + plan.output_tokens) / max(1, plan.requests)
    for name in guards:
        settings = config.guards.get(name)
        price = _GuardsRaw.model_validate(config.raw).price_of(name)
        if settings is None:
            continue
        if not price:
            if capabilities(settings.target.backend).endpoint:
                return None
            continue
        spend += plan.draws * _Price.model_validate(price).per_call_1m(per_call_in, settings.max_tokens) / 1e6
    return spend


class _GuardsRaw(Model):
    """The config's `guards:` as written (schema-checked): each guard's `price:` is read from it."""

    model_config = ConfigDict(extra="allow")

    guards: dict[str, Any] | None = None

    def price_of(self, name: str) -> dict[str, Any]:
        guard = (self.guards or {}).get(name)
        price = _Priced.model_validate(guard).price if isinstance(guard, dict) else None
        return price if isinstance(price, dict) else {}


class _Priced(Model):
    model_config = ConfigDict(extra="allow")

    price: Any = None


def _warnings(config: Config, plan: Plan, spend: _Spend, budget_usd: float | None) -> list[str]:
    out = []
    if spend.target is None and config.cost is None:
        out.append("the target is an endpoint with no price (cost:): its spend is unknown")
    if spend.judge is None:
        out.append("the judge has no price (judge.price): its spend is unknown")
    if spend.guard is None:
        out.append("a guard behind an endpoint has no price (guards.NAME.price): its spend is unknown")
    if config.cost is not None and config.cost.mode == "self_hosted" and plan.wall_s is None:
        out.append("no run of this target in the reports folder: the self-hosted spend needs a measured wall time")
    total = spend.total
    if budget_usd is not None and (total is None or total > budget_usd):
        spent = "unknown" if total is None else f"${total:.4g}"
        out.append(f"the plan's spend ({spent}) may exceed the budget of ${budget_usd:.4g}")
    return out
