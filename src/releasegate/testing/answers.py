"""What the stub answers when its answers vary: changed under load (`flip_share`) or sampled (`random_replies`)."""

from __future__ import annotations

import hashlib
import random

__all__ = ["flips", "prompt_of", "stub_answer"]


def flips(prompt: str, share: float, seed: int = 0) -> bool:
    """Whether the stub's answer to `prompt` is one that changes under load: a seeded `share` of all prompts."""
    digest = hashlib.sha256(f"{seed}:{prompt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def prompt_of(body: dict) -> str:
    """A request's prompt: its messages' text, or its completion prompt."""
    messages = body.get("messages")
    if isinstance(messages, list):
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    return str(body.get("prompt", ""))


def stub_answer(behaviour, body: dict, index: int, in_flight: int) -> str:
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
