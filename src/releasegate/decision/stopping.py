"""A criterion decided on a run that may stop as soon as every criterion is decided (`check --stop-when-decided`).

The run asks its cases in a random order fixed by its seed; after each case, each criterion's betting e-process
(`stats.anytime`) over the values of the longest completed prefix of that order is checked. A criterion's error
budget is alpha = 1 - confidence (0.05 when the criterion has none), spent so that stopping on a look at the data
never makes a wrong verdict likelier than a fixed-size run's:

- during the run, PASS is said when the e-process towards the safe side reaches 1 / (alpha * RUN_SHARE), and
  FAIL when the one towards the other side reaches m / (alpha * RUN_SHARE), m the criteria with an anytime
  method (`fail_tests`; e-Bonferroni: a run FAILs on any criterion, so each FAIL is tested at its share of the
  level; a criterion with no method FAILs only on the whole suite, as ever);
- a criterion still undecided when its whole suite has been asked is decided by an exact bound on the whole
  suite at alpha * END_SHARE (yes/no values: the exact binomial test; a criterion with no `confidence` on its
  point value, as the gate always decides it).

A wrong PASS is then at most alpha * (RUN_SHARE + END_SHARE) = 0.6 alpha, whatever the run stopped on. A
criterion with no anytime method (`anytime_method` says why) is decided as ever when the suite ends, and a run
that stopped before its end leaves it undecided: a fixed-size bound at an n the data chose is not valid.
"""

from __future__ import annotations

import math
from typing import Any

from ..data_classes import dataclass
from ..record.metrics import ERROR_METRICS, MetricValue
from ..stats.anytime import Side, confidence_bounds, exact_rate_shown, first_crossing
from ..stats.intervals import cluster_share_bounds
from .criterion import CriterionResult, CriterionVerdict, Undecided, undecided

__all__ = ["ANYTIME_METRICS", "WHOLE_PROBE_METRICS", "RUN_SHARE", "END_SHARE", "Track", "Decided", "anytime_method", "criterion_alpha",
           "fail_tests", "decision_levels", "decided_at", "cases_to_decide", "decide_stopped", "NO_ANYTIME_COMPARISON", "decide_stopped_comparison",
           "held_by_stop"]

ANYTIME_METRICS = ("accuracy", "format_compliance", "forbidden_rate", "error_rate", "error_rate_quality")
"""Metrics that are a mean of one value in [0, 1] per case (an error rate: per request of the quality cases) in
the order asked; `error_rate` only where no load phase adds its requests (`gate.stopping`)."""
WHOLE_PROBE_METRICS = ("extraction_rate_delta", "membership_auc", "membership_tpr_at_1fpr", "canary_exposure_bits")
"""Metrics of the leakage probe measured on its own suite, whole, whatever prefix of the order was asked (not
`pii_regurgitation_rate`: it reads every answer of the run too)."""
RUN_SHARE = 0.1
"""The share of a criterion's alpha each side's e-process spends while the run goes on."""
END_SHARE = 0.5
"""The share spent by the exact bound on the whole suite, for a criterion the e-process left undecided."""
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class Track:
    """One criterion's values in the order the run asked its cases, over the longest completed prefix."""

    values: tuple[float, ...]
    complete: bool
    """Whether the prefix is the whole suite (every case the run planned was asked)."""
    blocked: str = ""
    """Why the values cannot decide the criterion as they come ('' when they can): an unknown score, a weighted
    sample, repeated draws."""
    asked: int = 0
    """Cases of the order in the prefix (a criterion on a slice holds fewer values)."""
    case_of: tuple[int, ...] = ()
    """For each value, the case of the order (1-based) it came from: where a decision was made, in cases asked."""

    def case_at(self, value: int) -> int:
        """The case of the order (1-based) that brought the `value`-th value (1-based)."""
        return self.case_of[value - 1] if 0 < value <= len(self.case_of) else value


@dataclass(frozen=True)
class Decided:
    """Where a criterion's e-process decided: its verdict and the value (1-based) it decided at, or neither."""

    verdict: CriterionVerdict | None = None
    at: int | None = None


def anytime_method(criterion: Any) -> str:
    """'' when the criterion has an anytime method, else why not (said in the report: it kept the run going)."""
    metric, op, threshold = criterion.metric, criterion.op, criterion.threshold
    if metric not in ANYTIME_METRICS:
        return f"{metric} has no anytime-valid bound"
    if getattr(criterion, "slice", None) and metric in ERROR_METRICS:
        return "an error rate on a slice has no anytime-valid bound"
    if not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        return f"threshold {threshold!r} is not a number"
    higher = op in (">=", ">")
    if (higher and threshold >= 1.0) or (not higher and threshold <= 0.0):
        return f"{op} {threshold:g} is a zero-tolerance limit: only the whole suite shows it"
    if (higher and threshold <= 0.0) or (not higher and threshold >= 1.0):
        return f"{op} {threshold:g} holds for any rate: nothing to decide"
    return ""


