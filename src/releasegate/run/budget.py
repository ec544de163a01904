"""The dispatch's side of a spend budget (`budget:`, `check --budget-usd`, `inputs.budget_config`).

Before a case is sent its worst-case cost is reserved: the target's (its prompt's UTF-8 bytes as tokens, a bound
on its tokens, plus `max_new_tokens`, at the `cost:` prices), every judge call it will cause (two with
`judge.baseline`) and every guard call (one per ShieldGemma policy), at `judge.price` and `guards.NAME.price`, each
times the case's draws. Dispatch stops before a reservation would cross a cap, at the first case of the run's
seeded order that does not fit, so what was asked is a prefix of that order; the requests in flight finish.

What was spent is read from the records on disk, never kept apart, so a resumed run counts what its earlier
sessions spent: the target's billed tokens (the server's usage or `target.tokenizer`) at its prices, every failed
attempt and retry (`record.evidence.case_attempts`) and every answer with no counted tokens at the worst case
of one request; the judge and the guards at their reservation while the cases are asked (they are asked after
generation; `pipeline.grader_spend` then puts what they billed in its place).
A self-hosted target (`cost: {mode: self_hosted}`) costs its hourly price over the generation's wall time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import field
from typing import Any

from ..data_classes import dataclass
from ..errors import InputError
from ..gate.stopping import stopping_of
from ..inputs.backend_facts import capabilities
from ..inputs.budget_config import Budget
from ..inputs.config import Config
from ..inputs.rubric import Rubric
from ..inputs.suites import Case
from ..record.cost_metrics import COUNTED_SOURCES
from ..record.evidence import case_attempts
from ..record.records import CaseRecord, RunInfo

__all__ = ["PARTS", "BudgetWatch", "prompt_bytes", "require_prices", "require_one_case", "with_budget", "JUDGE_PROMPT_TOKENS",
           "case_of"]

PARTS = ("target", "judge", "guard")
JUDGE_PROMPT_TOKENS = 1024
"""A judge's or guard's own instructions around the prompt and the answer, in tokens: a worst case."""
_TEMPLATE_TOKENS = 64  # a chat template's tokens around the prompt's own


def prompt_bytes(case: Case) -> int:
    """A case's prompt in UTF-8 bytes (its messages' contents together): a bound on its tokens, as a byte-level
    tokenizer (or one falling back to bytes) never makes more tokens than bytes."""
    if case.messages:
        return sum(len(str(m.get("content", "")).encode("utf-8")) for m in case.messages)
    return len((case.prompt or "").encode("utf-8"))


@dataclass(frozen=True)
class _Price:
    """USD per token, in and out; None for a model that is not metered (a local model)."""

    input: float
    output: float


def _per_token(price: dict[str, Any] | None) -> _Price | None:
    if not price or "input_usd_per_1m" not in price or "output_usd_per_1m" not in price:
        return None
    return _Price(float(price["input_usd_per_1m"]) / 1e6, float(price["output_usd_per_1m"]) / 1e6)


def _guard_price(config: Config, name: str) -> _Price | None:
    """The guard's price per token, as its section of the config gives it (`guards.NAME.price`)."""
    guards = config.raw.get("guards") or {}
    return _per_token((guards.get(name) or {}).get("price"))


def _metered(target: Any) -> bool:
    return bool(capabilities(target.backend).endpoint)


def _guards_used(config: Config, rubric: Rubric) -> list[str]:
    return sorted({r.guard for r in rubric.forbidden if r.guard and r.guard in config.guards})


def require_prices(config: Config, rubric: Rubric, cases: Sequence[Case], budget: Budget) -> None:
    """A budget in dollars needs a price for every metered model the run will ask (exit 2 naming the first
    that has none): the target behind an endpoint, the judge where a case is judged, each guard a rule asks."""
    if not budget.dollars:
        return
    if _metered(config.target) and (config.cost is None or config.cost.mode != "api"):
        raise InputError(f"budget: the target {config.target.describe()} is metered and has no price",
                         **config.key_at("cost"), hint="add cost: {mode: api, input_usd_per_1m, output_usd_per_1m}")
    judged = any((c.answer or {}).get("type") == "judge" for c in cases)
    judge = config.judge
    if judged and judge is not None and _metered(judge.target) and _per_token(judge.price) is None:
        raise InputError(f"budget: the judge {judge.target.describe()} is metered and has no price",
                         **config.key_at("judge", "price"), hint="add judge.price: {input_usd_per_1m, output_usd_per_1m}")
    for name in _guards_used(config, rubric):
        if _metered(config.guards[name].target) and _guard_price(config, name) is None:
            raise InputError(f"budget: the guard '{name}' is metered and has no price",
                             **config.key_at("guards", name, "price"),
                             hint=f"add guards.{name}.price: {{input_usd_per_1m, output_usd_per_1m}}")


