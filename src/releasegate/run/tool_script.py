"""The typed shapes a tool-calling conversation is driven by: a case's tool script (`inputs.case_tools`), a call
the model made, and a chat completion's reply as the tool path check reads it."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ..model_base import Model

__all__ = ["ToolScript", "TurnScript", "MadeCall", "ChatReply", "script_of", "reply_facts"]


class _Shape(Model):
    model_config = ConfigDict(extra="allow")


class ToolScript(_Shape):
    """A case's tools: those offered, the tool_choice (when the case sets one) and each turn's expected calls."""

    tools: list[dict[str, Any]]
    tool_choice: Any = None
    turns: list[dict[str, Any]] = []


class TurnScript(_Shape):
    """One turn of the script: the calls expected and the results each matched call is answered with."""

    calls: list[dict[str, Any]] | None = None
    tool_results: list[Any] | None = None


class MadeCall(_Shape):
    """A tool call as a backend reports it (`id`, `name`, `arguments` as text), any part possibly missing."""

    id: Any = None
    name: Any = None
    arguments: Any = None


class ChatReply(_Shape):
    """A chat completion's reply, as the server sent it: each part of any type until checked."""

    usage: object = None
    choices: object = None


class _Usage(_Shape):
    prompt_tokens: object = None


class _Choice(_Shape):
    message: object = None


def script_of(tools: dict[str, Any] | None) -> ToolScript | None:
    """A case's `tools`, typed; None for a case without."""
    return ToolScript.model_validate(tools) if tools else None


def reply_facts(reply: ChatReply) -> tuple[object, object]:
    """(usage.prompt_tokens, the first choice's message) of a reply, None for a part it lacks."""
    usage = _Usage.model_validate(reply.usage) if isinstance(reply.usage, dict) else _Usage()
    choices = reply.choices
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    return usage.prompt_tokens, _Choice.model_validate(first).message if first is not None else None
