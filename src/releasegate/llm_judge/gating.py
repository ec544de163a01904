"""What the LLM judge means for the verdict: the report's `judge` section, and criteria left undecided where the
judge is not calibrated against the reviewers."""

from __future__ import annotations

from ..gate import CriterionResult
from ..metrics import select
from .calibration import calibrate
from .stage import judge_summary

__all__ = ["judge_section", "undecided_by_judge", "JUDGE_FED_METRICS"]

JUDGE_FED_METRICS = ("accuracy",)
"""Metrics a judge-scored answer feeds (the judge grades the answer, nothing else)."""


def judge_section(info, records, scores: dict, labels, rubric, verdicts) -> dict | None:
    """The report's `judge`: the judge and its calls, tokens and cost (apart from the model's), and its
    calibration per criterion and slice. None when no case is judge-scored and no judge is configured."""
    judged = [r for r in records if (r.answer or {}).get("type") == "judge"]
    if not judged and not info.judge:
        return None
    summary = judge_summary(records, verdicts.judgments if verdicts else {}, info.judge) or {"model": None}
    calibration = calibrate(records, scores, labels or [], rubric.judge)
    return {**summary, "policy": rubric.judge.as_dict(), "calibration": calibration}


def undecided_by_judge(results: list[CriterionResult], records, scores: dict, section: dict | None):
    """`results` with every criterion that an uncalibrated judge criterion's verdicts feed made insufficient."""
    if not section:
        return results
    uncalibrated = {name: row["why"] for name, row in section["calibration"].items() if not row["calibrated"]}
    if not uncalibrated:
        return results
    out = []
    for result in results:
        names = _judge_criteria_in(result, records, scores)
        blocking = [n for n in names if n in uncalibrated]
        if blocking and result.verdict != "insufficient":
            why = "; ".join(f"judge criterion '{n}': {uncalibrated[n]}" for n in blocking)
            result = CriterionResult(result.criterion, result.value, "insufficient",
                                     f"judge not calibrated on this suite ({why})")
        out.append(result)
    return out


def _judge_criteria_in(result: CriterionResult, records, scores: dict) -> set[str]:
    criterion = result.criterion
    if criterion.metric not in JUDGE_FED_METRICS:
        return set()
    chosen = select(records, getattr(criterion, "slice", None))
    return {v["criterion"] for r in chosen if (v := scores.get(r.case_id, {}).get("answer", {}).get("judge"))}
