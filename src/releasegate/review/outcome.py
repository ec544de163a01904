"""What the automatic scorers said about a case, in the terms review uses."""

from __future__ import annotations

import hashlib

from ..judging.evidence import answered
from ..run.record import CaseRecord

__all__ = ["PASS", "BORDERLINE", "FAIL", "automatic_outcome", "check_verdicts", "output_hash", "normalise_output"]

PASS, BORDERLINE, FAIL = "pass", "borderline", "fail"


def automatic_outcome(record: CaseRecord, scores: dict) -> str:
    """'pass': every check passed. 'borderline': the checks disagree (e.g. valid format but wrong answer).
    'fail': the request failed, a forbidden rule hit, or every check failed. A judge-scored answer the judge gave
    no verdict on, or graded one step either side of its pass mark, is 'borderline' too."""
    if not answered(record) or scores.get("forbidden", {}).get("hit"):  # an empty answer is a failed request
        return FAIL
    if _judge_unsure(scores.get("answer", {}).get("judge")):
        return BORDERLINE  # over-drawn for review: where the judge is least certain, its calibration matters most
    checks = [bool(scores[k]["passed"]) for k in ("answer", "format") if k in scores]
    if all(checks):
        return PASS
    return BORDERLINE if any(checks) else FAIL


def _judge_unsure(verdict: dict | None) -> bool:
    if not verdict:
        return False
    if verdict.get("passed") is None:
        return True
    score, mark = verdict.get("score"), verdict.get("pass_mark")
    return score is not None and mark is not None and mark - 1 <= score <= mark


def check_verdicts(scores: dict) -> dict[str, str]:
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
