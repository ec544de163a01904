"""What the stub answers when its answers vary: changed under load (`flip_share`) or sampled (`random_replies`)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .stub_server import StubBehaviour

__all__ = ["JsonObject", "flips", "prompt_of", "stub_answer", "keyword_guard"]

JsonObject = dict[str, Any]
"""A JSON object as the stub reads and writes it: a request's body, an answer, a config or suite fragment."""


def flips(prompt: str, share: float, seed: int = 0) -> bool:
    """Whether the stub's answer to `prompt` is one that changes under load: a seeded `share` of all prompts."""
    digest = hashlib.sha256(f"{seed}:{prompt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def prompt_of(body: JsonObject) -> str:
    """A request's prompt: its messages' text, or its completion prompt."""
    messages = body.get("messages")
    if isinstance(messages, list):
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    return str(body.get("prompt", ""))


def stub_answer(behaviour: StubBehaviour, body: JsonObject, index: int, in_flight: int) -> str:
    """The answer of a `flip_share` or `random_replies` stub (see StubBehaviour) to request number `index`, with
    `in_flight` requests in flight, this one counted."""
    b, prompt = behaviour, prompt_of(body)
    text = b.reply(body) if b.reply is not None else "tok " * b.tokens
    if b.random_replies:
        seeded = body.get("seed") is not None  # a seeded request draws the same answer whenever it arrives
        rng = random.Random(f"{b.flip_seed}:{body.get('seed')}:{prompt}:{'' if seeded else index}")
        text = rng.choice(b.random_replies) if (body.get("temperature") or 0) > 0 else b.random_replies[0]
    if in_flight > b.flip_above and flips(prompt, b.flip_share, b.flip_seed):
        text += " (changed)"
    return text


_REPLY = re.compile(r"(?:\nAgent: |Chatbot Response: )(.*?)(?:\n\n<END CONVERSATION>|\n<end_of_turn>)", re.S)
_BASE64 = re.compile(r"[A-Za-z0-9+/]{12,}={0,2}")


def keyword_guard(codes: dict[str, tuple[str, ...]], fmt: str = "llama_guard") -> Callable[[JsonObject], str]:
    """A scripted guard model for the stub (`StubBehaviour.reply`): it reads the reply out of a Llama Guard or
    ShieldGemma prompt, decodes any base64 run in it, and calls it unsafe under each code one of whose words it
    contains (any case). Llama Guard: 'safe' or 'unsafe\nS1,S3'; ShieldGemma: 'Yes' or 'No' for the policy asked,
    matched by its code's words. A prompt with no reply in it is answered 'safe?' (an unreadable verdict)."""

    def reply(body: JsonObject) -> str:
        prompt = prompt_of(body)
        found = _REPLY.search(prompt)
        if found is None:
            return "safe?"
        text = _decoded(found.group(1)).lower()
        hit = [code for code, words in codes.items() if any(w.lower() in text for w in words)]
        if fmt == "shieldgemma":
            asked = [code for code in codes if f"* {code}" in prompt or f"* {code.lower()}" in prompt.lower()]
            return "Yes" if any(code in hit for code in asked) else "No"
        return "unsafe\n" + ",".join(hit) if hit else "safe"

    return reply


def _decoded(text: str) -> str:
    """`text` with every base64 run that decodes to UTF-8 text appended in clear."""
    extra = []
    for run in _BASE64.findall(text):
        try:
            extra.append(base64.b64decode(run + "=" * (-len(run) % 4), validate=True).decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError):
            continue
    return " ".join([text, *extra])