def with_budget(config: Config, rubric: Rubric, cases: Sequence[Case], info: RunInfo, usd: float | None) -> Config:
    """A resumed run's config with `usd` (`check --resume RUN --budget-usd USD`) as its cap on the whole spend, for
    this session: refused (exit 2) for a run that did not start with a budget, whose cases were not asked in the
    seed's order, so that what it asked is no prefix a cap could have cut."""
    if usd is None:
        return config
    if stopping_of(info) is None or config.budget is None:
        raise InputError("--budget-usd with --resume needs a run that started with a budget (its cases asked in "
                         "the seed's random order)", hint="start a new run with --budget-usd")
    budget = dataclasses.replace(config.budget, usd=usd)
    require_prices(config, rubric, cases, budget)
    return dataclasses.replace(config, budget=budget)


def require_one_case(config: Config, rubric: Rubric, first: Case | None, budget: Budget) -> None:
    """Refuse (exit 2) a budget that cannot pay for the first case of the order: the run would send nothing."""
    if first is None:
        return
    watch = BudgetWatch(config, rubric, None, budget)
    cap = next(iter(watch.admit([[first]], {})), None) is None and watch.exhausted
    if cap:
        worst = watch.case_worst(first)
        raise InputError(f"budget.{cap} does not cover one case: case {first.id}'s worst case is "
                         f"${worst.usd.total():.4g} and {worst.tokens} tokens, so nothing would be sent",
                         **config.key_at("budget", cap), hint="raise the cap (releasegate plan -c CONFIG shows the spend)")


@dataclass
class PartsUsd:
    """Dollars by part of the run: the target's requests, the judge's calls, the guards' calls (`PARTS`)."""

    target: float = 0.0
    judge: float = 0.0
    guard: float = 0.0

    def of(self, part: str) -> float:
        """The dollars of `part`, one of `PARTS`."""
        return float(getattr(self, part))

    def plus(self, other: PartsUsd) -> PartsUsd:
        return PartsUsd(self.target + other.target, self.judge + other.judge, self.guard + other.guard)

    def total(self) -> float:
        return sum(self.of(p) for p in PARTS)

    def as_dict(self) -> dict[str, float]:
        return {p: self.of(p) for p in PARTS}


@dataclass
class _Costs:
    """The worst cases of one case, by part, in USD, and its target tokens."""

    usd: PartsUsd = field(default_factory=PartsUsd)
    tokens: int = 0


