"""The dispatch's side of `check --stop-when-decided`: the cases asked in the run's random order, and after each
journaled batch, whether every criterion is decided on the longest completed prefix of that order (requests in
flight finish; a case answered out of order never decides before the cases ahead of it).

The decision is `gate.stopping`'s, the one the gate makes again from the records on disk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ..gate.context import GateContext, GateInputs
from ..gate.paired_stopping import baseline_pairing
from ..gate.stopping import run_stop_state, stop_order, stopping_of
from ..inputs.config import Config
from ..inputs.rubric import Rubric
from ..inputs.suites import Case
from ..record.records import CaseRecord, RunInfo
from ..scorers import score_record

__all__ = ["StopWatch", "stop_plan", "require_seeded_order"]


def stop_plan(config: Config, case_ids: list[str], *, when_decided: bool = True) -> dict[str, Any]:
    """A new run that may stop before its suite ends: its order, fixed by the config's seed (manifest.json and
    run.json `stopping`). `when_decided`: it stops once every criterion is decided (False: only a budget stops
    it, `when_decided: false` recorded). Refused (exit 2) for a run spread over workers, which are handed every
    case at once."""
    why = "stop_when_decided" if when_decided else "budget"
    if config.scale is not None:
        raise InputError(f"{why} cannot stop a run spread over workers: scale hands them every case at once",
                         file=config.path, field="scale", hint=f"drop scale: or {why}")
    plan: dict[str, Any] = {"seed": config.seed, "order": stop_order(case_ids, config.seed)}
    if not when_decided:
        plan["when_decided"] = False
    return plan


def require_seeded_order(info: RunInfo, config: Config, case_ids: list[str], path: Any) -> None:
    """Refuse (exit 2) to resume a run whose recorded order is not its seed's shuffle of its cases: an order
    chosen after seeing answers (the right ones first) would let the e-processes stop on the cases it chose."""
    stopping = stopping_of(info)
    if stopping is None:
        return
    if [str(i) for i in stopping["order"]] != stop_order(case_ids, config.seed):
        raise InputError(f"run.json stopping.order is not the shuffle of the run's cases by its seed {config.seed}: "
                         "the order was edited", file=path, field="stopping.order", hint="start a new run instead")


class StopWatch:
    """Watches the records of a stopping run as they are journaled (see the module docstring)."""

    def __init__(self, info: RunInfo, rubric: Rubric, done: list[CaseRecord], ledger: Sequence[Any] = ()) -> None:
        """`ledger`: the run's attempts ledger as the run starts (`record.ledger`: the cached answers' sessions)."""
        stopping = stopping_of(info)
        assert stopping is not None, "a StopWatch is for a run that stops when decided"
        self.info, self.rubric = info, rubric
        self.order = [str(i) for i in stopping["order"]]
        self.criteria = GateContext(GateInputs(info, [], rubric)).criteria  # the default guard too
        self.records = {r.case_id: r for r in done}
        self.ledger = list(ledger)
        self.scores: dict[str, dict[str, Any]] = {}
        self.baseline = baseline_pairing(rubric, info)  # read once: the baseline run does not change under the run
        self.kept_going: list[tuple[str, str]] = []

    def arrange(self, todo: list[Case]) -> list[Case]:
        """The cases to ask, in the run's order (a case the order does not hold, last)."""
        rank = {case_id: i for i, case_id in enumerate(self.order)}
        return sorted(todo, key=lambda c: rank.get(c.id, len(rank)))

    def decided(self, records: list[CaseRecord]) -> bool:
        """Add a journaled batch; True when every criterion is decided with cases of the order still to ask
        (run.json `stopping.stopped_at` then says after how many)."""
        for record in records:
            self.records[record.case_id] = record
            self.scores.pop(record.case_id, None)
        if self.info.stopping is not None and self.info.stopping.get("when_decided") is False:
            return False  # a budget's order: only the budget stops it
        state = run_stop_state(self.info, self.criteria, self.records, self._scores,
                               baseline=self.baseline, ledger=self.ledger)
        self.kept_going = state.kept_going()
        if not state.all_decided or state.asked >= len(self.order):
            return False
        assert self.info.stopping is not None
        self.info.stopping["stopped_at"] = state.asked
        return True

    def _scores(self, record: CaseRecord) -> dict[str, Any]:
        """A record's scores as the gate will read them without any judge or guard verdict yet: a case that
        waits for one is unknown, never a pass."""
        if record.case_id not in self.scores:
            self.scores[record.case_id] = score_record(record, self.rubric.forbidden, None)
        return self.scores[record.case_id]