def fail_tests(criteria: Any) -> int:
    """m of e-Bonferroni: the criteria whose e-process may FAIL the run (those with an anytime method)."""
    return max(1, sum(1 for c in criteria if not anytime_method(c)))


def criterion_alpha(criterion: Any) -> float:
    """A criterion's error budget: 1 - its confidence, 0.05 without one."""
    confidence = criterion.confidence
    return 1.0 - confidence if confidence else DEFAULT_ALPHA


def _sides(criterion: Any) -> tuple[Side, Side]:
    """(the side a PASS shows, the side a FAIL shows)."""
    return ("above", "below") if criterion.op in (">=", ">") else ("below", "above")


def decision_levels(criterion: Any, criteria: int) -> tuple[Side, float, float]:
    """(the side a PASS shows, the level its e-process is checked at, the level the FAIL side's is): what a
    confidence sequence drawn for the criterion uses on each side, so a bound crosses where it was decided."""
    alpha = criterion_alpha(criterion) * RUN_SHARE
    return _sides(criterion)[0], alpha, alpha / max(1, criteria)


def decided_at(criterion: Any, values: tuple[float, ...], criteria: int) -> Decided:
    """Where the criterion's e-process first decided it over `values` (`criteria`: how many the run has)."""
    if not values or anytime_method(criterion):
        return Decided()
    alpha = criterion_alpha(criterion) * RUN_SHARE
    to_pass, to_fail = _sides(criterion)
    passed = int(first_crossing(values, criterion.threshold, to_pass, alpha))
    failed = int(first_crossing(values, criterion.threshold, to_fail, alpha / max(1, criteria)))
    if passed and (not failed or passed < failed):
        return Decided(CriterionVerdict.PASS, passed)
    if failed:
        return Decided(CriterionVerdict.FAIL, failed)
    return Decided()


def cases_to_decide(criterion: Any, track: Track, left: int, criteria: int) -> int | None:
    """A projection, never a verdict: the values more, at the rate seen so far, after which the criterion's
    e-process would decide it, within `left`; None when it has no anytime method, its track is blocked, or it
    would not decide within `left` (the suite's end then decides it)."""
    if anytime_method(criterion) or track.blocked or not track.values or left <= 0:
        return None
    rate = sum(track.values) / len(track.values)
    # the rate spread evenly over 0/1 values: floor((j + 1) r) - floor(j r) has mean r over any stretch
    more = tuple(float(math.floor((j + 1) * rate) - math.floor(j * rate)) for j in range(left))
    found = decided_at(criterion, track.values + more, criteria)
    if found.verdict is None or found.at is None:
        return None
    return max(0, found.at - len(track.values))


def decide_stopped(criterion: Any, track: Track, criteria: int, fixed: CriterionResult) -> CriterionResult:
    """The criterion's verdict on a run that could stop early: its e-process's when it decided, else the exact
    bound on the whole suite, else (suite not all asked) undecided. `fixed`: the gate's ordinary result, which
    stands for a criterion with no anytime method when the whole suite was asked."""
    why_not = anytime_method(criterion) or track.blocked
    if why_not:
        if track.complete:
            return fixed
        return undecided(criterion, fixed.value, f"{why_not}, and the run stopped after {track.asked} case(s)",
                         Undecided.UNKNOWN)
    value = _value(criterion, track)
    found = decided_at(criterion, track.values, criteria)
    if found.verdict is not None:
        failed = found.verdict == CriterionVerdict.FAIL
        level = (criteria if failed else 1) / (criterion_alpha(criterion) * RUN_SHARE)
        side = _sides(criterion)[failed]
        at = track.case_at(found.at or 0)
        why = (f"anytime-valid: the e-process for '{side} {criterion.threshold:g}' reached {level:.4g} at case "
               f"{at} of the {track.asked} asked")
        return CriterionResult(criterion, value, found.verdict, why)
    if not track.complete:
        return undecided(criterion, value, f"the e-process is undecided after {len(track.values)} value(s)",
                         Undecided.SAMPLES)
    return _at_suite_end(criterion, track, value, fixed)


NO_ANYTIME_COMPARISON = "this paired comparison with the baseline has no anytime-valid bound"
"""Why a baseline row with no method (latency: a bootstrap) is undecided on a run that stopped before its end."""


