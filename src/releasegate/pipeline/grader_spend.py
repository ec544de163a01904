"""A budgeted run's judge and guard spend reconciled with what their replies billed, once they were asked.

During generation each case reserves every judge and guard call it will cause at its worst (`run.budget`); the
calls are made after generation. Here the reservation gives way to the bill, read from judgments.jsonl (every
line: a verdict asked again was a call too): a call whose reply counted its tokens (the server's usage, whole
numbers 0 or more: the client refuses any other as a bad response) costs them at the model's price; one whose
reply counted none (a failed request, a missing usage) costs its worst case, never 0; each retry of a call
(`attempts`) costs its worst case too; a verdict from the response cache costs nothing. run.json `budget` then
holds the billed spend by part and, where the bill crossed a cap the reservations kept to (a server reporting
more tokens than a reservation allowed), which (`exceeded`): the report says so, never silently.
"""

from __future__ import annotations

from typing import Any

from ..inputs.config import Config
from ..inputs.rubric import Rubric
from ..inputs.suites import Case
from ..record.judge_journal import Judgment, every_judgment
from ..record.records import RunDir, RunInfo
from ..run.budget import PARTS, BudgetWatch, case_of

__all__ = ["reconcile_graders", "crossed"]

_GUARD = "guard:"
"""How a guard's verdicts are journaled: criterion 'guard:NAME' or 'guard:NAME:POLICY' (`llm_judge.guard`)."""


def reconcile_graders(run: RunDir, info: RunInfo, config: Config, rubric: Rubric) -> None:
    """run.json `budget.spent_usd`'s judge and guard parts from the bill (see the module docstring)."""
    if config.budget is None or not isinstance(info.budget, dict):
        return
    watch = BudgetWatch(config, rubric, info, config.budget)
    cases = {r.case_id: case_of(r) for r in run.read_records(required=False)}
    billed = {"judge": 0.0, "guard": 0.0}
    dearest: dict[str | None, float] = {}  # per grader, worked out once: an edited journal may hold many strays
    for judgment in every_judgment(run):
        if judgment.cached:
            continue
        guard = judgment.criterion[len(_GUARD):].split(":")[0] if judgment.criterion.startswith(_GUARD) else None
        case = cases.get(judgment.case_id)
        if case is None and guard not in dearest:
            dearest[guard] = max((watch.call_worst(c, guard) for c in cases.values()), default=0.0)
        billed["guard" if guard else "judge"] += _call(watch, judgment, case, dearest.get(guard, 0.0), guard)
    spent = {**dict(info.budget.get("spent_usd") or {}), **billed}
    spent["total"] = sum(float(spent.get(p) or 0.0) for p in PARTS)
    info.budget = {**info.budget, "spent_usd": spent, "exceeded": crossed(spent, info.budget.get("caps") or {})}
    run.write_info(info)


def _call(watch: BudgetWatch, judgment: Judgment, case: Case | None, dearest: float, guard: str | None) -> float:
    """What one journaled call billed, its retries at their worst; `dearest`: the worst of the run's dearest
    case, what a verdict on a case the run does not hold (an edited journal) costs, never less."""
    price = watch.graded(guard)
    if price is None:
        return 0.0  # a local model: nothing metered
    worst = watch.call_worst(case, guard) if case is not None else dearest
    read, wrote = judgment.tokens.input, judgment.tokens.output
    bill = worst  # no count, or one no server sends (an edited journal): its worst, never less
    if read is not None and wrote is not None and read >= 0 and wrote >= 0:
        bill = read * price.input + wrote * price.output
    return bill + max(0, judgment.attempts - 1) * worst


def crossed(spent: dict[str, Any], caps: dict[str, Any]) -> list[str] | None:
    """The dollar caps the spend is over (`usd`, `judge_usd`, ...), None for none."""
    over = [f"{p}_usd" for p in PARTS if isinstance(caps.get(f"{p}_usd"), (int, float))
            and float(spent.get(p) or 0.0) > caps[f"{p}_usd"] + 1e-12]
    if isinstance(caps.get("usd"), (int, float)) and float(spent.get("total") or 0.0) > caps["usd"] + 1e-12:
        over.append("usd")
    return over or None
