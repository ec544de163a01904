"""The two arms a leakage probe runs on, the same prompts to each: the candidate and its base. An hf target
with an unmerged LoRA adapter is both (the base is the same model with the adapter disabled: one load); any other
target needs `leakage.base`, a second target of any backend.

Each arm generates greedy continuations and scores a text's per-token log-likelihood: in-process with one forward
pass, behind an OpenAI-compatible endpoint from the prompt log-probabilities vLLM gives (`prompt_logprobs`); an
endpoint that gives none (llama.cpp's `n_probs` covers generated tokens only) makes membership not measurable."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..backends import Backend, Request
from ..border.files import read_capped
from ..border.json_reader import NotJson, read_json
from ..errors import InputError
from .prompt_logprobs import endpoint_log_likelihoods

__all__ = ["Arm", "Prefix", "adapter_facts"]

Prefix = tuple[list[dict[str, Any]] | None, str | None]
"""(messages, prompt): what a record or a template gives the model."""


class Arm:
    """One side of the comparison: a loaded backend, and how to switch to it (`within`: the adapter disabled)."""

    def __init__(self, name: str, backend: Backend, within: Callable[[], Any] | None = None) -> None:
        self.name, self.backend, self._within = name, backend, within

    @contextlib.contextmanager
    def _on(self) -> Iterator[None]:
        with self._within() if self._within is not None else contextlib.nullcontext():
            yield

    @property
    def in_process(self) -> bool:
        return getattr(self.backend, "model", None) is not None and getattr(self.backend, "tokenizer", None) is not None

    def generate(self, prefixes: Sequence[Prefix], max_new_tokens: int) -> list[str | None]:
        """Greedy continuations, one per prefix (None where the request failed)."""
        requests = [Request(f"leakage-{i}", messages=list(m) if m else None, prompt=p)
                    for i, (m, p) in enumerate(prefixes)]
        out: list[str | None] = []
        size = max(1, int(getattr(self.backend, "batch_size", 8) or 8))
        with self._on():
            for start in range(0, len(requests), size):
                out += [g.text for g in self.backend.generate(requests[start:start + size],
                                                              max_new_tokens=max_new_tokens)]
        return out

    def membership_scores(self, prefixes: Sequence[Prefix], rests: Sequence[str]
                          ) -> tuple[list[float | None], str | None]:
        """Each rest's mean per-token log-likelihood after its prefix, and why membership is not measurable on
        this arm (None: it is)."""
        if self.in_process:
            return self.log_likelihoods(prefixes, rests), None
        if getattr(getattr(self.backend, "target", None), "base_url", None):
            return endpoint_log_likelihoods(self.backend, prefixes, rests)
        return [None] * len(prefixes), "not measurable: the backend gives no prompt log-probabilities"

    def log_likelihoods(self, prefixes: Sequence[Prefix], rests: Sequence[str], total: bool = False
                        ) -> list[float | None]:
        """Each rest's mean per-token log-likelihood after its prefix (`total`: the sum; one forward pass each)."""
        with self._on():
            return [self._log_likelihood(prefix, rest, total) for prefix, rest in zip(prefixes, rests)]

    def _log_likelihood(self, prefix: Prefix, rest: str, total: bool = False) -> float | None:
        backend: Any = self.backend
        torch = backend.torch
        messages, prompt = prefix
        head = backend.prompt_ids(Request("leakage", messages=list(messages) if messages else None, prompt=prompt))
        tail = backend.tokenizer(rest, add_special_tokens=False)["input_ids"]
        limit = getattr(backend.model.config, "max_position_embeddings", None) or len(head) + len(tail)
        tail = tail[:max(0, limit - len(head))]
        if not head or not tail:
            return None
        ids = torch.tensor([head + tail], device=backend.target.device)
        with torch.inference_mode():
            logits = backend.model(input_ids=ids).logits[0, len(head) - 1:-1].float()
        picked = torch.log_softmax(logits, dim=-1).gather(1, ids[0, len(head):].unsqueeze(1))
        value = float(picked.sum() if total else picked.mean())
        return value if math.isfinite(value) else None  # NaN or -inf (a broken model): no score


def adapter_facts(target: Any) -> dict[str, Any] | None:
    """The adapter's rank, alpha and target modules (adapter_config.json), which the report names; None: none."""
    adapter = getattr(target, "adapter", None)
    if adapter is None:
        return None
    try:
        config = read_json(read_capped(adapter / "adapter_config.json", what="adapter config", max_bytes=1 << 20))
    except (NotJson, InputError, OSError, ValueError):
        return {"path": str(adapter), "rank": None, "target_modules": None}
    if not isinstance(config, dict):
        return {"path": str(adapter), "rank": None, "target_modules": None}
    modules = config.get("target_modules")
    return {"path": str(adapter), "rank": config.get("r"), "alpha": config.get("lora_alpha"),
            "target_modules": sorted(modules) if isinstance(modules, list) else modules}