class BudgetWatch:
    """Reserves each case's worst case before it is sent and stops dispatch at a cap (see the module docstring)."""

    def __init__(self, config: Config, rubric: Rubric, info: RunInfo | None, budget: Budget) -> None:
        self.config, self.info, self.budget = config, info, budget
        cost = config.cost
        api = cost is not None and cost.mode == "api"
        self.target = _Price((cost.input_usd_per_1m or 0.0) / 1e6, (cost.output_usd_per_1m or 0.0) / 1e6) if (
            cost is not None and api) else None
        self.hourly = cost.hourly_usd if cost is not None and cost.mode == "self_hosted" else None
        judge = config.judge
        self.judge = _per_token(judge.price) if judge is not None else None
        self.guards = {name: _guard_price(config, name) for name in _guards_used(config, rubric)}
        self.worst: dict[str, _Costs] = {}
        self.spent = PartsUsd()
        self.tokens = 0
        self.exhausted = ""

    def case_worst(self, case: Case) -> _Costs:
        """The most one case can cost, every draw of it (see the module docstring)."""
        if case.id in self.worst:
            return self.worst[case.id]
        draws = self.config.draws_of(case.suite)
        prompt = prompt_bytes(case) + _TEMPLATE_TOKENS
        out = self.config.max_new_tokens
        costs = _Costs(tokens=(prompt + out) * draws)
        if self.target is not None:
            costs.usd.target = draws * (prompt * self.target.input + out * self.target.output)
        judge = self.config.judge
        if judge is not None and self.judge is not None and (case.answer or {}).get("type") == "judge":
            costs.usd.judge = draws * (2 if judge.baseline else 1) * self.call_worst(case)
        for name, price in self.guards.items():
            if price is None:
                continue
            guard = self.config.guards[name]
            calls = draws * (max(1, len(guard.categories)) if guard.format == "shieldgemma" else 1)
            costs.usd.guard += calls * self.call_worst(case, name)
        self.worst[case.id] = costs
        return costs

    def call_worst(self, case: Case, guard: str | None = None) -> float:
        """The most one judge call (`guard` None) or one call of that guard about `case` can cost: it reads the
        prompt, the answer (a judge: and a baseline's) and its own instructions, and writes its `max_tokens`."""
        prompt, out = prompt_bytes(case) + _TEMPLATE_TOKENS, self.config.max_new_tokens
        if guard is None:
            judge = self.config.judge
            if judge is None or self.judge is None:
                return 0.0
            read = prompt + 2 * out + JUDGE_PROMPT_TOKENS  # the prompt, the answer (and a baseline's), the rubric
            return read * self.judge.input + judge.max_tokens * self.judge.output
        price, settings = self.guards.get(guard), self.config.guards.get(guard)
        if price is None or settings is None:
            return 0.0
        return (prompt + out + JUDGE_PROMPT_TOKENS) * price.input + settings.max_tokens * price.output

    def graded(self, guard: str | None = None) -> _Price | None:
        """The judge's price per token (`guard` None) or that guard's; None for a model that is not metered."""
        return self.judge if guard is None else self.guards.get(guard)

    def count(self, records: Iterable[CaseRecord]) -> None:
        """Add what the journaled `records` spent (see the module docstring)."""
        for record in records:
            worst = self.case_worst(case_of(record))
            draws = self.config.draws_of(record.suite)
            per_request = worst.usd.target / draws
            if draws > 1:  # the other draws are in draws.jsonl: the case is priced at its worst, every draw
                billed, tokens = (0.0, 0) if record.cached else (worst.usd.target, worst.tokens)
            else:
                billed, tokens = self._billed(record, per_request, worst.tokens)
            failed = max(0, len(case_attempts(record)) - 1)  # retries and failed attempts are billed too
            self.spent.target += billed + failed * per_request
            self.tokens += tokens
            self.spent.judge += worst.usd.judge
            self.spent.guard += worst.usd.guard

    def _billed(self, record: CaseRecord, worst_usd: float, worst_tokens: int) -> tuple[float, int]:
        if record.cached:
            return 0.0, 0  # asked by an earlier run: this one paid nothing for it
        t = record.tokens
        if t.input is None or t.output is None or t.source not in COUNTED_SOURCES:
            return worst_usd, worst_tokens  # not counted: priced at its worst, never at 0
        usd = t.input * self.target.input + t.output * self.target.output if self.target is not None else 0.0
        return usd, t.input + t.output

    def totals(self) -> dict[str, float]:
        """What was spent by part, and in all (run.json `budget.spent_usd`)."""
        spent = self._spent()
        return {**spent.as_dict(), "total": spent.total()}

    def _spent(self) -> PartsUsd:
        """What was spent by part: a self-hosted target by the hour of generation."""
        if self.hourly is None:
            return dataclasses.replace(self.spent)
        return dataclasses.replace(self.spent, target=self.hourly * self._seconds() / 3600)

    def admit(self, batches: Iterable[list[Case]], hits: dict[str, Any]) -> Iterator[list[Case]]:
        """The batches, each cut at the first case whose reservation would cross a cap, and none after it. A
        batch's cases are reserved together (they are in flight together); the journal counts them after it."""
        for group in batches:
            reserved = _Costs()
            taken: list[Case] = []
            for case in group:
                worst = self.case_worst(case)
                if case.id in hits:  # a cached answer: no target request, its judge and guard calls all the same
                    worst = _Costs(dataclasses.replace(worst.usd, target=0.0), 0)
                reserved.usd = reserved.usd.plus(worst.usd)
                reserved.tokens += worst.tokens
                self.exhausted = self.over(reserved)
                if self.exhausted:
                    break
                taken.append(case)
            if taken:
                yield taken
            if self.exhausted:
                return

    def over(self, reserved: _Costs) -> str:
        """The cap that what was spent and `reserved` cross, '' for none."""
        spent, caps = self._spent(), self.budget
        for part in PARTS:
            cap = getattr(caps, f"{part}_usd")
            if cap is not None and spent.of(part) + reserved.usd.of(part) > cap:
                return f"{part}_usd"
        if caps.usd is not None and spent.total() + reserved.usd.total() > caps.usd:
            return "usd"
        if caps.tokens is not None and self.tokens + reserved.tokens > caps.tokens:
            return "tokens"
        if caps.wall_s is not None and self._seconds() >= caps.wall_s:
            return "wall_s"
        return ""

    def _seconds(self) -> float:
        return (self.info.generation_seconds or 0.0) if self.info is not None else 0.0

    def write(self, asked: int) -> None:
        """run.json `budget`: the caps, the spend by part, the target's tokens and, when dispatch stopped at a
        cap, which (`exhausted`) and after how many cases of the order (`asked`)."""
        assert self.info is not None, "a watch made before the run has no run.json to write"
        self.info.budget = {"caps": self.budget.as_dict(), "spent_usd": self.totals(), "tokens": self.tokens,
                            "exhausted": self.exhausted or None, "asked": asked}


def case_of(record: CaseRecord) -> Case:
    """The case a record answers, as much of it as its worst case reads (a resumed run's earlier records)."""
    messages = record.input.get("messages")
    return Case(id=record.case_id, suite=record.suite, expected=None,
                messages=tuple(messages) if isinstance(messages, list) else None,
                prompt=record.input.get("prompt") if isinstance(record.input.get("prompt"), str) else None,
                answer=record.answer)
