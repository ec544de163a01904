"""A SIGTERM that arrives while the lean client's event loop runs stops the requests as an interruption, whichever
callback it lands in: uvloop swallows a KeyboardInterrupt raised in a protocol's `data_received` ("Fatal error on
transport"), so the signal handler cancels the loop's main task instead and the backend raises KeyboardInterrupt.

The signal is sent from inside the callback (os.kill to this process), so the handler runs right there, every
time: on uvloop and asyncio's loop, in the quality phase and the load phase."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import threading

import pytest

from conftest import write_jsonl
from releasegate.backends import Request
from releasegate.backends._sse_client import _Response
from releasegate.backends.openai import OpenAIBackend
from releasegate.inputs.config import load_config
from releasegate.loop_interrupt import interrupt_running_loop, run_interruptibly
from releasegate.run import interruption
from releasegate.run.interruption import INTERRUPTION, signals_stop
from releasegate.testing import StubBehaviour, StubServer

REQUESTS = 40
LOOPS = ["uvloop", "asyncio"]


@pytest.fixture(autouse=True)
def no_grace_period_exit(monkeypatch):
    """A run that does not stop would be ended by the grace period's os._exit, pytest with it: fail instead."""
    monkeypatch.setattr(interruption, "GRACE_S", 300.0)


def backend_for(tmp_path, base_url: str) -> OpenAIBackend:
    write_jsonl(tmp_path / "suite.jsonl", [{"id": "c0", "messages": [{"role": "user", "content": "hi"}]}])
    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: error_rate, op: '<=', threshold: 0.0}\n")
    (tmp_path / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  client: lean\n"
        "  concurrency: 4\n  timeout_s: 10\ngeneration: {max_new_tokens: 4}\n"
        "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\nrubric: rubric.yaml\n")
    config = load_config(tmp_path / "releasegate.yaml")
    backend = OpenAIBackend(config.target, config.generation)
    backend.load()
    return backend


def requests() -> list[Request]:
    return [Request(f"r{i}", [{"role": "user", "content": "hi"}], None) for i in range(REQUESTS)]


def signal_once(signum: int = signal.SIGTERM):
    """A callback hook that sends this process `signum` the first time it runs."""
    sent = []

    def fire(*_args) -> None:
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signum)  # the handler runs before this callback's next line

    return fire


def signal_in_data_received(monkeypatch, signum: int) -> None:
    """The lean client's receive callback sends `signum` the first time it runs, before it reads the bytes."""
    fire, receive = signal_once(signum), _Response.data_received

    def data_received(self, data, *stamp):
        fire()
        receive(self, data, *stamp)

    monkeypatch.setattr(_Response, "data_received", data_received)


def signal_in_loop_setup(monkeypatch) -> None:
    """The first socket pair made in the main thread from now on sends SIGTERM from inside `socket.socketpair`:
    uvloop makes its self-pipe that way as a run starts, just after it marked itself running (asyncio's loop
    makes it when it is created)."""
    fire, made = signal_once(), socket.socket

    class Socket(made):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            if threading.current_thread() is threading.main_thread() and sys._getframe(1).f_code.co_name == "socketpair":
                fire()

    monkeypatch.setattr(socket, "socket", Socket)


def interrupted(call) -> None:
    """`call()` under check's signal handler: it must raise KeyboardInterrupt (the run takes it, as check does)."""
    with signals_stop():
        with pytest.raises(KeyboardInterrupt):
            call()
        assert INTERRUPTION.signum == signal.SIGTERM
        INTERRUPTION.taken = True


def no_transport_errors(caplog) -> None:
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


@pytest.mark.parametrize("event_loop", LOOPS)
@pytest.mark.parametrize("phase", ["quality", "load"])
def test_a_sigterm_in_data_received_stops_the_requests_as_an_interruption(tmp_path, monkeypatch, caplog, event_loop,
                                                                          phase):
    monkeypatch.setenv("RELEASEGATE_EVENT_LOOP", event_loop)
    signal_in_data_received(monkeypatch, signal.SIGTERM)
    with StubServer(StubBehaviour(ttft_ms=50, itl_ms=2, tokens=3)) as stub:
        backend = backend_for(tmp_path, stub.base_url)
        sent = stub.requests
        if phase == "quality":
            interrupted(lambda: backend.generate(requests(), max_new_tokens=4))
        else:
            interrupted(lambda: backend.run_load(requests(), offsets=None, concurrency=4, max_new_tokens=4))
        backend.close()
        assert stub.requests - sent < REQUESTS  # stopped there, not at the end of the batch
    no_transport_errors(caplog)


