"""A signal that arrives while an event loop runs a run's requests stops them as an interruption, whichever of
the loop's callbacks it lands in.

A signal handler that raises KeyboardInterrupt raises it in whatever Python code the main thread runs at that
moment; under an event loop that is one of the loop's callbacks, and a loop may swallow it there: uvloop reports
one raised in a protocol's `data_received` as "Fatal error on transport", closes that connection and carries on,
so the request fails as a broken connection (a failure the target never had) and the run goes on until the
next stage boundary or the grace period. So while `run_interruptibly` runs a loop in the main thread, the signal
handler (run/interruption.py) calls `interrupt_running_loop` instead of raising: the loop's main task is
cancelled, the way asyncio.Runner handles Ctrl-C, the cancellation unwinds every request in flight and the
client, and `run_interruptibly` raises KeyboardInterrupt once the loop is closed. Where the program has no
SIGINT handler of its own (a command other than `check`), Ctrl-C does the same, as under asyncio.Runner.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # asyncio is imported where a loop is run: the signal handler's module is on every command's path
    import asyncio

__all__ = ["run_interruptibly", "interrupt_running_loop"]

T = TypeVar("T")


class _Running:
    """The loop `run_interruptibly` runs in the main thread: its main task once created, and whether a signal
    asked it to stop."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[Any] | None = None
        self.interrupted = False

    def cancel(self) -> None:
        """Cancel the main task and wake the loop: asyncio's selector goes back to waiting after a signal
        handler returns, until its timeout, unless something is written to its self-pipe."""
        if self.task is not None:
            self.task.cancel()
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(_nothing)


_RUNNING: _Running | None = None
"""Set while `run_interruptibly` runs a loop in the main thread (from before the loop exists until it is closed)."""


def _nothing() -> None:
    return None


def run_interruptibly(coro: Coroutine[Any, Any, T], loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None) -> T:
    """`coro` to its end on a fresh event loop (`loop_factory`'s, asyncio's for None), closed after it like
    asyncio.run closes its own. In the main thread, an `interrupt_running_loop` call meanwhile (a signal's)
    cancels `coro`, and this raises KeyboardInterrupt once the loop is closed, whatever `coro` then returned or
    raised (the run is stopping: what came back after the signal is not kept)."""
    import asyncio

    global _RUNNING
    if threading.current_thread() is not threading.main_thread():  # signals are handled in the main thread only
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(coro)
    running, outer = _Running(), _RUNNING
    _RUNNING = running
    ctrl_c = signal.getsignal(signal.SIGINT) is signal.default_int_handler  # no handler of the program's own
    if ctrl_c:
        signal.signal(signal.SIGINT, _on_ctrl_c)
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            running.loop = runner.get_loop()
            running.task = running.loop.create_task(coro)
            if running.interrupted:  # the signal came while the loop was being made
                running.cancel()
            result: T = running.loop.run_until_complete(running.task)
    except BaseException as exc:
        if running.interrupted and not isinstance(exc, KeyboardInterrupt):
            raise KeyboardInterrupt from exc  # the cancellation, or what it caused on its way out
        raise
    finally:
        _RUNNING = outer
        if ctrl_c and signal.getsignal(signal.SIGINT) is _on_ctrl_c:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if running.interrupted:  # the task had finished, or let the cancellation go: the run stops all the same
        raise KeyboardInterrupt
    return result


def interrupt_running_loop() -> bool:
    """For a signal handler (which runs in the main thread): if `run_interruptibly` is running a loop there,
    cancel its main task and return True, and it raises KeyboardInterrupt when the loop is done; False when no
    loop runs, and the handler raises KeyboardInterrupt itself."""
    running = _RUNNING
    if running is None:
        return False
    running.interrupted = True
    running.cancel()
    return True


def _on_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C where the program installed no handler of its own (asyncio.Runner's rule): the first cancels the
    running loop's main task, a second raises KeyboardInterrupt at once."""
    if _RUNNING is None or _RUNNING.interrupted or not interrupt_running_loop():
        raise KeyboardInterrupt
