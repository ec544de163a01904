"""What a run that stops when decided (`check --stop-when-decided`) knows after each case: every criterion's values
in the run's random order, over the longest completed prefix of that order only, and where each was decided.

The same function reads the records as they are journaled (the dispatch asks, after each batch, whether to go on,
`run.stop_watch`) and as they are on disk (the gate, `gate.stopping_feature`), so `gate` and `verify` on a stored
run find the stop the run made. The order is the run's seed's (`stop_order`), recorded in run.json and the
manifest; a resumed run asks the rest of the same order.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..data_classes import dataclass
from ..decision.stopping import (
    WHOLE_PROBE_METRICS,
    Decided,
    Track,
    anytime_method,
    decided_at,
    fail_tests,
)
from ..record.evidence import answered, attempt_outcomes
from ..record.metrics import ERROR_METRICS, select
from ..record.records import CaseRecord, RunInfo
from ..stats.sample_weights import is_weighted
from .case_scores import case_scores
from .paired_stopping import BaselinePairing, paired_tracks
from .run_view import stopping_of_run

__all__ = ["stop_order", "StopState", "stop_state", "run_stop_state", "case_values", "stopping_of"]

ScoresOf = Callable[[CaseRecord], Mapping[str, Any]]


def stop_order(case_ids: Sequence[str], seed: int) -> list[str]:
    """The order a stopping run asks its cases in: a shuffle fixed by the run's seed."""
    order = list(dict.fromkeys(case_ids))
    random.Random(f"stop-when-decided:{seed}").shuffle(order)
    return order


def stopping_of(info: RunInfo) -> dict[str, Any] | None:
    """The run's stopping record (run.json `stopping`), or None for a run that asks every case."""
    return info.stopping if stopping_of_run(info).order is not None else None


def case_values(metric: str, record: CaseRecord, scores: Mapping[str, Any]) -> list[float] | None:
    """The values one case adds to a criterion on `metric`: one (yes 1.0, no 0.0) for a rate over cases, one per
    request for an error rate, none when the case has no such check; None when a value is unknown (no guard or
    judge verdict yet, a check that could not be made)."""
    if metric in ERROR_METRICS:
        return [0.0 if kind is None else 1.0 for kind in attempt_outcomes([record], cached=False)]
    if metric == "forbidden_rate":
        if not answered(record):
            return []
        found = case_scores(dict(scores)).forbidden
        if found is None:
            return [0.0]
        return None if found.unknown else [1.0 if found.hit else 0.0]
    key = "answer" if metric == "accuracy" else "format"
    got = case_scores(dict(scores)).part(key)
    if got is None:
        has_check = bool(record.answer) if key == "answer" else bool(record.format)
        return [0.0] if not answered(record) and has_check else []
    return None if got.unknown else [1.0 if got.passed else 0.0]


@dataclass(frozen=True)
class StopState:
    """Every criterion's track and where its e-process decided, over the completed prefix of the order."""

    asked: int
    """Cases of the order in the completed prefix."""
    planned: int
    tracks: dict[str, Track]
    decided: dict[str, Decided]
    held: tuple[tuple[str, str], ...] = ()
    """(name, why) of what no criterion's track stands for and keeps the run asking (a baseline comparison)."""
    keys: tuple[tuple[Any, str], ...] = ()
    """(criterion, its key in `tracks` and `decided`): its name, numbered where a rubric gives two one name."""
    fail_tests: int = 1
    """m of e-Bonferroni: the criteria and baseline rows whose e-process may FAIL the run."""
    paired: tuple[tuple[str, Any], ...] = ()
    """(row name, its criterion on the values (d + 1) / 2) of each baseline row tracked (`gate.paired_stopping`);
    its track and where it was decided are in `tracks` and `decided` under the row's name."""

    def paired_of(self, metric: str) -> tuple[str, Any] | None:
        """(key, criterion on its values) of the baseline row on `metric`, None for a row not tracked."""
        return next(((key, c) for key, c in self.paired if c.metric == metric), None)

    def key_of(self, criterion: Any) -> str | None:
        """The key of this very criterion (not one of its name), None for one the state was not made with."""
        return next((key for c, key in self.keys if c is criterion), None)

    @property
    def complete(self) -> bool:
        return self.asked >= self.planned

    @property
    def all_decided(self) -> bool:
        return not self.held and all(d.verdict is not None for d in self.decided.values())

    def kept_going(self) -> list[tuple[str, str]]:
        """(criterion, why) for each criterion not decided: what keeps the run asking."""
        out = list(self.held)
        for name, track in self.tracks.items():
            if self.decided[name].verdict is None:
                out.append((name, track.blocked or "its e-process has not decided it"))
        return out


