"""What the LLM judge means for the verdict: the report's `judge` section; criteria left undecided where the
judge is not calibrated against the reviewers; and, where it is, accuracy as the reviewers would have judged it.

A calibrated judge is still wrong sometimes: with 90% agreement, a judge-scored accuracy of 0.90 may be 0.80 in
the reviewers' eyes. So a criterion fed by judge verdicts gates on the reviewer-corrected accuracy: each case the
judge passed counts as the judge's precision (share of the labelled judge passes the reviewers approved), each
case it failed as its false-omission rate (share of the labelled judge fails they approved). With a
`confidence`, the lower bound subtracts from the judge-scored accuracy's Wilson lower bound the share of
judge-passed cases times one minus the precision's own Wilson lower bound (false fails, which would only raise
it, are not credited), and the upper bound adds the judge-failed share times the false-omission rate's upper
bound: a judge that passes what reviewers reject can no longer lift a model over its threshold."""

from __future__ import annotations

from ..judging.criteria import CriterionResult, Undecided, judge_criterion
from ..judging.metrics import MetricValue, compute_metric, select
from ..judging.stats import wilson_bounds
from .calibration import calibrate
from .stage import judge_summary

__all__ = ["judge_section", "undecided_by_judge", "corrected_by_reviewers", "JUDGE_FED_METRICS"]

JUDGE_FED_METRICS = ("accuracy",)
"""Metrics a judge-scored answer feeds (the judge grades the answer, nothing else)."""
PAIRWISE_METRICS = ("pairwise_win_rate", "pairwise_loss_rate", "order_inconsistency_rate")
"""Metrics of the judge's comparisons with a baseline run (`judge.baseline`)."""


def judge_section(info, records, scores: dict, labels, rubric, verdicts) -> dict | None:
    """The report's `judge`: the judge and its calls, tokens and cost (apart from the model's), and its
    calibration per criterion and slice. None when no case is judge-scored and no judge is configured."""
    judged = [r for r in records if (r.answer or {}).get("type") == "judge"]
    if not judged and not info.judge:
        return None
    summary = judge_summary(records, verdicts.judgments if verdicts else {}, info.judge) or {"model": None}
    calibration = calibrate(records, scores, labels or [], rubric.judge)
    rate = compute_metric("judge_error_rate", records, scores, {}).as_dict()
    out = {**summary, "judge_error_rate": rate, "policy": rubric.judge.as_dict(), "calibration": calibration}
    pairwise = _pairwise_summary(records, scores, rubric.judge.max_order_inconsistency)
    if pairwise:
        out["pairwise"] = pairwise
    return out


def _pairwise_summary(records, scores: dict, max_inconsistency: float) -> dict:
    """Per judge criterion: the comparisons with the baseline run, by outcome, and whether the judge held its
    preference when the order was swapped often enough for pairwise criteria to decide."""
    out: dict[str, dict] = {}
    for r in records:
        pair = scores.get(r.case_id, {}).get("pairwise")
        if pair is None:
            continue
        row = out.setdefault(pair["criterion"], {"compared": 0, "win": 0, "loss": 0, "tie": 0, "inconsistent": 0,
                                                 "not_judged": 0})
        row["compared"] += 1
        row[pair["outcome"] or "not_judged"] += 1
    for row in out.values():
        judged = row["compared"] - row["not_judged"]
        row["order_inconsistency_rate"] = row["inconsistent"] / judged if judged else None
        row["consistent"] = judged > 0 and row["order_inconsistency_rate"] <= max_inconsistency
    return out


def undecided_by_judge(results: list[CriterionResult], records, scores: dict, section: dict | None):
    """`results` with every criterion that an uncalibrated judge criterion's verdicts feed made insufficient."""
    if not section:
        return results
    uncalibrated = {name: row["why"] for name, row in section["calibration"].items() if not row["calibrated"]}
    for name, row in (section.get("pairwise") or {}).items():
        if not row["consistent"] and row["order_inconsistency_rate"] is not None:
            why = (f"its preference changed with the order on {row['inconsistent']} of "
                   f"{row['compared'] - row['not_judged']} comparisons, more than max_order_inconsistency "
                   f"{section['policy']['max_order_inconsistency']:g}")
            uncalibrated[name + "#pairwise"] = why
    if not uncalibrated:
        return results
    out = []
    for result in results:
        names = _judge_criteria_in(result, records, scores)
        if result.criterion.metric in PAIRWISE_METRICS:
            names |= {n + "#pairwise" for n in names}
        blocking = [n for n in sorted(names) if n in uncalibrated]
        if blocking:  # an already undecided one too: its cause is now the judge, which no switch relaxes
            why = "; ".join(f"judge criterion '{n.split('#')[0]}': {uncalibrated[n]}" for n in blocking)
            reason = f"judge not calibrated on this suite ({why})"
            result = result.undecided(reason if result.verdict != "insufficient" else f"{result.reason}; {reason}",
                                      Undecided.JUDGE)
        out.append(result)
    return out


