"""A case's scores (`scorers.score_record`: answer, format, forbidden, tools) and its input (a prompt or chat
messages), read into types where the gate and the reports read them.

Scores may come back from records.jsonl (`scorers.stored`), so they are read as leniently as the gate always
read them: a check passed or a reply hit forbidden text when its value is true, whatever its JSON type."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field

from ..model_base import Model

__all__ = ["CaseScores", "PartScore", "FormatCheck", "ForbiddenScore", "ForbiddenMatch", "ToolsScore",
           "CaseInput", "ChatMessage", "ContentPart", "AnswerCheck", "answer_type", "case_scores", "case_input"]


def _truth(value: Any) -> bool:
    return bool(value)


def _truth_or_none(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _text_or_none(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else str(value)


Truth = Annotated[bool, BeforeValidator(_truth)]
"""Whether a flag is set: its value's truth."""
Passed = Annotated[bool | None, BeforeValidator(_truth_or_none)]
"""Whether a check passed (None: it says nothing)."""
Text = Annotated[str | None, BeforeValidator(_text_or_none)]


class _Scores(Model):
    model_config = ConfigDict(extra="allow")


class FormatCheck(_Scores):
    """One check of a case's `format:` (json, regex, max_tokens, ...)."""

    type: str = "?"
    passed: Passed = None
    unknown: Truth = False
    detail: Text = None


class PartScore(_Scores):
    """The answer's or the format's score."""

    passed: Passed = None
    unknown: Truth = False
    """The check could not be made (no judge verdict, no token count): never a pass."""
    detail: Text = None
    checks: list[FormatCheck] = []


class ForbiddenMatch(_Scores):
    """A forbidden rule (or a guard) that hit the reply."""

    category: str
    match: Any = None
    rule: str = "rules"


class ForbiddenScore(_Scores):
    hit: Truth = False
    unknown: Truth = False
    """A guard gave no verdict on the reply and no other rule hit."""
    categories: list[str] = []
    matches: list[ForbiddenMatch] = []
    no_verdict: list[str] = []
    """The guards with no verdict."""


class ToolsScore(_Scores):
    """The tool-call checks of a case (`scorers.tool_calls.score_tools`): each true, false or None (it applied to
    no turn asked), and one entry per turn asked."""

    passed: Passed = None
    trigger: Passed = None
    missed: Passed = None
    unwanted: Passed = None
    json_args: Passed = Field(None, alias="json")
    schema_args: Passed = Field(None, alias="schema")
    match: Passed = None
    sequence: Passed = None
    forbidden_called: Passed = None
    turns: list[dict[str, Any]] | None = None


class CaseScores(_Scores):
    """One record's scores; a part is None when the case has no such check."""

    answer: PartScore | None = None
    format: PartScore | None = None
    forbidden: ForbiddenScore | None = None
    tools: ToolsScore | None = None
    draw_shares: dict[str, float | None] | None = None
    """Under repeats: the case's share of its draws passing (forbidden: hitting) on each quality rate, None where
    a draw could not be checked (`paired_comparison`)."""

    def part(self, key: str) -> PartScore | None:
        """The answer's or the format's score by its name ('answer' or 'format')."""
        return self.answer if key == "answer" else self.format if key == "format" else None


def case_scores(scores: dict[str, Any] | None) -> CaseScores:
    """A record's scores read into their type (no scores: every part None)."""
    return CaseScores.model_validate(scores or {})


def _text_only(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _list_only(value: Any) -> list[Any] | None:
    return value if isinstance(value, list) else None


class ChatMessage(Model):
    """A chat message of a case's input, as a reader sees it; anything may be in it (an untrusted suite)."""

    model_config = ConfigDict(extra="allow")

    role: Any = "?"
    content: Any = None


class ContentPart(Model):
    """A part of a chat message's content (text, an image): its text."""

    model_config = ConfigDict(extra="allow")

    text: Any = ""


class CaseInput(Model):
    """A case's input: a prompt (text), or chat messages (a list); anything else is shown as JSON."""

    model_config = ConfigDict(extra="allow")

    prompt: Annotated[str | None, BeforeValidator(_text_only)] = None
    messages: Annotated[list[Any] | None, BeforeValidator(_list_only)] = None


def case_input(value: dict[str, Any]) -> CaseInput:
    """A case's input read into its type."""
    return CaseInput.model_validate(value)


class AnswerCheck(Model):
    """A case's answer check (`answer:` of its suite): which scorer reads its answer."""

    model_config = ConfigDict(extra="allow")

    type: Any = None


def answer_type(answer: dict[str, Any] | None) -> Any:
    """The scorer a case's answer check names ('exact', 'judge', ...; None: no answer check)."""
    return AnswerCheck.model_validate(answer or {}).type
