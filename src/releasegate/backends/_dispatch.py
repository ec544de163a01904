"""When the requests of a run are sent: at their scheduled times or as slots free up, until a deadline.

`send(item)` sends one request and returns its Generation; at most `concurrency` are in flight, the others
wait for a slot (their send lag). A request still waiting when the deadline has passed, or when `stop()` says the
run stopped (a dead target, see `_target_watch`), is not sent: it comes back with error `not_sent`, and an open or
closed loop takes no further request. A `send` that raises (it should not: failures are returned) fails its own
request with `client_error`, never the batch's gather. `on_done(gen)` is called with each request's Generation as
it comes back. Each request records the requests in flight it observed (`_in_flight`: at its send, and the
most while it was in flight), counted over the call: what the flip probe reads, never the declared concurrency.

The requests are sent on uvloop's event loop by default, asyncio's with RELEASEGATE_EVENT_LOOP=asyncio
(`loop_factory`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..border.env import env_text
from ..errors import ErrorKind, InputError
from ._base import Generation, Request
from ._in_flight import InFlight
from ._target_watch import NOT_SENT_STOPPED

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Scheduled", "LoadRun", "Done", "Send", "gather", "open_loop", "closed_loop", "loop_factory", "EVENT_LOOP_ENV", "EVENT_LOOPS"]

EVENT_LOOP_ENV = "RELEASEGATE_EVENT_LOOP"
"""The environment variable that chooses the client's event loop (`EVENT_LOOPS`); unset or empty: 'auto'."""
EVENT_LOOPS = ("auto", "uvloop", "asyncio")
"""auto: uvloop where it is installed (a dependency on Linux and macOS), else asyncio's own loop."""


def loop_factory(choice: str | None = None) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop factory for `asyncio.Runner`: uvloop's, or None for asyncio's. `choice` (default: the
    RELEASEGATE_EVENT_LOOP variable) is one of `EVENT_LOOPS`. uvloop is the default because, measured against a
    stub with known delays, it halves the lean client's TTFT error p99 at 256 streams (226 ms -> 99 ms) and takes
    less CPU; asyncio's loop is the way back (and the only loop with the receive dispatch figure)."""
    choice = (choice if choice is not None else env_text(EVENT_LOOP_ENV) or "").strip().lower() or "auto"
    if choice not in EVENT_LOOPS:
        raise InputError(f"{EVENT_LOOP_ENV}={choice!r} is not an event loop", field=EVENT_LOOP_ENV,
                         hint="use " + ", ".join(EVENT_LOOPS))
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise InputError("uvloop is not installed", field=EVENT_LOOP_ENV,
                             hint=f"pip install uvloop, or unset {EVENT_LOOP_ENV} to use asyncio's loop") from None
        return None  # a platform uvloop does not install on (Windows)
    return uvloop.new_event_loop


@dataclass(frozen=True)
class Scheduled:
    """A request with the perf_counter_ns time it should be sent at (load phases)."""

    request: Request
    at_ns: int | None = None
    """None: closed loop, send as soon as a slot is free (send lag then runs from that moment)."""


@dataclass(frozen=True)
class LoadRun:
    """What `run_load` measured: the requests sent (only those) with their generations, in order."""

    results: list[tuple[Request, Generation]]
    seconds: float
    """The measured window's wall time (warm-up and pre-opened connections excluded)."""
    client: dict[str, Any] | None
    """The client's lateness over the window (see `openai.OpenAIBackend`)."""


Send = Callable[[Scheduled], Awaitable[Generation]]
Stop = Callable[[], bool] | None
"""Whether the run has stopped (nothing more is sent); None: it never stops."""
Done = Callable[[Generation], object] | None
"""Told each generation as it completes (a progress bar, the attempts ledger); None: nobody."""


