"""A dead or wrong target ends the run between two of its steps: what was recorded stays, nothing more is sent."""

from __future__ import annotations

from ..backends import Backend
from ..errors import TargetStopped

__all__ = ["stop_if_dead"]


def stop_if_dead(backend: Backend | None, phase: str) -> None:
    """Raise `TargetStopped` naming `phase` when the backend stopped sending (`Backend.stop_reason`)."""
    stop = getattr(backend, "stop_reason", None)  # a backend written before the method: it never stops
    reason = stop() if stop is not None else None
    if reason is not None:
        raise TargetStopped(f"{phase}: {reason}")
