"""A dead or wrong target ends the run between two of its steps: what was recorded stays, nothing more is sent."""

from __future__ import annotations

from ..errors import TargetStopped

__all__ = ["stop_if_dead"]


def stop_if_dead(backend, phase: str) -> None:
    """Raise `TargetStopped` naming `phase` when the backend stopped sending (`Backend.stop_reason`)."""
    reason = backend.stop_reason() if backend is not None else None
    if reason is not None:
        raise TargetStopped(f"{phase}: {reason}")
