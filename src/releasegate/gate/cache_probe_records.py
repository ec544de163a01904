"""The run's records as the response-cache probe sees them (`gate.cache_probe`): each case's question, its own
answer, its paraphrase group and whether it is time-sensitive, and the check "does case a's answer pass case b's
own checks", made by the scorers every other figure uses."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..record.evidence import answered
from ..record.records import CaseRecord
from ..scorers import score_record
from ..stats.sample_weights import case_weights, stratum_counts
from .cache_probe import ProbeCase
from .case_scores import ChatMessage, ContentPart, answer_type, case_input, case_scores

if TYPE_CHECKING:
    from ..inputs.rubric import ForbiddenRule
    from ..record.judge_verdicts import Verdicts

__all__ = ["question_of", "probe_cases", "answer_passes", "passes_checks", "EXACT_CHECKS"]


def question_of(record: CaseRecord) -> str:
    """The text a cache in front of the model keys on: the last user message, else the prompt."""
    given = case_input(record.input)
    said = [ChatMessage.model_validate(m) for m in given.messages or [] if isinstance(m, dict)]
    users = [m for m in said if m.role == "user"]
    if users:
        return _text(users[-1].content)
    return _text(given.prompt)


def probe_cases(records: Sequence[CaseRecord], *, group_tag: str | None, time_sensitive_tag: str | None) -> list[ProbeCase]:
    """One `ProbeCase` per record, in the records' order (suite order), weighted to its source under a sample."""
    weights = case_weights(records, stratum_counts(records))
    return [ProbeCase(
        case_id=r.case_id, question=question_of(r), output=r.output if answered(r) else None,
        group=_tag(r, group_tag), time_sensitive=_truthy(_tag(r, time_sensitive_tag)),
        input_tokens=r.tokens.input or 0, output_tokens=r.tokens.output or 0,
        expected=_canonical(r.expected),
        exact_check=answer_type(r.answer) in EXACT_CHECKS, weight=w,
    ) for r, w in zip(records, weights)]


EXACT_CHECKS = frozenset({"exact", "json_fields"})
"""Answer checks that compare the whole expected answer: only they tell another question's answer from a right
one across paraphrase groups."""


def passes_checks(scores: dict[str, Any]) -> bool | None:
    """Whether scores pass a case's checks: its answer scorer, its format checks and the forbidden rules; None
    when a check could not be made and none failed (an unknown check is undecided, never wrong)."""
    if not scores:
        return False  # no answer
    scored = case_scores(scores)
    parts = [p for p in (scored.answer, scored.format) if p is not None]
    if any(not p.passed and not p.unknown for p in parts):
        return False
    if scored.forbidden is not None and scored.forbidden.hit:
        return False
    # a guard that never judged this reply to this question leaves its forbidden check unknown, never clean
    unknown = any(p.unknown for p in parts) or (scored.forbidden is not None and scored.forbidden.unknown)
    return None if unknown else True


def answer_passes(records: Sequence[CaseRecord], forbidden_rules: Sequence[ForbiddenRule], verdicts: Verdicts | None = None) -> Callable[[int, int], bool | None]:
    """passes(a, b): whether records[a]'s output passes records[b]'s own checks (a copy of b's record with a's
    output, scored by `scorers.score_record`; None when the check cannot be made). A guard rule reads `verdicts`
    (`record.judge_verdicts.saved_verdicts`): the guard's verdict on that text as b's reply, which it has only when
    a's answer is b's own. Results are memoised by what a's record gives the copy (its text and its token count):
    a probe asks again at every threshold, and paraphrases often share one answer text."""
    seen: dict[tuple[str | None, int | None, int], bool | None] = {}
    given = [(r.output, r.tokens.output) for r in records]  # all a served copy takes from its donor

    def passes(a: int, b: int) -> bool | None:
        key = (*given[a], b)
        if key not in seen:
            donor, case = records[a], records[b]
            served = case.model_copy(update={"output": donor.output, "error": None, "error_message": None,
                                             "scores": {}, "scored_with": None,
                                             "tokens": case.tokens.model_copy(update={"output": donor.tokens.output})})
            seen[key] = passes_checks(score_record(served, forbidden_rules, verdicts))
        return seen[key]

    return passes


def _canonical(expected: Any) -> str | None:
    """The expected answer as one comparable text (None: the case has none). The reference answer, not the
    answer check's settings, which one suite-wide check shares across every question."""
    return None if expected is None else json.dumps(expected, sort_keys=True, default=str)


def _tag(record: CaseRecord, tag: str | None) -> str | None:
    if tag is None:
        return None
    value = record.tags.get(tag)
    return None if value is None else str(value)


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no")


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts: the text ones
        return " ".join(str(ContentPart.model_validate(p).text) for p in content if isinstance(p, dict))
    return str(content or "")
