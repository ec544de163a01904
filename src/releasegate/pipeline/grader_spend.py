"""A budgeted run's judge and guard spend reconciled with what their replies billed, once they were asked.

During generation each case reserves every judge and guard call it will cause at its worst (`run.budget`); the
calls are made after generation. Here the reservation gives way to the bill, read from judgments.jsonl (every
line: a verdict asked again was a call too): a call whose reply counted its tokens (the server's usage, whole
numbers 0 or more: the client refuses any other as a bad response) costs them at the model's price; one whose
reply counted none (a failed request, a missing usage) costs its worst case, never 0; each retry of a call
(`attempts`) costs its worst case too; a verdict from the response cache costs nothing. A line no client writes (an
edited journal) costs the most it can: a count past any the client takes its worst case, more attempts than any
retries allow as many as they do, a guard the run does not have its dearest metered guard's call. run.json `budget` then
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

MOST_TOKENS = 10**9
"""The largest token count the client takes from a server's usage (past it the reply is a bad response)."""
MOST_ATTEMPTS = 21
"""The most requests a grader sends for one verdict: its first and the config schema's most `retries` (20)."""
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
        bills = []
        for grader in _graders(watch, guard):
            if case is None and grader not in dearest:
                dearest[grader] = max((watch.call_worst(c, grader) for c in cases.values()), default=0.0)
            bills.append(_call(watch, judgment, case, dearest.get(grader, 0.0), grader))
        billed["guard" if guard else "judge"] += max(bills, default=0.0)
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
    bill = worst  # no count, or one no client takes (an edited journal): its worst, never less
    if read is not None and wrote is not None and 0 <= read <= MOST_TOKENS and 0 <= wrote <= MOST_TOKENS:
        bill = read * price.input + wrote * price.output
    return bill + (min(max(1, judgment.attempts), MOST_ATTEMPTS) - 1) * worst


def _graders(watch: BudgetWatch, guard: str | None) -> list[str | None]:
    """Whose price a verdict is billed at: the judge's (`guard` None) or its guard's; a guard the run does not
    have (an edited journal) at each metered guard's, the dearest then kept."""
    if guard is None or guard in watch.guards:
        return [guard]
    return [name for name, price in watch.guards.items() if price is not None]


def crossed(spent: dict[str, Any], caps: dict[str, Any]) -> list[str] | None:
    """The dollar caps the spend is over (`usd`, `judge_usd`, ...), None for none."""
    over = [f"{p}_usd" for p in PARTS if isinstance(caps.get(f"{p}_usd"), (int, float))
            and float(spent.get(p) or 0.0) > caps[f"{p}_usd"] + 1e-12]
    if isinstance(caps.get("usd"), (int, float)) and float(spent.get("total") or 0.0) > caps["usd"] + 1e-12:
        over.append("usd")
    return over or None
