"""Backends: run a batch of requests against the model under test.

A backend implements `generate()`; `load()` and `close()` have defaults. Register with `@backend("name")`.
Heavy libraries (torch, transformers, peft) are imported inside the backend that needs them, only when it runs.
"""

from __future__ import annotations

from ._base import BACKENDS, Backend, Generation, Request, backend, create_backend

__all__ = ["Backend", "Request", "Generation", "backend", "create_backend", "BACKENDS"]