@pytest.mark.parametrize("event_loop", LOOPS)
def test_a_sigterm_while_the_loop_starts_stops_the_requests_as_an_interruption(tmp_path, monkeypatch, caplog,
                                                                               event_loop):
    """uvloop marks itself running, then makes its self-pipe: a KeyboardInterrupt raised there left it marked
    running, and closing it failed ("Cannot close a running event loop": an internal error, exit 70)."""
    monkeypatch.setenv("RELEASEGATE_EVENT_LOOP", event_loop)
    with StubServer(StubBehaviour(ttft_ms=20, itl_ms=2, tokens=3)) as stub:
        backend = backend_for(tmp_path, stub.base_url)
        sent = stub.requests
        signal_in_loop_setup(monkeypatch)
        interrupted(lambda: backend.generate(requests(), max_new_tokens=4))
        backend.close()
        assert stub.requests == sent  # stopped before the first request
    no_transport_errors(caplog)


@pytest.mark.parametrize("event_loop", LOOPS)
def test_a_sigterm_in_a_task_callback_stops_the_load_phase_as_an_interruption(tmp_path, monkeypatch, caplog,
                                                                             event_loop):
    monkeypatch.setenv("RELEASEGATE_EVENT_LOOP", event_loop)
    with StubServer(StubBehaviour(ttft_ms=20, itl_ms=2, tokens=3)) as stub:
        backend = backend_for(tmp_path, stub.base_url)
        sent = stub.requests
        interrupted(lambda: backend.run_load(requests(), offsets=[0.01 * i for i in range(REQUESTS)], concurrency=4,
                                             max_new_tokens=4, on_done=signal_once()))
        backend.close()
        assert stub.requests - sent < REQUESTS
    no_transport_errors(caplog)


@pytest.mark.parametrize("event_loop", LOOPS)
def test_a_sigterm_while_every_request_stalls_stops_them_as_an_interruption(tmp_path, monkeypatch, caplog, event_loop):
    """The signal comes from another thread while the loop waits on stalled streams: the handler runs from the
    loop's wake-up, not from a callback of the client."""
    import time

    monkeypatch.setenv("RELEASEGATE_EVENT_LOOP", event_loop)
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=1, tokens=3, stall_after=1)) as stub:
        backend = backend_for(tmp_path, stub.base_url)
        sent = stub.requests

        def signal_once_all_stall() -> None:
            while stub.requests - sent < 4:  # the 4 slots hold stalled streams: the loop only waits
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=signal_once_all_stall, daemon=True).start()
        interrupted(lambda: backend.generate(requests(), max_new_tokens=4))
        backend.close()
        assert stub.requests - sent == 4
    no_transport_errors(caplog)


def test_a_task_that_ignores_the_cancellation_still_ends_in_keyboard_interrupt():
    async def stubborn() -> str:
        try:
            assert interrupt_running_loop()
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            pass  # a library that eats the cancellation: the run stops all the same
        return "done"

    with pytest.raises(KeyboardInterrupt):
        run_interruptibly(stubborn())
    assert not interrupt_running_loop()  # no loop runs any more: the handler raises itself


def test_a_signal_while_the_loop_is_being_made_stops_the_work_before_it_starts():
    started = []

    def loop_factory() -> asyncio.AbstractEventLoop:
        assert interrupt_running_loop()  # no loop nor task yet: noted, and the task is cancelled once it exists
        return asyncio.new_event_loop()

    async def work() -> None:
        started.append(True)

    with pytest.raises(KeyboardInterrupt):
        run_interruptibly(work(), loop_factory)
    assert started == []


def test_a_loop_in_another_thread_is_never_interrupted_from_the_handler():
    seen = []

    async def work() -> None:
        seen.append(interrupt_running_loop())

    thread = threading.Thread(target=lambda: run_interruptibly(work()))
    thread.start()
    thread.join()
    assert seen == [False]


@pytest.fixture
def python_ctrl_c():
    """SIGINT raises KeyboardInterrupt in this process, as Python sets it up in a program started in the foreground.
    A suite run as a background job (`make test &`, nohup, a CI runner) starts with SIGINT ignored, and Python then
    leaves it ignored: Ctrl-C could not reach the code under test."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_without_a_handler_of_the_programs_own_stops_the_requests_too(tmp_path, monkeypatch, caplog,
                                                                             python_ctrl_c):
    """A command other than `check` installs no handler: Ctrl-C in `data_received` on uvloop still stops it."""
    monkeypatch.setenv("RELEASEGATE_EVENT_LOOP", "uvloop")
    signal_in_data_received(monkeypatch, signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with StubServer(StubBehaviour(ttft_ms=50, itl_ms=2, tokens=3)) as stub:
        backend = backend_for(tmp_path, stub.base_url)
        sent = stub.requests
        with pytest.raises(KeyboardInterrupt):
            backend.generate(requests(), max_new_tokens=4)
        backend.close()
        assert stub.requests - sent < REQUESTS
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    no_transport_errors(caplog)
