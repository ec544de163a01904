"""What the automatic scorers said about a case, in the terms review uses."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from .evidence import answered

if TYPE_CHECKING:  # the outcome names are read with the rubric (`policy`), which `validate` loads: no run record
    from .records import CaseRecord

__all__ = ["PASSED", "ANSWER_FAIL", "FORMAT_FAIL", "JUDGE_UNSURE", "FAILED", "OUTCOMES", "BORDERLINE", "automatic_outcome",
           "oversample_weights", "check_verdicts", "output_hash", "normalise_output"]

PASSED, FAILED = "pass", "fail"
"""The automatic outcomes at either end (a review outcome, not a verdict: `decision.verdicts` has those)."""
ANSWER_FAIL = "answer_fail"
"""The output is well-formed (every format check passed) but its answer check failed: a wrong answer in valid JSON."""
FORMAT_FAIL = "format_fail"
"""The answer check passed but a format check failed."""
JUDGE_UNSURE = "judge_unsure"
"""A judge-scored answer the LLM judge gave no verdict on, or graded at its pass mark or one step below."""
OUTCOMES = (PASSED, ANSWER_FAIL, FORMAT_FAIL, JUDGE_UNSURE, FAILED)
"""Every automatic outcome, in the order reports list them."""
BORDERLINE = "borderline"
"""What review files and rubrics written before the split called answer_fail, format_fail and judge_unsure
together. Still read: a rubric's `oversample: {borderline: w}` weighs all three (`oversample_weights`), and an old
review sample's items keep the name they were drawn with."""
_SPLIT = (ANSWER_FAIL, FORMAT_FAIL, JUDGE_UNSURE)


def automatic_outcome(record: CaseRecord, scores: dict[str, Any]) -> str:
    """'pass': every check passed. 'answer_fail': the format is right but the answer check failed. 'format_fail':
    the answer is right but a format check failed. 'fail': the request failed (an empty answer too), a forbidden
    rule hit, or every check failed. 'judge_unsure': a judge-scored answer the judge gave no verdict on, or graded
    one step either side of its pass mark (over-drawn for review: where the judge is least certain, its
    calibration matters most)."""
    if not answered(record) or scores.get("forbidden", {}).get("hit"):
        return FAILED
    if _judge_unsure(scores.get("answer", {}).get("judge")):
        return JUDGE_UNSURE
    checks = {k: bool(scores[k]["passed"]) for k in ("answer", "format") if k in scores}
    if all(checks.values()):
        return PASSED
    if not any(checks.values()):
        return FAILED
    return ANSWER_FAIL if not checks.get("answer", True) else FORMAT_FAIL


def oversample_weights(raw: dict[str, Any]) -> dict[str, float]:
    """A rubric's `oversample` weights by outcome, `borderline` (the name before the split) standing for each of
    answer_fail, format_fail and judge_unsure that the mapping does not name itself."""
    weights = {k: float(v) for k, v in raw.items() if k != BORDERLINE}
    if BORDERLINE in raw:
        weights.update({k: float(raw[BORDERLINE]) for k in _SPLIT if k not in raw})
    return weights


def _judge_unsure(verdict: dict[str, Any] | None) -> bool:
    if not verdict:
        return False
    if verdict.get("passed") is None:
        return True
    score, mark = verdict.get("score"), verdict.get("pass_mark")
    return score is not None and mark is not None and mark - 1 <= score <= mark


def check_verdicts(scores: dict[str, Any]) -> dict[str, str]:
    """'answer', 'format', 'forbidden' -> 'pass' / 'fail', for the checks that apply ('' for the others)."""
    out = {key: ("pass" if scores[key]["passed"] else "fail") if key in scores else "" for key in ("answer", "format")}
    out["forbidden"] = ("fail" if scores["forbidden"]["hit"] else "pass") if "forbidden" in scores else ""
    return out


def normalise_output(text: str) -> str:
    """The text a hash is taken of: every run of whitespace as one space. Spreadsheets change whitespace on a round
    trip (line ends, trailing spaces; LibreOffice breaks cells of over ~16,000 characters at a space)."""
    return " ".join(text.split())


def output_hash(text: str | None) -> str:
    """'sha256:<hex>' of the normalised output (a failed request hashes as empty text)."""
    return "sha256:" + hashlib.sha256(normalise_output(text or "").encode("utf-8")).hexdigest()
