from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from ..record.records import Timing, Tokens

__all__ = ["Backend", "Request", "Generation", "backend", "create_backend", "BACKENDS"]


@dataclass(frozen=True)
class Request:
    """One case to send: chat messages or a raw prompt."""

    case_id: str
    messages: list[dict] | None = None
    prompt: str | None = None


@dataclass
class Generation:
    """What came back for one request: text (None on failure), token counts and timings."""

    text: str | None
    tokens: Tokens = field(default_factory=Tokens)
    timing: Timing = field(default_factory=Timing)
    error: str | None = None
    error_message: str | None = None
    output_ids: list[int] | None = None
    """Generated token ids, where the backend has them (not written to the record)."""


class Backend(ABC):
    """Runs requests against one model. `batch_size` is how many requests `generate` gets at once."""

    batch_size: int = 1
    measures_latency: bool = True
    """False for backends that only replay outputs: their wall time is not a throughput."""

    def load(self) -> None:
        """Prepare the model or connection; raise TargetError if it cannot be run."""

    @abstractmethod
    def generate(self, requests: list[Request], *, max_new_tokens: int) -> list[Generation]:
        """One Generation per request, in order. Per-request failures are returned, not raised."""

    def close(self) -> None:
        """Release the model or connection."""


# name -> "module:Class"; modules are imported on use so `releasegate --help` stays light
BACKENDS: dict[str, str] = {
    "hf": "releasegate.backends.hf:HFBackend",
    "openai": "releasegate.backends.openai:OpenAIBackend",
    "replay": "releasegate.backends.replay:ReplayBackend",
}
SCALED = {"hf": "releasegate.scale.hf:RayHFBackend"}
"""Backends that `scale:` spreads over Ray workers (an endpoint's load phase reads `scale:` itself)."""


def backend(name: str):
    """Register a Backend subclass under `name` (for backends defined outside this package)."""

    def register(cls: type[Backend]) -> type[Backend]:
        BACKENDS[name] = f"{cls.__module__}:{cls.__qualname__}"
        return cls

    return register


def create_backend(target, generation: dict | None = None, *, scale=None) -> Backend:
    """The backend named by `target.backend`, constructed from the target and generation config (not loaded).
    `scale` (config `scale:`): the hf backend spread over Ray workers; an endpoint's load phase reads it itself."""
    if scale is not None and target.backend in SCALED:
        return _class(SCALED[target.backend])(target, generation, scale)
    return _class(BACKENDS[target.backend])(target, generation or {})


def _class(where: str) -> type[Backend]:
    """A backend class from its "module:Class" entry: a backend's heavy libraries load only when it is used."""
    module, _, cls = where.partition(":")
    return getattr(importlib.import_module(module), cls)