async def gather(send: Send, items: Iterable[Scheduled], concurrency: int, deadline_ns: int | None = None,
                 on_done: Done = None,
                 stop: Stop = None) -> list[Generation]:
    """Every item (each waits for its time, if it has one), `concurrency` at a time; results in input order."""
    slots, send = asyncio.Semaphore(concurrency), _counted(send)

    async def one(item: Scheduled) -> Generation:
        if item.at_ns is not None:
            await _sleep_until_ns(item.at_ns)
        return await _in_slot(send, item, slots, deadline_ns, on_done, stop)

    return list(await asyncio.gather(*(one(i) for i in items)))


async def open_loop(send: Send, items: Iterable[Scheduled], concurrency: int, deadline_ns: int | None = None,
                    on_done: Done = None,
                    stop: Stop = None) -> list[Generation]:
    """Each item is started at its due time (items come in due order), at most `concurrency` in flight, the
    rest queued (send lag). A request's task is made when it is due, never before: an hour-long open loop
    holds the requests in flight and the ones queued, not every request it will send. Once `stop()`, the items
    not yet due are left out of the results (the caller counts them as never sent)."""
    slots, send, tasks = asyncio.Semaphore(concurrency), _counted(send), []
    for item in items:
        assert item.at_ns is not None  # an open loop's items each have their time
        await _sleep_until_ns(item.at_ns)
        if stop is not None and stop():
            break
        tasks.append(asyncio.ensure_future(_in_slot(send, item, slots, deadline_ns, on_done, stop)))
    return list(await asyncio.gather(*tasks))


async def closed_loop(
    send: Send, requests: Iterator[Request], concurrency: int, deadline_ns: int | None, on_done: Done = None,
    stop: Stop = None,
) -> list[tuple[Request, Generation]]:
    """`concurrency` workers pulling from one iterator until it is empty, the deadline has passed or `stop()`."""
    results: list[tuple[Request, Generation] | None] = []  # a slot per request taken, in order
    send = _counted(send)

    async def worker() -> None:
        while deadline_ns is None or time.perf_counter_ns() <= deadline_ns:
            if stop is not None and stop():
                return
            request = next(requests, None)  # one loop thread: no two workers take the same one
            if request is None:
                return
            slot = len(results)
            results.append(None)
            results[slot] = (request, gen := await _sent(send, Scheduled(request)))
            if on_done is not None:
                on_done(gen)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return [r for r in results if r is not None]  # every slot filled: each worker awaited its own


async def _in_slot(send: Send, item: Scheduled, slots: asyncio.Semaphore, deadline_ns: int | None, on_done: Done,
                   stop: Stop = None) -> Generation:
    """One request once a slot is free; 'not_sent' when the load's deadline passed or the run stopped while it
    waited."""
    async with slots:
        if deadline_ns is not None and time.perf_counter_ns() > deadline_ns:
            return Generation(None, error=ErrorKind.NOT_SENT, error_message="load duration over")
        if stop is not None and stop():
            return Generation(None, error=ErrorKind.NOT_SENT, error_message=NOT_SENT_STOPPED)
        gen = await _sent(send, item)
    if on_done is not None:
        on_done(gen)
    return gen


async def _sent(send: Send, item: Scheduled) -> Generation:
    """`send(item)`; an exception it lets through is this request's `client_error`, not the whole gather's."""
    try:
        return await send(item)
    except Exception as exc:
        return Generation(None, error=ErrorKind.CLIENT_ERROR, error_message=f"{type(exc).__name__}: {exc}"[:300])


def _counted(send: Send) -> Send:
    """`send`, each request's Generation carrying the requests in flight it observed among this call's."""
    in_flight = InFlight()

    async def counted(item: Scheduled) -> Generation:
        with in_flight.request() as seen:
            gen = await send(item)
        gen.timing.in_flight_at_send, gen.timing.in_flight_most = seen.at_send, seen.most
        return gen

    return counted


async def _sleep_until_ns(deadline: int) -> None:
    """Sleep until perf_counter_ns reaches `deadline`."""
    # again until it is time: a loop's timers may fire early (uvloop's round to the millisecond)
    while (delay := (deadline - time.perf_counter_ns()) / 1e9) > 0:
        await asyncio.sleep(delay)
