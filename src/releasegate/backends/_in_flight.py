"""Requests in flight on one client, as each request observes it: how many were in flight when it was sent and
the most while it was (this one counted). The flip probe reads what was observed, never the declared concurrency:
a closed loop of 4 whose server answers faster than the next request is sent may never have two in flight."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["InFlight", "Seen"]


@dataclass
class Seen:
    """What one request saw: in flight at its send, and the most while it was in flight."""

    at_send: int
    most: int


class InFlight:
    """The requests one client has in flight (one event loop at a time: no lock needed)."""

    def __init__(self) -> None:
        self._open: list[Seen] = []

    @contextmanager
    def request(self) -> Iterator[Seen]:
        """Count one request in flight for the block; every request in flight sees the new count."""
        seen = Seen(len(self._open) + 1, 0)
        self._open.append(seen)
        for other in self._open:
            other.most = max(other.most, len(self._open))
        try:
            yield seen
        finally:
            self._open.remove(seen)
