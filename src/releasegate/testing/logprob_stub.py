"""The stub server's prompt log-probabilities (`StubBehaviour.prompt_logprobs`), answered as vLLM answers a request
not streamed with `prompt_logprobs`: the list in `choices[0]` for /completions, at the top for /chat/completions.

`vllm_prompt_logprobs` builds that list from a request's text, one token a character (so a prompt's tokens are
always the first tokens of the prompt followed by more text), each position's log-probability given by a function
of the whole text; a test's own function may return any JSON value instead (a hostile server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .answers import prompt_of

__all__ = ["scored_text", "vllm_prompt_logprobs", "whole_reply"]


def scored_text(body: dict[str, Any]) -> str:
    """The text a scoring request asks about: its prompt, or its messages' text (with a newline for the generation
    prompt when `add_generation_prompt` is set, as a chat template adds the assistant's header)."""
    text = prompt_of(body)
    return text + "\n" if body.get("messages") is not None and body.get("add_generation_prompt") else text


def vllm_prompt_logprobs(text: str, logprob: float | Callable[[str], float]) -> list[dict[str, Any] | None]:
    """vLLM's `prompt_logprobs` for `text` with `prompt_logprobs: 0`: None for the first token, then the prompt's
    own token with its log-probability (`logprob`, or `logprob(text)`), one token a character."""
    value = logprob(text) if callable(logprob) else logprob
    return [None] + [{str(ord(c)): {"logprob": value, "rank": 1, "decoded_token": c}} for c in text[1:]]


def whole_reply(body: dict[str, Any], prompt_logprobs: Any) -> dict[str, Any]:
    """The reply, not streamed, of one generated token with `prompt_logprobs` where vLLM puts them (None: none,
    as llama.cpp answers)."""
    chat = body.get("messages") is not None
    choice: dict[str, Any] = {"index": 0, "finish_reason": "length"}
    choice.update({"message": {"role": "assistant", "content": "tok"}} if chat else {"text": "tok"})
    if not chat and prompt_logprobs is not None:
        choice["prompt_logprobs"] = prompt_logprobs
    reply: dict[str, Any] = {"id": "stub", "object": "chat.completion" if chat else "text_completion",
                             "model": body.get("model"), "choices": [choice]}
    if chat and prompt_logprobs is not None:
        reply["prompt_logprobs"] = prompt_logprobs
    return reply
