"""The stopping gate feature: a run that stopped when decided (`check --stop-when-decided`) is judged on the
longest completed prefix of its random order, each criterion through its e-process (`decision.stopping`), never a
fixed-size bound at an n the data chose. The stop is recomputed from the records, so `gate` and `verify` find
what the run found; the summary says the cases asked and saved, where each criterion was decided, and which
criteria kept the run going. A run with a spend budget asks its cases in the same order and is judged the same
way; its spend, and what the cap left undecided, are its part of the report (`gate.budget_report`)."""

from __future__ import annotations

from typing import Any

from ..decision.criterion import CriterionResult
from ..decision.stopping import decide_stopped
from ..scorers import score_records
from .budget_report import budget_rows, budget_section
from .confidence_sequences import confidence_sequences
from .context import GateContext
from .feature import GateFeature
from .paired_stopping import baseline_pairing
from .run_view import stopping_of_run
from .stopping import StopState, run_stop_state, stopping_of

__all__ = ["FEATURE", "stop_state_of"]


def stop_state_of(ctx: GateContext) -> StopState | None:
    """The run's stop state, computed once (the baseline's rows read it too); None for a run that asks every case."""
    stopping = stopping_of(ctx.info)
    if stopping is None:
        return None

    def make() -> StopState:
        by_id = {r.case_id: r for r in ctx.records}
        pairing = baseline_pairing(ctx.rubric, ctx.info, ctx.baseline_run, ctx.inputs.verdicts)
        return run_stop_state(ctx.info, ctx.criteria, by_id, lambda r: ctx.scores.get(r.case_id, {}),
                              baseline=pairing, ledger=ctx.inputs.ledger)

    return ctx.once("stopping", make)


def _rule(ctx: GateContext, results: list[CriterionResult]) -> list[CriterionResult]:
    """Each criterion of a stopping run decided on its track (`decision.stopping.decide_stopped`)."""
    state = stop_state_of(ctx)
    if state is None:
        return results
    out = []
    for result in results:
        key = state.key_of(result.criterion)  # by identity: two criteria may share a name
        track = state.tracks.get(key) if key is not None else None
        if track is None:
            out.append(result)  # a criterion a rule added: not one the run's order speaks of
            continue
        out.append(decide_stopped(result.criterion, track, state.fail_tests, result))
    return out


def _summary(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    state = stop_state_of(ctx)
    if state is None:
        return {}
    saved = state.planned - state.asked
    rows = [{"label": "cases asked", "value": f"{state.asked} of {state.planned} (in the seed's random order)"},
            {"label": "cases saved", "value": f"{saved} ({saved / state.planned:.0%})" if state.planned else "0"}]
    if stopping_of_run(ctx.info).when_decided is False:  # a budget's order: only a cap stops it
        return {"title": "Budget", "rows": rows[:1] + budget_rows(ctx, stop_state_of)}
    for name, found in state.decided.items():
        if found.verdict is not None:
            at = state.tracks[name].case_at(found.at or 0)
            rows.append({"label": name, "value": f"{found.verdict}, decided at case {at} (anytime-valid)"})
    kept = state.kept_going()
    if not kept and state.asked == state.planned and state.planned and ctx.inputs.verdicts:
        kept = _held_for_verdicts(ctx, state)
    for name, why in kept:
        rows.append({"label": name, "value": f"kept the run going: {why}"})
    return {"title": "Stopping when decided", "rows": rows + budget_rows(ctx, stop_state_of)}


def _held_for_verdicts(ctx: GateContext, state: StopState) -> list[tuple[str, str]]:
    """A run that asked every case, though the gate decides each criterion before the end: what the run saw while
    it asked, its cases scored without the judge's and guards' verdicts (they come after the cases, `run.stop_watch`);
    each criterion undecided that way is what kept it going."""
    by_id = {r.case_id: r for r in ctx.records}
    unjudged = score_records(ctx.records, ctx.rubric.forbidden, None)
    asking = run_stop_state(ctx.info, ctx.criteria, by_id, lambda r: unjudged.get(r.case_id, {}),
                            baseline=baseline_pairing(ctx.rubric, ctx.info, ctx.baseline_run, None),
                            ledger=ctx.inputs.ledger)
    return [(name, "decided only with the judge's or guards' verdicts, which come after the cases")
            for name in state.decided if name in asking.decided and asking.decided[name].verdict is None]


def _section(ctx: GateContext, results: list[CriterionResult]) -> dict[str, Any]:
    """Each anytime-valid criterion's confidence sequence (`gate.confidence_sequences`), and a spend budget's part
    of report.json (`gate.budget_report`): a budget's run is judged as a stopping run."""
    state = stop_state_of(ctx)
    if state is None:
        return budget_section(ctx, stop_state_of)
    return {"confidence_sequences": confidence_sequences(state), **budget_section(ctx, stop_state_of)}


FEATURE = GateFeature(name="stopping", rule=_rule, section=_section, summary=_summary)
