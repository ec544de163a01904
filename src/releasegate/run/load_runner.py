"""The backend a load phase needs: one that runs a schedule of requests (`run_load`), as OpenAIBackend does and
scale.load.DistributedLoad does across Ray workers. The stages that measure load (the load phase, the capacity
sweep, the prefix-cache probe) take any Backend and ask for this shape once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..backends import Backend, Generation, Request

if TYPE_CHECKING:
    from ..backends.openai import LoadRun

__all__ = ["LoadRunner", "load_runner"]


@runtime_checkable
class LoadRunner(Protocol):
    """`run_load` with OpenAIBackend's signature (see `OpenAIBackend.run_load`)."""

    def run_load(
        self, requests: Iterable[Request], *, offsets: list[float] | None, concurrency: int, max_new_tokens: int,
        duration_s: float | None = None, warmup: Sequence[Request] = (),
        on_start: Callable[[], object] | None = None, on_done: Callable[[Generation], object] | None = None,
        lead_s: float = 0.05,
    ) -> LoadRun: ...


def load_runner(backend: Backend | None) -> LoadRunner:
    """`backend` as a load runner; none, or one without `run_load`, is a bug in the caller (`check` loads the
    backend before a load phase, and the config's checks allow one only on an endpoint backend)."""
    if not isinstance(backend, LoadRunner):
        raise TypeError(f"{type(backend).__name__} cannot run a load phase (no run_load)")
    return backend
