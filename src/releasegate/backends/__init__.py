"""Backends: run a batch of requests against the model under test.

A backend implements `generate()`; `load()` and `close()` have defaults. Each backend module registers one
`BackendEntry` (`_registry`): its spec (name, the `target:` fields only it takes, those it needs, its one-line
description) and its capabilities as data (load phase, capacity sweep, prefix-cache probe, stream timings, what
`scale:` spreads, judge, where its tokens come from...). Code outside a backend asks `capabilities(name)`, never
compares names. Heavy libraries (torch, transformers, peft) are imported inside the backend that needs them, only
when it runs.

A new backend touches:
    src/releasegate/backends/NAME.py         the Backend subclass and its `register(BackendEntry(...))`
    src/releasegate/backends/__init__.py     one name in the import below (registration by import)
    src/releasegate/inputs/target.py         a new TargetConfig field, only for a target key no backend has yet
    src/releasegate/schemas/*.json           rewritten by `python scripts/build_schemas.py` (backend enum, the
                                             fields it requires, backends.json), never by hand
    tests/test_NAME_backend.py               its test
"""

from __future__ import annotations

from . import hf, hf_classifier, openai, replay  # noqa: F401  (registration by import)
from ._base import BACKENDS, Backend, Generation, Request, backend, create_backend
from ._registry import BackendEntry, capabilities, entry, register

__all__ = ["Backend", "Request", "Generation", "backend", "create_backend", "BACKENDS", "BackendEntry", "register",
           "entry", "capabilities"]
