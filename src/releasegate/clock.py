"""Timestamps as run.json records them: UTC, ISO 8601, to the second."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now"]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