def decide_stopped_comparison(result: CriterionResult, track: Track, criteria: int = 1,
                              paired: Any = None) -> CriterionResult:
    """A baseline's row on a run that could stop early. `paired`: the row's criterion on the values of `track`,
    (d + 1) / 2 for each pair's difference d = candidate - baseline in [-1, 1] (`gate.paired_stopping`); None
    for a row with no anytime method. Its e-process's verdict where it decided (m = `criteria` for FAIL, as for
    the run's own criteria); else, when the whole suite was asked, the row's fixed-size verdict (its bounds at
    the rest of the comparison's alpha); else undecided, whatever a fixed-size bound on the cases asked said."""
    if paired is not None and not track.blocked:
        found = decided_at(paired, track.values, criteria)
        if found.verdict is not None:
            return _paired_verdict(result, paired, track, found, criteria)
    if track.complete or result.verdict == CriterionVerdict.INSUFFICIENT:
        return result
    open_now = paired is not None and not track.blocked
    why = (f"the e-process is undecided after {len(track.values)} pair(s)" if open_now
           else track.blocked or NO_ANYTIME_COMPARISON)
    return result.undecided(f"{why}, and the run stopped after {track.asked} case(s)",
                            Undecided.SAMPLES if open_now else Undecided.UNKNOWN)


def _paired_verdict(result: CriterionResult, paired: Any, track: Track, found: Decided,
                    criteria: int) -> CriterionResult:
    """A baseline row its e-process decided, its value the mean difference with the confidence sequence's bounds."""
    failed = found.verdict == CriterionVerdict.FAIL
    alpha = criterion_alpha(paired) * RUN_SHARE
    side = _sides(paired)[failed]
    n = len(track.values)
    lo, hi = confidence_bounds(track.values, alpha)
    value = MetricValue(2.0 * sum(track.values) / n - 1.0, n, (2.0 * lo - 1.0, 2.0 * hi - 1.0),
                        f"candidate - baseline, paired, over the first {track.asked} case(s) of the run's random "
                        "order; bounds: the confidence sequence, valid at every case", 1 - alpha)
    why = (f"anytime-valid: the e-process for 'mean difference {side} {2.0 * paired.threshold - 1.0:+.4g}' reached "
           f"{(criteria if failed else 1) / alpha:.4g} at case {track.case_at(found.at or 0)} of the {track.asked} "
           "asked")
    assert found.verdict is not None
    return CriterionResult(result.criterion, value, found.verdict, why)


def _at_suite_end(criterion: Any, track: Track, value: MetricValue, fixed: CriterionResult) -> CriterionResult:
    """A criterion the e-process left undecided, on the whole suite: the exact bound at alpha * END_SHARE."""
    if not criterion.confidence:
        return fixed  # decided on its point value at the suite's planned n, as the gate always does
    alpha = criterion_alpha(criterion) * END_SHARE
    to_pass, to_fail = _sides(criterion)
    n = len(track.values)
    hits = sum(track.values)
    if all(v in (0.0, 1.0) for v in track.values):
        shown = {side: exact_rate_shown(int(hits), n, criterion.threshold, side, alpha) for side in (to_pass, to_fail)}
        how = f"exact binomial bound at {1 - alpha:.4g} on all {n}"
    else:
        lo, hi = cluster_share_bounds(list(track.values), 1 - alpha) or (0.0, 1.0)
        shown = {"above": lo > criterion.threshold, "below": hi < criterion.threshold}
        how = f"one-sided {1 - alpha:.4g} bounds [{lo:.4g}, {hi:.4g}] on all {n}"
    if shown[to_pass]:
        return CriterionResult(criterion, value, CriterionVerdict.PASS, f"{how}: {criterion.op} {criterion.threshold:g}")
    if shown[to_fail]:
        return CriterionResult(criterion, value, CriterionVerdict.FAIL,
                               f"{how}: not {criterion.op} {criterion.threshold:g}")
    return undecided(criterion, value, f"{how}: cannot decide {criterion.op} {criterion.threshold:g}",
                     Undecided.SAMPLES)


def _value(criterion: Any, track: Track) -> MetricValue:
    """The criterion's value over the prefix (its mean, n the values it holds)."""
    n = len(track.values)
    if not n:
        return MetricValue(None, 0, note="no case asked yet")
    alpha = criterion_alpha(criterion) * RUN_SHARE
    return MetricValue(sum(track.values) / n, n, confidence_bounds(track.values, alpha),
                       f"over the first {track.asked} case(s) of the run's random order; bounds: the confidence "
                       "sequence, valid at every case", 1 - alpha)


def held_by_stop(stopped: CriterionResult, corrected: CriterionResult) -> CriterionResult:
    """A criterion a later rule decided again (a guard's calibration, on a fixed-size bound of the cases asked) on
    a run that stopped before its end: that bound's n was the data's choice, so it never makes a PASS the stopping
    rule did not make, nor a FAIL (undecided then); what it leaves undecided stays undecided."""
    if corrected.verdict == CriterionVerdict.PASS and stopped.verdict != CriterionVerdict.PASS:
        return stopped
    if corrected.verdict == CriterionVerdict.FAIL and stopped.verdict != CriterionVerdict.FAIL:
        return corrected.undecided(f"{corrected.reason}; on a fixed-size bound of the cases a stopped run asked, "
                                   "which decides nothing", Undecided.UNKNOWN)
    return corrected
