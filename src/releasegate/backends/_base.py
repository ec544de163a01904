from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..inputs.backend_facts import BackendSpec
from ..record.records import Timing, Tokens
from ._registry import BACKENDS, BackendEntry, backend_class, entry, register

if TYPE_CHECKING:
    from ..inputs.scale_config import ScaleConfig
    from ..inputs.target import TargetConfig

__all__ = ["Backend", "Request", "Generation", "backend", "create_backend", "BACKENDS"]


@dataclass(frozen=True)
class Request:
    """One case to send: chat messages or a raw prompt."""

    case_id: str
    messages: list[dict[str, Any]] | None = None
    prompt: str | None = None
    seed: int | None = None
    """A repeated draw's own sampling seed (`generation.repeats`), sent where the server takes one; None: the
    config's `generation.seed`, if any."""
    tools: list[dict[str, Any]] | None = None
    """OpenAI function tools the model may call (sent as `tools`; rendered by the chat template in process)."""
    tool_choice: str | dict[str, Any] | None = None


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
    produced_by: list[str | None] | None = None
    """A cached response: the attempts of the session that produced it (see `CaseRecord.produced_by`)."""
    produced_in: str | None = None
    """A cached response: the cache's name of the session that produced it (see `CaseRecord.produced_in`)."""
    truncated_to: int | None = None
    """The input was cut to this many tokens before the model read it (a classifier reads at most its model's
    max length); None: it was read whole."""
    tool_calls: list[list[dict[str, Any]]] | None = None
    """A request with tools: the calls made, one list per turn asked ({id, name, arguments}); None: no tools."""


class Backend(ABC):
    """Runs requests against one model. `batch_size` is how many requests `generate` gets at once."""

    batch_size: int = 1
    measures_latency: bool = True
    """False for backends that only replay outputs: their wall time is not a throughput."""

    def __init__(self, target: TargetConfig, generation: dict[str, Any] | None = None) -> None:
        """Built from the target (`inputs.target.TargetConfig`) and the generation settings; loads nothing."""

    def load(self) -> None:
        """Prepare the model or connection; raise TargetError if it cannot be run."""

    @abstractmethod
    def generate(self, requests: list[Request], *, max_new_tokens: int) -> list[Generation]:
        """One Generation per request, in order. Per-request failures are returned, not raised."""

    def probe(self) -> list[str]:
        """Check the target answers at all before a run starts (raise TargetError if not); return what the run
        should warn of (a model name the server does not list). Only a backend whose capabilities say `endpoint`
        is probed; a local model is checked by loading it."""
        return []

    def stop_reason(self) -> str | None:
        """Why the run must stop now, in one line (a dead or wrong server: nothing more is sent); None: go on."""
        return None

    def close(self) -> None:
        """Release the model or connection."""


def backend(name: str, spec: BackendSpec | None = None) -> Callable[[type[Backend]], type[Backend]]:
    """Register a Backend subclass under `name` (for backends defined outside this package); `spec`: its fields
    and capabilities (default: none beyond a plain run)."""

    def register_class(cls: type[Backend]) -> type[Backend]:
        register(BackendEntry(spec or BackendSpec(name, summary=cls.__doc__ or name), f"{cls.__module__}:{cls.__qualname__}"))
        return cls

    return register_class


def create_backend(target: TargetConfig, generation: dict[str, Any] | None = None, *,
                   scale: ScaleConfig | None = None) -> Backend:
    """The backend named by `target.backend`, constructed from the target and generation config (not loaded).
    `scale` (config `scale:`): a backend that scales its cases is spread over Ray workers; an endpoint's load phase
    reads `scale:` itself."""
    found = entry(target.backend)
    if scale is not None and found.scaled is not None:
        return backend_class(found.scaled)(target, generation, scale)
    return backend_class(found.implementation)(target, generation or {})
