"""A rubric's `baseline:` on a run that may stop when decided: each compared rate (accuracy, format compliance, the
forbidden rate, the error rate) as the per-case difference d = candidate - baseline in [-1, 1], in the run's random
order, over the longest completed prefix of it, each case matched with the baseline's record of its id.

The values an e-process reads are (d + 1) / 2 in [0, 1], and the row's criterion ("no worse than the margin":
mean d >= -margin, or <= margin for a rate where lower is better) is the same criterion on them, its threshold
mapped the same way (`paired_criterion`); `decision.stopping` decides it as it decides a rate of the run's own.

What cannot be decided this way holds the run to the end of its suite, as a comparison always did: a baseline that
proves nothing about the run (`baseline.standing_problems`), a case of the prefix the baseline lacks or holds with
other contents, a pair whose check is unknown in one run (a judge's or a guard's verdict not in yet), repeated
draws or a weighted sample, a forbidden rate fed by a guard (its calibration corrects it after the run), an error
rate on a run whose cached answers' sessions no case holds, and latency (a bootstrap of the differences: no
anytime-valid bound).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any

from ..data_classes import dataclass
from ..errors import ReleasegateError
from ..inputs.rubric import Rubric
from ..record.evidence import answered
from ..record.records import CaseRecord, RunInfo
from ..scorers import score_records
from ..stats.sample_weights import is_weighted
from .baseline import comparison_margins, row_criterion, standing_problems
from .baseline_run import SavedBaseline, read_baseline
from .baseline_spec import baseline_spec
from .comparability import paired_hash
from .paired_comparison import LATENCY_METRICS, RATE_KEYS, UNKNOWN, case_outcome

__all__ = ["BaselinePairing", "baseline_pairing", "paired_criterion", "paired_tracks", "NO_LATENCY_METHOD"]

NO_LATENCY_METHOD = "a latency comparison (a bootstrap of the differences) has no anytime-valid bound"
ScoresOf = Callable[[CaseRecord], Mapping[str, Any]]


@dataclass(frozen=True)
class BaselinePairing:
    """What a run that may stop needs of its baseline run to decide the compared rates as its cases come."""

    problems: tuple[str, ...]
    """Why the baseline proves nothing about this run (the comparison then keeps the run going)."""
    rates: tuple[str, ...] = ()
    """The compared rates with a method, in `RATE_KEYS` order (the rubric's `baseline.metrics` chooses)."""
    latency: tuple[str, ...] = ()
    margins: Mapping[str, float] = field(default_factory=dict)
    confidence: float = 0.95
    records: Mapping[str, CaseRecord] = field(default_factory=dict)
    """The baseline's records by case id."""
    outcomes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """case id -> `RATE_KEYS` key -> the baseline's outcome (`paired_comparison.case_outcome`)."""
    guarded: bool = False
    """A forbidden rule of the rubric is a guard's."""
    repeated: bool = False


def baseline_pairing(rubric: Rubric, info: RunInfo, saved: SavedBaseline | Callable[[], SavedBaseline] | None = None,
                     verdicts: Any = None) -> BaselinePairing | None:
    """The run's pairing with its rubric's baseline (None without one). `saved`: the baseline as read (or how to
    read it); a baseline that cannot be read is a problem, never an error here: the gate's comparison says it."""
    if not rubric.baseline:
        return None
    spec = baseline_spec(rubric.baseline)
    chosen = spec.metrics
    # the rows it may decide, whatever the baseline holds: m of e-Bonferroni is fixed before any case
    rates = tuple(m for m in RATE_KEYS if not chosen or m in chosen or m == "error_rate")
    try:
        found = saved() if callable(saved) else saved if saved is not None else read_baseline(spec.run)
        problems = tuple(standing_problems(rubric, found, info, verdicts))
    except (ReleasegateError, OSError) as exc:
        return BaselinePairing((f"the baseline run cannot be read ({exc})",), rates)
    margins = comparison_margins(rubric)
    scores = score_records(found.records, rubric.forbidden, found.verdicts)
    outcomes = {r.case_id: {key: case_outcome(key, r, scores.get(r.case_id, {})) for key, _ in RATE_KEYS.values()}
                for r in found.records}
    return BaselinePairing(
        problems, rates, tuple(m for m in LATENCY_METRICS if not chosen or m in chosen), dict(margins.margins),
        margins.confidence, {r.case_id: r for r in found.records}, outcomes, any(rule.guard for rule in rubric.forbidden),
        bool(info.repeats) or bool(found.draws is not None and found.draws.repeated))


def paired_criterion(metric: str, pairing: BaselinePairing) -> Any:
    """The row's criterion on the values (d + 1) / 2: its threshold mapped as the values are, its alpha the
    comparison's."""
    criterion = row_criterion(metric, float(pairing.margins[metric]))
    return dataclasses.replace(criterion, threshold=(criterion.threshold + 1.0) / 2.0,
                               confidence=pairing.confidence)


def paired_tracks(pairing: BaselinePairing, prefix: Sequence[CaseRecord], scores_of: ScoresOf,
                  ledger: int = 0) -> tuple[dict[str, tuple[Any, tuple[float, ...], tuple[int, ...], str]],
                                            list[tuple[str, str]]]:
    """({row name: (its criterion on the values, the values, the case of the order each came from, why it cannot
    be decided as they come or '')}, [(name, why) of what else holds the run]). A rate no pair of the prefix
    speaks of (no case with that check; an error rate with no failure in either run) is no row, as the
    comparison on the same cases has none."""
    if pairing.problems:
        return {}, [("baseline comparison", "baseline not usable: " + "; ".join(pairing.problems))]
    rows = {}
    for metric in pairing.rates:
        values, cases, why = _differences(metric, pairing, prefix, scores_of, ledger)
        if why or (values and (metric != "error_rate" or any(v != 0.5 for v in values))):
            rows[f"{metric} vs baseline"] = (paired_criterion(metric, pairing), values, cases, why)
    held = [(f"{m} vs baseline", NO_LATENCY_METHOD) for m in pairing.latency if _timed_pairs(m, pairing, prefix) >= 2]
    return rows, held


def _differences(metric: str, pairing: BaselinePairing, prefix: Sequence[CaseRecord], scores_of: ScoresOf,
                 ledger: int) -> tuple[tuple[float, ...], tuple[int, ...], str]:
    """The values (d + 1) / 2 of the prefix's pairs, the case of the order of each, and why they cannot decide."""
    key, _ = RATE_KEYS[metric]
    why = _blocked(metric, pairing, ledger)
    if why:
        return (), (), why
    values: list[float] = []
    cases: list[int] = []
    for position, record in enumerate(prefix, start=1):
        base = pairing.records.get(record.case_id)
        if base is None:
            return (), (), f"case {record.case_id} is not in the baseline run"
        if paired_hash(base) != paired_hash(record):
            return (), (), f"case {record.case_id} has other contents in the baseline run"
        if is_weighted(base) or is_weighted(record):
            return (), (), "a weighted sample's comparison has no anytime-valid bound"
        x, y = pairing.outcomes[record.case_id][key], case_outcome(key, record, dict(scores_of(record)))
        if x is None or y is None:
            continue  # a metric the case has no check of, or a failed request: no pair, as the comparison says
        if UNKNOWN in (x, y):
            return tuple(values), tuple(cases), f"case {record.case_id} has no verdict yet in one run"
        values.append((float(y) - float(x) + 1.0) / 2.0)
        cases.append(position)
    return tuple(values), tuple(cases), ""


def _blocked(metric: str, pairing: BaselinePairing, ledger: int) -> str:
    if pairing.repeated:
        return "repeated draws have no anytime-valid comparison yet"
    if metric == "forbidden_rate" and pairing.guarded:
        return "a guard's forbidden verdicts are corrected by its calibration after the run"
    if metric == "error_rate" and ledger:
        return f"the error rate counts the {ledger} request(s) of the sessions behind cached answers too"
    return ""


def _timed_pairs(metric: str, pairing: BaselinePairing, prefix: Sequence[CaseRecord]) -> int:
    """The prefix's pairs a latency row would compare (`paired_comparison`: both answered, none cached, timed)."""
    count = 0
    for record in prefix:
        base = pairing.records.get(record.case_id)
        if base is None or not (answered(base) and answered(record)) or base.cached or record.cached:
            continue
        count += getattr(base.timing, metric) is not None and getattr(record.timing, metric) is not None
    return count
