"""What each backend is, as data the config layer can read: the target fields it takes, the ones it needs, and
what it can do (`Capabilities`).

The backends themselves declare this (`releasegate.backends` registry, one entry per backend module); this layer
sits below them, so it reads the copy the registry writes to `schemas/backends.json` (`scripts/build_schemas.py`;
tests/test_architecture.py fails when the copy and the registry differ). Reading it imports no backend, so
`releasegate validate` stays light.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, field, fields
from functools import cache
from importlib import resources
from typing import Any

from ..data_classes import dataclass
from ..errors import InputError

__all__ = ["Capabilities", "BackendSpec", "SHARED_FIELDS", "spec", "capabilities", "backend_names", "specs_json",
           "spec_from_json"]

SHARED_FIELDS = ("backend",)
"""Target keys every backend takes; every other key belongs to the backends that declare it."""


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, asked by name (`capabilities("openai").load_phase`) instead of by comparing names."""

    load_phase: bool = False
    """It can run a `load:` phase (requests at a declared rate or concurrency)."""
    capacity_sweep: bool = False
    """It can run `load.sweep`, the capacity sweep."""
    prefix_cache_probe: bool = False
    """It can measure a server's prefix cache (`prefix_cache:`)."""
    stream_timings: bool = False
    """Its timings come from a stream: TTFT at the first content chunk, ITL between chunks."""
    measures_latency: bool = True
    """False for a backend that only replays outputs: its wall time is not a throughput."""
    scale: str | None = None
    """What `scale:` spreads over Ray workers: 'cases' (the quality cases), 'load' (the load phase) or None."""
    judge: bool = True
    """It can serve as the LLM judge (`judge.backend`)."""
    response_format: bool = False
    """The judge's verdict shape can be asked for with `response_format` in the request body."""
    endpoint: bool = False
    """A server reached over the network: probed before a run, its weights not visible to releasegate."""
    tokens: str = "none"
    """Where its token counts come from."""
    in_flight: str = "none"
    """What bounds the quality cases in flight: 'batch' (a forward pass's batch), 'concurrency', or 'none'."""
    reorders_cases: bool = False
    """It may generate cases out of order (by length, over workers): the records are put back in case order."""
    variants: bool = False
    """It runs the adapter variant matrix (merged, int8, speculative)."""
    model_dirs: tuple[tuple[str, str], ...] = ()
    """(role, target field) of the model directories whose files are hashed as the run's inputs."""
    data_files: tuple[tuple[str, str], ...] = ()
    """(role, target field) of the files, other than a model's, that decide its outputs."""
    fingerprint: tuple[str, ...] = ()
    """The target fields, beyond the hashed files, that decide its outputs (the response cache's key)."""
    requires: tuple[tuple[str, str], ...] = ()
    """(module, target field) it needs installed: always when the field is '', else when that field is set."""
    versions: tuple[str, ...] = ()
    """Packages whose versions a run records once the backend is loaded."""
    labels_from: str | None = None
    """A classifier: (target field) of the model directory whose config.json `id2label` names every reply it gives.
    Its replies are label names, read only by a guard of format classifier; None: it writes text."""


@dataclass(frozen=True)
class BackendSpec:
    """A backend's name, its part of the `target:` section, and its capabilities."""

    name: str
    summary: str
    """What it is, in a few words (the schema's description of `target.backend`)."""
    fields: tuple[str, ...] = ()
    """The target keys only backends that declare them take (beyond `SHARED_FIELDS`)."""
    required: tuple[str, ...] = ()
    """The keys a target with this backend must set."""
    describe: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The one-line description of a target: (template, fields that must all be set for it to be shown)."""
    capabilities: Capabilities = field(default_factory=Capabilities)


def _tuples(value: Any) -> Any:  # JSON lists as tuples, all the way down (what the frozen specs hold)
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def spec_from_json(data: dict[str, Any]) -> BackendSpec:
    caps = Capabilities(**{f.name: _tuples(data["capabilities"][f.name]) for f in fields(Capabilities)
                           if f.name in data["capabilities"]})
    return BackendSpec(name=data["name"], summary=data["summary"], fields=tuple(data["fields"]),
                       required=tuple(data["required"]), describe=_tuples(data["describe"]), capabilities=caps)


def specs_json(specs: Iterable[BackendSpec]) -> str:
    """The text of `schemas/backends.json` for these specs, in name order."""
    return json.dumps({s.name: asdict(s) for s in sorted(specs, key=lambda s: s.name)}, indent=2) + "\n"


@cache
def _shipped() -> dict[str, BackendSpec]:
    text = resources.files("releasegate.schemas").joinpath("backends.json").read_text("utf-8")
    return {name: spec_from_json(data) for name, data in json.loads(text).items()}


def backend_names() -> tuple[str, ...]:
    return tuple(_shipped())


def spec(name: str) -> BackendSpec:
    """The spec of backend `name`; InputError for a name no backend has."""
    try:
        return _shipped()[name]
    except KeyError:
        raise InputError(f"no backend '{name}'", field="target.backend",
                         hint="use " + ", ".join(backend_names())) from None


def capabilities(name: str) -> Capabilities:
    return spec(name).capabilities
