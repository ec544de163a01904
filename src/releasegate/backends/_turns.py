"""One stream's end-of-stream work per event-loop iteration.

Splitting a finished response into lines and parsing its events costs about a millisecond a stream. When many
streams end at once (a closed loop's first round ends together: 256 streams at 256 in flight), doing all of it
in one iteration of the event loop keeps every readable socket waiting behind it, and the arrival stamps of the
other streams' events (their first tokens among them) are read late by the whole burst: hundreds of ms. A
stream that takes its turn first (`my_turn`) does its work in an iteration of its own, so between two such
steps the loop polls its sockets and runs their receive callbacks, and a stamp waits for one step at most.

The work is not made smaller, only spread: the stamps stay what the clock read when the bytes were handed over.
"""

from __future__ import annotations

import asyncio
from collections import deque
from weakref import WeakKeyDictionary

__all__ = ["my_turn"]


class _Turns:
    """The turns of one event loop: at most one granted per iteration, the rest waiting in arrival order."""

    def __init__(self) -> None:
        self.held = False
        self.waiting: deque[asyncio.Future[None]] = deque()

    def next(self) -> None:
        """Run as a callback in the iteration after a turn was taken: grant the next waiting turn, or free it."""
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():  # one cancelled while it waited is passed over
                turn.set_result(None)
                return
        self.held = False


_LOOPS: WeakKeyDictionary[asyncio.AbstractEventLoop, _Turns] = WeakKeyDictionary()


async def my_turn() -> None:
    """Return when no other stream's end-of-stream work has run in this iteration of the running loop; the
    caller does its work right away, without awaiting anything in between (its turn lasts until it yields).
    Without a turn taken meanwhile it returns at once, without yielding."""
    loop = asyncio.get_running_loop()
    turns = _LOOPS.get(loop)
    if turns is None:
        turns = _LOOPS[loop] = _Turns()
    if turns.held or turns.waiting:
        turn = loop.create_future()
        turns.waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # granted, then cancelled before it ran: pass it on
                loop.call_soon(turns.next)
            raise
    else:
        turns.held = True
    loop.call_soon(turns.next)  # runs in the next iteration, after the loop has polled its sockets
