"""The client's own lateness: how far behind its event loop ran while it was timing a run.

Every timestamp the openai backend takes is read by Python code on one event loop. When that loop is busy
(parsing other streams, the `openai` client's per-event work, a blocking call, the garbage collector), a socket
that became readable waits, and the TTFT and ITL we report grow by that wait although the server was on time.
`LatenessProbe` runs on the same loop for the length of a run and measures that error's size:

- event-loop lag: a timer on a fixed grid (every 5 ms); each grid point counts, those that passed while the loop
  was busy included, with how late the loop got to it: the wait of an event arriving at a random moment;
- CPU: the loop thread's CPU time over the window's wall time, and the whole process's (threads included, so it
  can pass 1.0); and how much of the window the loop was not waiting in `select()` for something to happen
  (standard asyncio loop only). Busy near 1.0 means the loop was the bottleneck: with CPU near it too, through
  its own work; with CPU well under it, because it did not get the CPU (other processes on a shared machine) or
  was held by blocking calls;
- receive dispatch (lean client on the standard asyncio loop): the loop waking up with the socket readable
  (`select()` returning) -> the clock read in `data_received`, the time spent behind other callbacks of the same
  loop iteration. The part before the wake-up (the socket was readable while the loop still ran an earlier
  iteration) cannot be seen from user space without kernel receive timestamps: the loop lag stands for it. On
  plain TCP on Linux the lean client stamps its reads with those (`_kernel_rx`), so neither part is in the
  stamps it reports; both still count in the lateness, which then widens latency bounds more than needed;
- ITL batching: the share of gaps between consecutive content chunks under 0.5 ms. Near 1 the client read a
  backlog of events at once and stamped them together: its ITL says nothing about the server's;
- connections: TCP connect (+ TLS) time of the connections opened in the window, and of those opened before it.
"""

from __future__ import annotations

import asyncio
import selectors
import time
from array import array
from collections.abc import Sequence
from typing import Any

from ..stats.intervals import percentile

__all__ = ["LatenessProbe", "BATCHED_GAP_MS", "spread"]

TICK_S = 0.005
"""The lag timer's period."""
EARLY_S = 0.001
"""The timer asks to run this much before each grid point, and a point this close ahead counts as reached (lag
0): event loops wait for timers in whole milliseconds (epoll, libuv), so a timer due on the point would show up
to 1 ms of lag on an idle loop, which a readable socket (it wakes the loop at once) never suffers."""
BATCHED_GAP_MS = 0.5
"""Gaps between content chunks shorter than this count as read together (`itl_batched_share`)."""


def spread(samples: Sequence[float]) -> dict[str, Any] | None:
    """{p50, p99, max, n} of `samples` (ms), None when there are none."""
    if not len(samples):
        return None
    return {"p50": percentile(samples, 50), "p99": percentile(samples, 99), "max": max(samples), "n": len(samples)}


class LatenessProbe:
    """Measures the client's lateness over one or more windows on the running loop (`start` ... `stop`, called
    from inside the loop); `summary()` describes all of them together."""

    def __init__(self, client: str, tick_s: float = TICK_S) -> None:
        self.client = client
        self.tick_s = tick_s
        self.lag_ms = array("d")
        self.rx_ms = array("d")
        self.connect_ms = array("d")
        self.preconnect_ms = array("d")
        self.gaps = 0
        self.batched_gaps = 0
        self.window_s = 0.0
        self.loop_cpu_s = 0.0
        self.process_cpu_s = 0.0
        self.idle_ns = 0
        """Time the loop spent inside `select()` waiting (hooked loops only)."""
        self.event_loop: str | None = None
        self.selected_ns: int | None = None
        """When the loop's selector last returned (the loop woke up): see `rx`."""
        self._running = False
        self._busy_known = True

    # -- the window ---------------------------------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.event_loop = "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
        self._loop, self._running = loop, True
        self._hook_selector(loop)
        self._wall0, self._cpu0, self._proc0 = time.perf_counter(), time.thread_time(), time.process_time()
        self._grid0 = self._wall0
        self._next = 1
        self._handle = loop.call_later(self.tick_s, self._tick)

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        self._handle.cancel()
        self._tick(final=True)
        self.window_s += time.perf_counter() - self._wall0
        self.loop_cpu_s += time.thread_time() - self._cpu0
        self.process_cpu_s += time.process_time() - self._proc0
        self._unhook_selector()
        self.selected_ns = None

    def _tick(self, final: bool = False) -> None:
        now = time.perf_counter()
        # every grid point that has passed since the last tick, each with how late the loop got to it
        while (due := self._grid0 + self._next * self.tick_s) <= now + (0 if final else EARLY_S):
            self.lag_ms.append(max(0.0, now - due) * 1e3)
            self._next += 1
        if not final:
            self._handle = self._loop.call_later(max(0.0, due - EARLY_S - now), self._tick)

    def _hook_selector(self, loop: asyncio.AbstractEventLoop) -> None:
        """Stamp each wake-up of asyncio's selector loop (uvloop has no selector to hook: no rx figure there)."""
        self._selector = selector = getattr(loop, "_selector", None)
        if selector is None or not callable(getattr(selector, "select", None)):
            self._selector = None
            self._busy_known = False
            return
        self._own_select = "select" in vars(selector)
        select = selector.select

        def stamped(timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            entered = time.perf_counter_ns()
            events: list[tuple[selectors.SelectorKey, int]] = select(timeout)
            self.selected_ns = time.perf_counter_ns()
            self.idle_ns += self.selected_ns - entered
            return events

        self._select = select
        selector.select = stamped

    def _unhook_selector(self) -> None:
        if self._selector is None:
            return
        if self._own_select:
            self._selector.select = self._select
        else:
            del self._selector.select
        self._selector = None

    # -- what the client reports --------------------------------------------------------------------------
    def rx(self, now_ns: int) -> None:
        """A receive callback read the clock at `now_ns`: how long after the loop woke up."""
        if self.selected_ns is not None and self._running:
            self.rx_ms.append((now_ns - self.selected_ns) / 1e6)

    def chunk_gaps(self, chunk_ns: list[int]) -> None:
        """Arrival stamps of one stream's content chunks."""
        limit = BATCHED_GAP_MS * 1e6
        for prev, now in zip(chunk_ns, chunk_ns[1:]):
            self.gaps += 1
            self.batched_gaps += (now - prev) < limit

    def connected(self, ms: float, *, before_window: bool = False) -> None:
        (self.preconnect_ms if before_window else self.connect_ms).append(ms)

    def summary(self) -> dict[str, Any] | None:
        """The lateness summary (see the module doc): times in ms, shares in 0..1, None where not measured."""
        if not self.window_s:
            return None
        return {
            "client": self.client,
            "event_loop": self.event_loop,
            "window_s": self.window_s,
            "loop_lag_ms": spread(self.lag_ms),
            "tick_ms": self.tick_s * 1e3,
            "cpu_share": self.loop_cpu_s / self.window_s,
            "process_cpu_share": self.process_cpu_s / self.window_s,
            "loop_busy_share": max(0.0, 1 - self.idle_ns / 1e9 / self.window_s) if self._busy_known else None,
            "rx_dispatch_ms": spread(self.rx_ms),
            "itl_batched_share": self.batched_gaps / self.gaps if self.gaps else None,
            "itl_gaps": self.gaps,
            "connect_ms": spread(self.connect_ms),
            "preconnect_ms": spread(self.preconnect_ms),
        }
