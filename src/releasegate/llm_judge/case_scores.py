"""The parts of a case's scores (`scorers.score.score_record`) the judge's gating reads, typed: the judge's verdict
on the answer (`scorers.judged.judged_answer`'s `judge`) and the pairwise comparison with a baseline run
(`pairwise_outcome`). Everything else a score holds is kept as it is (`extra="allow"`)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, ValidationError

from ..errors import InputError
from ..model_base import Model
from ..record.run_parts import problem_line

__all__ = ["JudgeVerdict", "PairOutcome", "ForbiddenMatch", "ForbiddenScore", "AnswerScore", "CaseScores", "case_scores", "judge_verdict",
           "judge_verdicts", "pair_outcome", "scores_of"]


class _Part(Model):
    model_config = ConfigDict(extra="allow")  # scores stored by a newer version keep what they hold


class JudgeVerdict(_Part):
    """The judge's verdict on a case's answer."""

    criterion: str
    """The judge criterion that graded it ('inline' for one written without a name)."""
    passed: bool | None = None
    """None: no verdict (not judged yet, or a judge error)."""
    score: Any = None
    """The grade on the criterion's scale, as the judge gave it; None without a scale."""


class PairOutcome(_Part):
    """A pairwise comparison with the baseline run's output of the case."""

    criterion: str
    outcome: str | None = None
    """'win', 'loss', 'tie' or 'inconsistent'; None: a judgment missing or failed."""


class ForbiddenMatch(_Part):
    """A forbidden hit: the rule that found it ('rules' for a regex or phrase rule, 'guard NAME' for a guard's
    word) and its category."""

    rule: str = "rules"
    category: str | None = None


class ForbiddenScore(_Part):
    """A reply's forbidden score (`scorers.forbidden.with_guards`)."""

    matches: list[ForbiddenMatch] = []
    guard_said: list[str] = []
    """The guards that gave a verdict on the reply."""


class AnswerScore(_Part):
    passed: bool | None = None
    judge: JudgeVerdict | None = None
    """Only on a judge-scored answer."""


class CaseScores(_Part):
    answer: AnswerScore | None = None
    forbidden: ForbiddenScore | None = None
    pairwise: PairOutcome | None = None


def case_scores(scores: dict[str, Any], case_id: str) -> CaseScores:
    """The typed scores of one case (empty for a case with none)."""
    return scores_of(scores.get(case_id) or {}, case_id)


def scores_of(score: dict[str, Any], case_id: str | None = None) -> CaseScores:
    """One case's (or draw's) scores, typed; `case_id` names the case in an error."""
    try:
        return CaseScores.model_validate(score)
    except ValidationError as exc:
        whose = f"case {case_id!r}" if case_id is not None else "a case"
        raise InputError(f"the scores of {whose}: {problem_line(exc)}") from None


def judge_verdict(scores: dict[str, Any], case_id: str) -> JudgeVerdict | None:
    """The judge's verdict on the case's answer; None for a case the judge does not grade."""
    answer = case_scores(scores, case_id).answer
    return answer.judge if answer is not None else None


def judge_verdicts(scores: dict[str, Any]) -> dict[str, JudgeVerdict]:
    """Case id -> the judge's verdict, for every judge-scored case of `scores`."""
    return {case_id: v for case_id in scores if (v := judge_verdict(scores, case_id)) is not None}


def pair_outcome(scores: dict[str, Any], case_id: str) -> PairOutcome | None:
    """The case's comparison with the baseline run; None where there is none."""
    return case_scores(scores, case_id).pairwise
