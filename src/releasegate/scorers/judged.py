"""The judge answer scorer: a case passes when the LLM judge's verdict on its output is pass.

The verdict is asked for once, by the judging stage (releasegate.llm_judge), and kept in judgments.jsonl; this
scorer only reads it. No verdict for the output (not judged yet, the judge unreachable) or a judge error is
unknown, never a pass: the criteria the case feeds are then insufficient (or, with `judge.on_error: fail`, a
judge error counts as a failed answer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..record.evidence import answered, failure
from ..record.judge_verdicts import criterion_name
from ._registry import Score, Spec, scorer

if TYPE_CHECKING:
    from ..record.judge_verdicts import Verdicts
    from ..record.records import CaseRecord

__all__ = ["judged_answer", "pairwise_outcome"]


@scorer("answer", "judge")
def judge(output: str, expected: Any, spec: Spec) -> Score:
    """Without the run's verdicts at hand, a judged answer is unknown."""
    return Score(False, "not judged: no judge verdict for this output", unknown=True)


def judged_answer(record: CaseRecord, verdicts: Verdicts | None) -> dict[str, Any]:
    """The answer score of a judge-scored record, from the run's verdicts (`llm_judge.Verdicts`, or None)."""
    spec = _judge_spec(record)
    name = criterion_name(spec)
    j = verdicts.of(record) if verdicts is not None else None
    if j is None:
        return {**judge(record.output or "", record.expected, spec).as_dict(),
                "judge": {"criterion": name, "passed": None, "error": "not_judged"}}
    info = {"criterion": name, "passed": j.passed, "score": j.score, "pass_mark": j.pass_mark, "reason": j.reason,
            "error": j.error}
    if j.error is not None:
        fail = verdicts is not None and verdicts.on_error == "fail"  # not None: it gave the judgment
        detail = f"judge error ({j.error}): {j.error_message or ''}".strip()
        return {**Score(False, detail, unknown=not fail).as_dict(), "judge": info}
    grade = f"grade {j.score}/{j.scale}, " if j.score is not None else ""
    detail = f"judge: {'pass' if j.passed else 'fail'} ({grade}{j.reason})" if j.reason else f"judge: {'pass' if j.passed else 'fail'}"
    return {**Score(bool(j.passed), detail).as_dict(), "judge": info}


def pairwise_outcome(record: CaseRecord, verdicts: Verdicts | None) -> dict[str, Any] | None:
    """The pairwise comparison of a judge-scored record with the baseline run's output: 'win', 'loss' or 'tie' when
    both orders agree, 'inconsistent' when the preference changed with the order, None when a judgment is
    missing or failed. None (no entry) for a case the baseline run does not have."""
    name = criterion_name(_judge_spec(record))
    if not answered(record) and verdicts is not None and record.case_id in verdicts.baseline_hashes:
        # the baseline answered and this run did not: a loss, never a case left out of the comparison
        return {"criterion": name, "outcome": "loss", "orders": None, "error": failure(record)}
    pair = verdicts.pair(record) if verdicts is not None else None
    if pair is None:
        return None
    preferred = [j.preferred for j in pair if j is not None and j.error is None and j.preferred is not None]
    if len(preferred) < len(pair):  # a judgment missing or failed
        errors = sorted({j.error for j in pair if j is not None and j.error})
        return {"criterion": name, "outcome": None, "error": ", ".join(errors) or "not_judged"}
    first, second = preferred
    outcome = {"candidate": "win", "baseline": "loss", "tie": "tie"}[first] if first == second else "inconsistent"
    return {"criterion": name, "outcome": outcome, "orders": [first, second]}


def _judge_spec(record: CaseRecord) -> Spec:
    """The answer spec of a judge-scored record (only those are judged)."""
    assert record.answer is not None, record.case_id
    return record.answer