def stop_state(criteria: Sequence[Any], order: Sequence[str], records: Mapping[str, CaseRecord],
               scores_of: ScoresOf, repeated: bool = False, load_phase: bool = False,
               ledger: int = 0, baseline: BaselinePairing | None = None) -> StopState:
    """The state after the records journaled so far (`records`: by case id). `repeated`: the run asks some case
    more than once (its draws have no anytime method yet); `load_phase`: the run plans one (its requests are in
    `error_rate` too); `ledger`: the quality attempts its error rates count that no record holds (`record.ledger`:
    the sessions behind its cached answers); `baseline`: the rubric's baseline run, paired case by case."""
    prefix = []
    for case_id in order:
        record = records.get(case_id)
        if record is None:
            break
        prefix.append(record)
    complete = len(prefix) == len(order)
    # a record the order does not hold (an order edited, a case asked outside it): the prefix is not what was asked
    stray = sorted(set(records) - set(order))
    if stray:
        state = _blocked(criteria, prefix, order, f"{len(stray)} record(s) not in the run's order ({stray[0]}, ...)")
        held = (("baseline comparison", "the records are not the run's order"),) if baseline is not None else ()
        return replace(state, held=held)
    tracks: dict[str, Track] = {}
    decided: dict[str, Decided] = {}
    keys: list[tuple[Any, str]] = []
    tests = fail_tests(criteria) + (len(baseline.rates) if baseline is not None else 0)
    for criterion in criteria:
        key = _unique(criterion.name, tracks)
        track = _track(criterion, prefix, scores_of, complete, (repeated, load_phase, ledger))
        tracks[key] = track
        decided[key] = Decided() if track.blocked else decided_at(criterion, track.values, tests)
        keys.append((criterion, key))
    rows, holding = paired_tracks(baseline, prefix, scores_of, ledger) if baseline is not None else ({}, [])
    paired = []
    for name, (criterion, values, cases, why) in rows.items():
        key = _unique(name, tracks)  # a rubric criterion may be named like a row: each keeps its own track
        tracks[key] = Track(values, complete, why, len(prefix), cases)
        decided[key] = Decided() if why else decided_at(criterion, values, tests)
        paired.append((key, criterion))
    return StopState(len(prefix), len(order), tracks, decided, tuple(holding), tuple(keys), tests, tuple(paired))


def _blocked(criteria: Sequence[Any], prefix: list[CaseRecord], order: Sequence[str], why: str) -> StopState:
    """A state in which no criterion is decided by its e-process, for `why`."""
    keys: list[tuple[Any, str]] = []
    tracks: dict[str, Track] = {}
    for criterion in criteria:
        key = _unique(criterion.name, tracks)
        tracks[key] = Track((), len(prefix) == len(order), why, len(prefix))
        keys.append((criterion, key))
    return StopState(len(prefix), len(order), tracks, {key: Decided() for key in tracks}, keys=tuple(keys))


def _unique(name: str, taken: Mapping[str, Any]) -> str:
    """`name`, or `name #2`, `name #3`... where a criterion before it has it: each criterion keeps its own track."""
    key, n = name, 1
    while key in taken:
        n += 1
        key = f"{name} #{n}"
    return key


def run_stop_state(info: RunInfo, criteria: Sequence[Any], records: Mapping[str, CaseRecord],
                   scores_of: ScoresOf, baseline: BaselinePairing | None = None, ledger: Sequence[Any] = ()
                   ) -> StopState:
    """`stop_state` of a stopping run (`info`: its order, its repeats, whether it plans a load phase);
    `baseline`: the rubric's baseline run paired case by case (`gate.paired_stopping.baseline_pairing`), whose
    rows are decided as they come where they can be; `ledger`: the run's attempts ledger
    (`record.ledger.read_ledger`)."""
    order = stopping_of_run(info).order
    assert order is not None, "run_stop_state is for a run that stops when decided"
    load_phase = "load" in (info.phases or []) or info.load_phase is not None
    return stop_state(criteria, [str(i) for i in order], records, scores_of,
                      repeated=bool(info.repeats), load_phase=load_phase,
                      ledger=sum(len(line.outcomes) for line in ledger if line.phase == "quality"), baseline=baseline)


def _track(criterion: Any, prefix: list[CaseRecord], scores_of: ScoresOf, complete: bool,
           run: tuple[bool, bool, int]) -> Track:
    """`run`: (repeated, load_phase, ledger) as `stop_state` takes them."""
    repeated, load_phase, ledger = run
    if criterion.metric in WHOLE_PROBE_METRICS:  # its evidence is the probe's, whole: the gate's result stands
        return Track((), True, f"{criterion.metric} is measured by the leakage probe on its own suite", len(prefix))
    why_not = anytime_method(criterion)
    if why_not:
        return Track((), complete, why_not, len(prefix))
    if load_phase and criterion.metric == "error_rate":
        return Track((), complete, "error_rate counts the load phase's requests too", len(prefix))
    if ledger and criterion.metric in ERROR_METRICS:  # the requests behind cached answers were never in the order
        return Track((), complete, f"{criterion.metric} counts the {ledger} request(s) of the sessions behind "
                     "cached answers too", len(prefix))
    if repeated:
        return Track((), complete, "repeated draws have no anytime-valid bound yet", len(prefix))
    if getattr(criterion, "phase", "quality") != "quality":
        return Track((), complete, "a load-phase rate has no anytime-valid bound", len(prefix))
    values: list[float] = []
    cases: list[int] = []
    chosen = {id(r) for r in select(prefix, criterion.slice or None)}
    for position, record in enumerate(prefix, start=1):
        if id(record) not in chosen:
            continue
        if is_weighted(record):
            return Track((), complete, "a weighted sample's rate has no anytime-valid bound", len(prefix))
        got = case_values(criterion.metric, record, scores_of(record))
        if got is None:
            return Track(tuple(values), complete, f"case {record.case_id} has no verdict yet", len(prefix),
                         tuple(cases))
        values += got
        cases += [position] * len(got)
    return Track(tuple(values), complete, "", len(prefix), tuple(cases))
