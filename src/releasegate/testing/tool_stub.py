"""The stub server's tool calls (`StubBehaviour.tool_reply`, `tool_mode`): a chat request answered with the calls
`tool_reply` gives for its body, streamed as `delta.tool_calls` fragments or, for `stream: false`, as one JSON
reply with `message.tool_calls`.

    honest       each call's fragments in turn: its id and name first, then its arguments in three pieces
    interleaved  the calls' fragments interleaved a character at a time, names split in two: legal, and what a
                 client that does not join fragments per index gets wrong
    mangled      each call's last arguments fragment lost (the arguments no longer parse), and a call's id
                 repeated at another index: what a broken tool parser in a server streams
    drop_tools   the tools ignored as a chat template without tool support does: a text answer, and prompt_tokens
                 as if no tools were sent (ggml-org/llama.cpp#27129)

prompt_tokens is 7 plus a quarter of the tools' JSON length when the tools are honoured, so a client can tell
a server that read them from one that dropped them.
"""

from __future__ import annotations

import json
from itertools import zip_longest
from typing import Any

__all__ = ["TOOL_MODES", "tool_answer", "prompt_tokens"]

TOOL_MODES = ("honest", "interleaved", "mangled", "drop_tools")


def prompt_tokens(body: dict[str, Any], mode: str) -> int:
    """What the stub reports as the prompt's tokens: tools count unless they were dropped."""
    tools = body.get("tools")
    return 7 + (len(json.dumps(tools)) // 4 if tools and mode != "drop_tools" else 0)


def _pieces(text: str, n: int) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _fragments(calls: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """The `delta.tool_calls` items to stream, one an event, in the order `mode` sends them."""
    per_call = []
    for i, call in enumerate(calls):
        name, args = call["name"], call["arguments"]
        if mode == "interleaved":
            half = len(name) // 2
            items = [{"index": i, "id": f"call_{i}", "type": "function", "function": {"name": name[:half]}},
                     {"index": i, "function": {"name": name[half:]}}]
            items += [{"index": i, "function": {"arguments": ch}} for ch in args]
        else:
            items = [{"index": i, "id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": ""}}]
            items += [{"index": i, "function": {"arguments": p}} for p in _pieces(args, 3)]
            if mode == "mangled":
                items = items[:-1] + ([{"index": i + 1, "id": "call_0"}] if i == 0 and len(calls) > 1 else [])
        per_call.append(items)
    if mode == "interleaved":
        return [f for group in zip_longest(*per_call) for f in group if f is not None]
    return [f for items in per_call for f in items]


def tool_answer(body: dict[str, Any], calls: list[dict[str, Any]], mode: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(the stream's events before [DONE], the whole reply for `stream: false`)."""
    usage: dict[str, Any] = {"prompt_tokens": prompt_tokens(body, mode),
             "completion_tokens": max(1, sum(len(c["name"]) + len(c["arguments"]) for c in calls) // 4)}
    if mode == "drop_tools" or not body.get("tools") or not calls:  # no call: a text answer
        text = "I cannot look that up."
        usage["completion_tokens"] = 6
        events: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, {"choices": [], "usage": usage}]
        message: dict[str, Any] = {"role": "assistant", "content": text}
        return events, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage}
    events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]}]
    events += [{"choices": [{"index": 0, "delta": {"tool_calls": [f]}, "finish_reason": None}]}
               for f in _fragments(calls, mode)]
    events += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}, {"choices": [], "usage": usage}]
    whole = [{"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
             for i, c in enumerate(calls)]
    message = {"role": "assistant", "content": None, "tool_calls": whole}
    return events, {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}], "usage": usage}
