"""A server's stream events, typed at the border: what an OpenAI-compatible server may send, and nothing else.

Every `data:` payload is read into an `Event` (its choices, each with its content and finish_reason, and its
usage) before anything uses it; a payload of any other shape raises `BadEvent`, which makes that one request
`bad_response` (the run goes on). The shapes accepted:

    event    an object; `choices` absent, null or a list of objects; `usage` absent, null or an object
    choice   chat: `delta` absent, null or an object whose `content` is absent, null or a string, and whose
             `tool_calls` is absent, null or a list of {index, id, function: {name, arguments}} (strings or null);
             completion: `text` absent, null or a string; `finish_reason` absent, null or a string
    usage    `prompt_tokens` and `completion_tokens` absent, null or whole numbers 0..USAGE_MAX (a JSON number
             with a fraction or an exponent, a string, a boolean or a negative count is not a count)

An event carrying `error` and no choices (how vLLM and TGI report a failure mid-stream) is refused too.
Other fields are ignored (servers add their own). Whether a count fits the answer it came with is for
`usage_problem`, which knows the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BadEvent", "Choice", "ToolFragment", "Usage", "Event", "read_event", "usage_problem", "USAGE_MAX"]

USAGE_MAX = 10**9
"""No request has a billion tokens: a count above it is not a count."""


class BadEvent(ValueError):
    """A stream event that is not the shape of an OpenAI-compatible stream event; the message says what."""


@dataclass(frozen=True)
class Choice:
    """One choice of an event: the text it adds (None: none) and how it ended (None: not yet)."""

    content: str | None = None
    finish_reason: str | None = None
    seen: int = 0
    """Characters of every string the choice carried (content, and a delta's reasoning text: servers count
    reasoning tokens in completion_tokens)."""
    tool_calls: tuple[ToolFragment, ...] = ()
    """chat: the pieces of tool calls this delta carries (`delta.tool_calls`), joined per index after the stream."""


@dataclass(frozen=True)
class ToolFragment:
    """One piece of a streamed tool call: which call (`index`), and what it adds to its id, name and arguments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


@dataclass(frozen=True)
class Usage:
    """The server's token counts; None where it gave none."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    """completion_tokens_details.reasoning_tokens: tokens counted in completion_tokens but never streamed."""


@dataclass(frozen=True)
class Event:
    """One `data:` event of a stream."""

    choices: tuple[Choice, ...] = ()
    usage: Usage | None = None


def read_event(value: object, mode: str) -> Event:
    """The event a decoded JSON payload is, in `mode` ('chat' or 'completion'); raises BadEvent for any other
    shape."""
    if not isinstance(value, dict):
        raise BadEvent(f"an event must be a JSON object, not {_kind(value)}")
    if value.get("error") is not None and not value.get("choices"):  # vLLM, TGI: a failure mid-stream
        raise BadEvent(f"the server sent an error event: {_shown(value['error'])}")
    choices = _list(value.get("choices"), "choices")
    return Event(tuple(_choice(c, mode) for c in choices), _usage(value.get("usage")))


def _choice(value: object, mode: str) -> Choice:
    if not isinstance(value, dict):
        raise BadEvent(f"a choice must be an object, not {_kind(value)}")
    if mode == "chat":
        delta = value.get("delta")
        if delta is not None and not isinstance(delta, dict):
            raise BadEvent(f"a choice's delta must be an object, not {_kind(delta)}")
        content = _text((delta or {}).get("content"), "delta.content")
        calls = tuple(_fragment(f) for f in _list((delta or {}).get("tool_calls"), "delta.tool_calls"))
        seen = sum(len(v) for v in (delta or {}).values() if isinstance(v, str))
        seen += sum(len(f.name or "") + len(f.arguments or "") for f in calls)  # counted in completion_tokens too
    else:
        content, calls = _text(value.get("text"), "text"), ()
        seen = len(content or "")
    return Choice(content, _text(value.get("finish_reason"), "finish_reason"), seen, calls)


_MAX_CALLS = 1024
"""No answer makes more parallel calls: an index past it is not a call's."""


def _fragment(value: object) -> ToolFragment:
    """A `delta.tool_calls` item: {index, id?, type?, function?: {name?, arguments?}}, typed."""
    if not isinstance(value, dict):
        raise BadEvent(f"a tool call fragment must be an object, not {_kind(value)}")
    index = value.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < _MAX_CALLS:
        raise BadEvent(f"a tool call's index must be a whole number 0..{_MAX_CALLS - 1}, not {_shown(index)}")
    function = value.get("function")
    if function is not None and not isinstance(function, dict):
        raise BadEvent(f"a tool call's function must be an object, not {_kind(function)}")
    function = function or {}
    return ToolFragment(index, _text(value.get("id"), "tool_calls.id"), _text(function.get("name"), "function.name"),
                        _text(function.get("arguments"), "function.arguments"))


def _usage(value: object) -> Usage | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadEvent(f"usage must be an object, not {_kind(value)}")
    details = value.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return Usage(_count(value.get("prompt_tokens"), "prompt_tokens"),
                 _count(value.get("completion_tokens"), "completion_tokens"), _count(reasoning, "reasoning_tokens"))


def _count(value: object, name: str) -> int | None:
    # bool is an int in Python; 1e18 arrives as a float, "12abc" as a string: none of them is a count
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadEvent(f"usage {name} must be a whole number, not {_kind(value)} {_shown(value)}")
    if not 0 <= value <= USAGE_MAX:
        raise BadEvent(f"usage {name} {_shown(value)} is not a token count (0..{USAGE_MAX})")
    return value


def _list(value: object, name: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadEvent(f"{name} must be a list, not {_kind(value)}")
    return value


def _text(value: object, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise BadEvent(f"{name} must be a string, not {_kind(value)} {_shown(value)}")


def usage_problem(usage: Usage, *, chunks: int, seen: int, cap: int) -> str | None:
    """Why the server's completion_tokens cannot be the answer it came with (None: it can): above the token cap
    (`cap`, from max_tokens), or far above what the stream carried (`seen` characters in `chunks` chunks; a token
    is rarely under one character: allowed are 4 per character or chunk, plus 16 for special tokens, plus the
    reasoning tokens the server says it did not stream)."""
    told = usage.completion_tokens
    if told is None:
        return None
    if told > cap:
        return f"usage completion_tokens {told} is above the token cap {cap}"
    if told > 4 * max(seen, chunks) + 16 + (usage.reasoning_tokens or 0):
        return f"usage completion_tokens {told} is far above the answer ({chunks} chunks, {seen} characters)"
    return None


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