def _judge_criteria_in(result: CriterionResult, records, scores: dict) -> set[str]:
    criterion = result.criterion
    if criterion.metric in PAIRWISE_METRICS:
        chosen = select(records, getattr(criterion, "slice", None))
        return {p["criterion"] for r in chosen if (p := scores.get(r.case_id, {}).get("pairwise"))}
    if criterion.metric not in JUDGE_FED_METRICS:
        return set()
    chosen = select(records, getattr(criterion, "slice", None))
    return {v["criterion"] for r in chosen if (v := scores.get(r.case_id, {}).get("answer", {}).get("judge"))}


def corrected_by_reviewers(results: list[CriterionResult], records, scores: dict, section: dict | None):
    """`results` with each decided criterion fed by calibrated judge verdicts judged again on the
    reviewer-corrected accuracy (see the module docstring)."""
    if not section:
        return results
    calibration = section["calibration"]
    out = []
    for result in results:
        own = getattr(result.criterion, "origin", None) != "baseline"  # a comparison's value is a delta, not a rate
        names = _judge_criteria_in(result, records, scores) if own and result.criterion.metric in JUDGE_FED_METRICS else set()
        if names and result.verdict != "insufficient" and all(calibration[n]["calibrated"] for n in names):
            value = _corrected(result, records, scores, calibration, section["policy"]["confidence"])
            result = _rejudged(result, value)
        out.append(result)
    return out


def _corrected(result: CriterionResult, records, scores: dict, calibration: dict, label_conf: float) -> MetricValue:
    criterion = result.criterion
    chosen = [r for r in select(records, getattr(criterion, "slice", None)) if "answer" in scores.get(r.case_id, {})
              or r.output is None]
    n = len(chosen)
    point = 0.0
    shift_down = shift_up = 0.0
    for r in chosen:
        answer = scores.get(r.case_id, {}).get("answer", {})
        verdict = answer.get("judge")
        if verdict is None or verdict.get("passed") is None:
            point += bool(answer.get("passed"))
            continue
        c = calibration[verdict["criterion"]]["confusion"]
        if verdict["passed"]:
            a, b = c["judge_pass_reviewer_approve"], c["judge_pass_reviewer_reject"]
            if a + b == 0:
                return MetricValue(None, n, note="no labelled case the judge passed: its precision is unknown")
            point += a / (a + b)
            shift_down += 1.0 - wilson_bounds(a, a + b, label_conf)[0]
        else:
            a, d = c["judge_fail_reviewer_approve"], c["judge_fail_reviewer_reject"]
            if a + d == 0:
                return MetricValue(None, n, note="no labelled case the judge failed: its false-fail rate is unknown")
            point += a / (a + d)
            shift_up += wilson_bounds(a, a + d, label_conf)[1]
    judged = result.value
    note = (f"reviewer-corrected: the judge's verdicts give {judged.value:.4g}; each verdict weighted by how often "
            f"reviewers agreed with verdicts like it")
    bounds = None
    if judged.bounds is not None and n:
        lo, hi = judged.bounds
        bounds = (None if lo is None else max(0.0, lo - shift_down / n), None if hi is None else min(1.0, hi + shift_up / n))
    return MetricValue(point / n if n else None, n, bounds, note, judged.confidence)


def _rejudged(result: CriterionResult, value: MetricValue) -> CriterionResult:
    again = judge_criterion(result.criterion, value)
    cause = Undecided.JUDGE if again.verdict == "insufficient" else None  # the judge's calibration is in the bound
    return CriterionResult(again.criterion, value, again.verdict, again.reason or value.note, again.needed_n, cause)
