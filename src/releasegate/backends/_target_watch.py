"""When a run stops sending: a dead or wrong server ends the run in seconds, not after every request it had left.

A backend's `TargetWatch` sees every request as it comes back (in the quality phase, the load phase, each step of
a capacity sweep). It stops the run when

- `limit` requests in a row failed to connect (`connection_error`: refused, reset, no route; each after its
  retries): the server is gone;
- or the first `limit` requests the run sent all failed, whatever the error (404s, HTML pages, 5xx): the server
  never answered one, so it is the wrong server or not an OpenAI-compatible one.

An overloaded server that still answers some requests never trips either rule (its 429s, 5xx and timeouts are
the measurement); `limit` 0 never stops. Once stopped, nothing more is sent (`ErrorKind.NOT_SENT`) and the run
raises `TargetStopped` with `line()`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ErrorKind
from ..text import inert
from ._base import Generation

if TYPE_CHECKING:
    from ._reach import ModelList

__all__ = ["TargetWatch", "NOT_SENT_STOPPED", "DEFAULT_STOP_AFTER"]

DEFAULT_STOP_AFTER = 10
"""`target.stop_after_errors` when the config does not set it."""
NOT_SENT_STOPPED = "not sent: the target had stopped answering"
"""The message of a request the watch kept from being sent."""
_GONE = frozenset({ErrorKind.CONNECTION_ERROR})
"""Failures where no server answered at all: only these count toward the in-a-row rule."""


@dataclass
class TargetWatch:
    """Counts the requests of a run as they come back; `stopped` says why the run must stop (None: go on)."""

    limit: int = DEFAULT_STOP_AFTER
    sent: int = 0
    failed: int = 0
    answered: int = 0
    in_a_row: int = 0
    """Connection errors since the last request that reached a server."""
    kinds: Counter[str] = field(default_factory=Counter)
    last: str | None = None
    """The latest failure: its kind and message."""
    stopped: str | None = None

    def saw(self, gen: Generation) -> None:
        """Count one request that came back (a request never sent is not counted)."""
        if gen.error == ErrorKind.NOT_SENT:
            return
        self.sent += 1
        if gen.error is None:
            self.answered += 1
            self.in_a_row = 0
            return
        self.failed += 1
        self.kinds[str(gen.error)] += 1
        self.last = f"{gen.error}: {gen.error_message}" if gen.error_message else str(gen.error)
        self.in_a_row = self.in_a_row + 1 if gen.error in _GONE else 0
        if not self.limit or self.stopped is not None:
            return
        if self.in_a_row >= self.limit:
            self.stopped = f"{self.in_a_row} requests in a row could not connect"
        elif not self.answered and self.failed >= self.limit:
            self.stopped = f"the first {self.failed} requests all failed"

    def line(self) -> str:
        """What failed, how often, and the last error, in one line (for `TargetStopped`)."""
        kinds = ", ".join(f"{kind} {n:,}" for kind, n in self.kinds.most_common())
        last = " ".join(inert(self.last or "").split())  # what a server sent: one line, no control character
        last = last if len(last) <= 200 else last[:199] + "…"
        return f"{self.stopped}; {self.failed:,} of {self.sent:,} requests failed ({kinds}); last: {last}"

    def stop_line(self, where: str, models: ModelList | None) -> str | None:
        """Why the run must stop, naming the target at `where`; a server whose /models listed nothing (`models`,
        a `_reach.ModelList`) and that answered no request with an event stream is named not OpenAI-compatible."""
        if self.stopped is None:
            return None
        if not self.answered and not self.in_a_row and models is not None and models.ids is None:
            return (f"the server at {where} is not OpenAI-compatible (GET /models: {models.why_not}; no completion "
                    f"came back as an event stream): {self.line()}")
        if not self.answered and not self.in_a_row:
            return f"the target at {where} answered none of its first requests: {self.line()}"
        return f"the target at {where} stopped answering: {self.line()}"
