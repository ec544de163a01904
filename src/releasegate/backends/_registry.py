"""The backend registry: each backend module registers one `BackendEntry`, its spec (name, the target fields it
takes, its capabilities) and where its class lives. Everything outside a backend's own module asks the registry
(`capabilities(name).load_phase`) instead of comparing names.

Classes are named as "module:Class" and imported on use, so a backend's heavy libraries load only when it runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..inputs.backend_facts import BackendSpec, Capabilities

if TYPE_CHECKING:
    from ._base import Backend

__all__ = ["BackendEntry", "BACKENDS", "register", "entry", "capabilities", "backend_class"]


@dataclass(frozen=True)
class BackendEntry:
    spec: BackendSpec
    implementation: str
    """The backend class, "module:Class"."""
    scaled: str | None = None
    """The class that spreads it over Ray workers (`scale:` with capability scale='cases'), "module:Class"."""

    @property
    def name(self) -> str:
        return self.spec.name


BACKENDS: dict[str, BackendEntry] = {}
"""Backend name -> its entry, filled as the backend modules are imported (`releasegate.backends` imports them)."""


def register(entry: BackendEntry) -> BackendEntry:
    BACKENDS[entry.name] = entry
    return entry


def entry(name: str) -> BackendEntry:
    try:
        return BACKENDS[name]
    except KeyError:
        raise KeyError(f"no backend '{name}' (known: {', '.join(sorted(BACKENDS))})") from None


def capabilities(name: str) -> Capabilities:
    return entry(name).spec.capabilities


def backend_class(where: str) -> Callable[..., Backend]:
    """A class from its "module:Class" entry (a Backend: called with the target, the generation settings and, for
    a scaled one, `scale:`)."""
    module, _, name = where.partition(":")
    cls: Callable[..., Backend] = getattr(importlib.import_module(module), name)
    return cls
