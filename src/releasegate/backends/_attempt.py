"""The clock of one request across its attempts, and the Generation a failed request leaves.

TTFT and E2E run from the first attempt's send, so the user's wait through retries and backoff is counted
(see `Timing`); a failed request keeps the same: its queueing, how long the user waited, its attempts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..record.records import Timing
from ._base import Generation

__all__ = ["RequestClock", "failed", "sent_ns", "connect_ns"]


@dataclass(frozen=True)
class RequestClock:
    """perf_counter_ns stamps of one request: scheduled send, first and last attempt's actual send, and the end
    (of the stream, or the failure). `written`: the first attempt's send is the moment its last byte was
    written (else the client could not tell: the attempt's start stands in); `connect`: the first attempt's TCP
    connect time (ns), None on a reused connection."""

    scheduled: int
    first: int
    sent: int
    end: int
    written: bool = True
    connect: int | None = None

    def attempt(self, sent: int, end: int) -> RequestClock:
        return RequestClock(self.scheduled, self.first, sent, end, self.written, self.connect)

    @property
    def connect_ms(self) -> float | None:
        return self.connect / 1e6 if self.connect is not None else None

    @property
    def send_lag_ms(self) -> float | None:
        return (self.first - self.scheduled) / 1e6 if self.written else None


def failed(kind: str, message: str, clock: RequestClock, attempt: int) -> Generation:
    """A failed request keeps what the user went through: queueing, how long they waited, attempts."""
    ms = 1e6
    timing = Timing(send_lag_ms=clock.send_lag_ms, e2e_ms=(clock.end - clock.first) / ms,
                    e2e_sched_ms=(clock.end - clock.scheduled) / ms, retry_wait_ms=(clock.sent - clock.first) / ms,
                    attempts=attempt, connect_ms=clock.connect_ms)
    return Generation(None, error=kind, error_message=message[:300], timing=timing)


def sent_ns(exc: BaseException) -> int | None:
    """When a failed attempt's bytes really left, where the client knows (lean client; under a timeout, the
    cancelled exchange it interrupted)."""
    return getattr(exc, "sent_ns", None) or getattr(exc.__cause__, "sent_ns", None)


def connect_ns(exc: BaseException) -> int | None:
    """The TCP connect time of a failed attempt's new connection, where the client knows."""
    return getattr(exc, "connect_ns", None) or getattr(exc.__cause__, "connect_ns", None)
