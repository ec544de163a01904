"""The kernel-stamped plain-TCP client (`backends._kernel_rx`) under a hostile server and odd environments, through
the real client path (`OpenAIBackend`, `LeanClient`), on asyncio's loop and uvloop's: each failure is the same
one-line, named error as with asyncio's transport, the run never hangs nor leaks a socket, and a stamp is never
before the request's send nor after the client saw the bytes, whatever the wall clock does."""

from __future__ import annotations

import asyncio
import errno
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

import releasegate.backends._kernel_rx as kernel_rx
import releasegate.backends._sse_client as sse_client
from releasegate.backends._base import Request
from releasegate.backends._dispatch import loop_factory
from releasegate.backends._kernel_rx import SUPPORTED, StampedTransport
from releasegate.backends._retry import classify, root_cause
from releasegate.backends._sse_client import LeanClient
from releasegate.backends.openai import OpenAIBackend
from releasegate.errors import ErrorKind
from releasegate.inputs.target import TargetConfig
from test_kernel_rx import kernel_stamping

LOOPS = ["asyncio", "uvloop"]
pytestmark = pytest.mark.skipif(not SUPPORTED, reason="kernel receive stamps: Linux only")

EVENTS = (b'data: {"choices": [{"delta": {"content": "tok"}, "finish_reason": null}]}\n\n'
          b'data: {"choices": [{"delta": {"content": " tok"}, "finish_reason": "stop"}]}\n\n'
          b'data: [DONE]\n\n')
WHOLE = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s" % (len(EVENTS), EVENTS))
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
FIRST_CHUNK = b"%x\r\n%s\r\n" % (len(EVENTS[:75]), EVENTS[:75])
HANG_S = 30
"""A bound on a hang (a server thread that never got its turn), never a measure of speed."""


@contextmanager
def server(handle: Callable[[socket.socket], None], family: int = socket.AF_INET) -> Iterator[str]:
    """A server on localhost whose every connection is `handle`d in a thread of its own; its base URL."""
    host = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    listener = socket.create_server((host, 0), family=family)
    threads: list[threading.Thread] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                handle(conn)
            except OSError:
                pass

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=serve, args=(conn,), daemon=True)
            threads.append(thread)
            thread.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    port = listener.getsockname()[1]
    try:
        yield f"http://[{host}]:{port}/v1" if family == socket.AF_INET6 else f"http://{host}:{port}/v1"
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        acceptor.join(HANG_S)
        for thread in threads:
            thread.join(HANG_S)


def answer_each_request(conn: socket.socket) -> None:
    """Keep-alive: one whole response (content-length) per request read."""
    while conn.recv(65536):
        conn.sendall(WHOLE)


def generate(url: str, n: int = 2, **target: object):
    config = TargetConfig(backend="openai", base_url=url, model="m", client="lean", concurrency=1, retries=0,
                          timeout_s=HANG_S, stall_timeout_s=HANG_S, **target)
    requests = [Request(case_id=f"c{i}", messages=[{"role": "user", "content": "hi"}]) for i in range(n)]
    return OpenAIBackend(config).generate(requests, max_new_tokens=8)


def assert_in_order(gens) -> None:
    for gen in gens:
        assert gen.error is None, gen.error
        assert gen.text == "tok tok"
        assert 0 <= gen.timing.ttft_ms <= gen.timing.e2e_ms, gen.timing
        assert all(gap >= 0 for gap in gen.timing.itl_ms), gen.timing.itl_ms


@pytest.fixture(params=LOOPS)
def event_loop_name(request, monkeypatch) -> str:
    monkeypatch.setenv("RELEASEGATE_EVENT_LOOP", request.param)
    return str(request.param)


# -- the stamps --------------------------------------------------------------------------------------------------
def test_an_answer_that_reached_the_kernel_before_the_send_clock_read_is_stamped_at_the_send(event_loop_name,
                                                                                           monkeypatch):
    """A server on the same machine can answer while the client is still between its write and the clock read
    after it (the client's thread preempted there): the kernel's stamp is then before `sent`. Reproduced here by
    holding the write until the whole answer is in the socket: TTFT and E2E must not come out negative."""
    write = StampedTransport.write

    def write_then_wait_for_the_answer(self, data):
        write(self, data)
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            if select.select([self._sock], [], [], 0.01)[0] and WHOLE in self._sock.recv(2 * len(WHOLE), socket.MSG_PEEK):
                return

    monkeypatch.setattr(StampedTransport, "write", write_then_wait_for_the_answer)
    with kernel_stamping(), server(answer_each_request) as url:
        assert_in_order(generate(url))


class SteppedClock:
    """The `time` module with the wall clock set `step_s` away from the kernel's (as an NTP step or an admin
    would, between the bytes' arrival and their read)."""

    def __init__(self, step_s: float) -> None:
        self.step_ns = int(step_s * 1e9)
        self.perf_counter_ns = time.perf_counter_ns

    def time_ns(self) -> int:
        return time.time_ns() + self.step_ns


@pytest.mark.parametrize("step_s", [3600.0, -3600.0])
def test_a_wall_clock_step_leaves_every_stamp_between_the_send_and_the_read(event_loop_name, monkeypatch, step_s):
    """Forward: the kernel's stamps look an hour old; back: an hour ahead. Either way a TTFT is clamped to what
    the client saw (from the send to its read), on a fresh connection and on a reused one alike."""
    monkeypatch.setattr(kernel_rx, "time", SteppedClock(step_s))
    with kernel_stamping(), server(answer_each_request) as url:
        assert_in_order(generate(url, n=3))


@pytest.mark.parametrize("loop", LOOPS)
def test_stamps_of_a_one_byte_at_a_time_chunked_stream_are_in_order_after_the_send(loop):
    def loris(conn):
        conn.recv(65536)
        events = [event + b"\n\n" for event in EVENTS.split(b"\n\n")[:-1]]
        body = b"".join(b"%x\r\n%s\r\n" % (len(event), event) for event in events) + b"0\r\n\r\n"
        for byte in CHUNKED_HEAD + body:
            conn.sendall(bytes([byte]))

    async def main(url):
        async with LeanClient(url, None, connect_timeout=HANG_S, stall_timeout=HANG_S) as client:
            lines, stamps, end, sent, _ = await client.stream("/chat/completions", b"{}")
            return lines, stamps, end, sent, time.perf_counter_ns()

    with kernel_stamping(), server(loris) as url:
        lines, stamps, end, sent, after = run(lambda: main(url), loop)
    assert lines[-2] == "data: [DONE]" and len(lines) == 6
    assert sent <= stamps[0] and stamps == sorted(stamps) and stamps[-1] <= end <= after


# -- an odd environment -------------------------------------------------------------------------------------------
def test_a_kernel_that_refuses_receive_stamps_still_answers(event_loop_name, monkeypatch):
    """SO_TIMESTAMPNS refused (a sandbox such as gVisor, a seccomp filter): the connection goes on unstamped, each
    read stamped when read, instead of every request failing with 'Protocol not available'."""
    setsockopt = socket.socket.setsockopt

    def refuse_stamps(self, level, option, *value):
        if level == socket.SOL_SOCKET and option == kernel_rx._SO_TIMESTAMPNS:
            raise OSError(errno.ENOPROTOOPT, "Protocol not available")
        return setsockopt(self, level, option, *value)

    monkeypatch.setattr(socket.socket, "setsockopt", refuse_stamps)
    with server(answer_each_request) as url:
        assert_in_order(generate(url))


def test_ipv6_localhost(event_loop_name):
    with kernel_stamping(), server(answer_each_request, socket.AF_INET6) as url:
        assert_in_order(generate(url))


def test_a_name_whose_first_address_refuses_connects_to_the_next(monkeypatch):
    """asyncio's loop resolves through `socket.getaddrinfo`: a name giving ::1 (nobody listening) then 127.0.0.1."""
    with server(answer_each_request) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        closed = socket.socket(socket.AF_INET6)
        closed.bind(("::1", 0))
        dead = closed.getsockname()[1]
        closed.close()
        answers = [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", dead, 0, 0)),
                   (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: answers)
        monkeypatch.setenv("RELEASEGATE_EVENT_LOOP", "asyncio")
        assert_in_order(generate(f"http://several.test:{port}/v1"))


# -- failures: one named line, the same as asyncio's transport gives --------------------------------------------
def run(main, loop: str):
    with asyncio.Runner(loop_factory=loop_factory(loop)) as runner:
        return runner.run(main())


def failure(url: str, loop: str, body: bytes = b"{}", stall_timeout: float = HANG_S) -> tuple[str, str]:
    async def main():
        async with LeanClient(url, None, connect_timeout=HANG_S, stall_timeout=stall_timeout) as client:
            try:
                await client.stream("/chat/completions", body)
            except Exception as exc:
                return str(classify(exc)[0].kind), root_cause(exc)
        raise AssertionError("the request was answered")

    return run(main, loop)


def half_close_mid_body(conn):
    conn.recv(65536)
    conn.sendall(CHUNKED_HEAD + FIRST_CHUNK)
    conn.shutdown(socket.SHUT_WR)
    conn.recv(1)  # until the client closes


def reset_before_reading(conn):
    conn.recv(1)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def bad_chunk_size(conn):
    conn.recv(65536)
    conn.sendall(CHUNKED_HEAD + b"zz\r\nxx\r\n")


BROKEN = "StreamBroken: connection closed before the response was complete"
FAILURES = {
    "half-close mid-body": (half_close_mid_body, b"{}", ErrorKind.STREAM_INTERRUPTED, BROKEN),
    "reset while a large body is written": (reset_before_reading, b"x" * 8_000_000, ErrorKind.CONNECTION_ERROR, BROKEN),
    "bad chunk size": (bad_chunk_size, b"{}", ErrorKind.CLIENT_ERROR, "BadFraming: chunk size is not hexadecimal: b'zz'"),
}


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("name", sorted(FAILURES))
def test_a_broken_server_is_the_same_named_failure_as_with_asyncios_transport(monkeypatch, loop, name):
    handle, body, kind, line = FAILURES[name]
    with server(handle) as url:
        stamped = failure(url, loop, body)
        monkeypatch.setattr(sse_client, "SUPPORTED", False)  # asyncio's transport, as for HTTPS
        plain = failure(url, "asyncio", body)
    assert stamped == plain == (str(kind), line)


@pytest.mark.parametrize("loop", LOOPS)
def test_connection_refused_reads_as_with_asyncios_transport(monkeypatch, loop):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    closed.close()
    stamped = failure(url, loop)
    monkeypatch.setattr(sse_client, "SUPPORTED", False)
    assert stamped == failure(url, "asyncio")
    assert stamped[0] == str(ErrorKind.CONNECTION_ERROR) and stamped[1].startswith("ConnectionRefusedError: ")


@pytest.mark.parametrize("loop", LOOPS)
def test_a_server_that_reads_nothing_of_a_large_body_is_a_stall_and_the_socket_is_closed(loop):
    """The request body is larger than the socket buffers hold and the server never reads: the write waits in
    the transport, the stall timeout fires, and the connection is closed (the server sees its end)."""
    seen_end = threading.Event()

    def never_read(conn):
        conn.settimeout(HANG_S)
        time.sleep(0.5)  # the client's stall timeout, 0.2 s, passes while nothing is read
        while conn.recv(1 << 20):  # then drain until the client closed
            pass
        seen_end.set()

    with server(never_read) as url:
        assert failure(url, loop, b"x" * 16_000_000, stall_timeout=0.2) == (str(ErrorKind.STALL_TIMEOUT),
                                                                            "StallTimeout: no data for 0.2 s")
        assert seen_end.wait(HANG_S)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_reset_that_arrives_with_bytes_unread_is_a_broken_stream_at_once(monkeypatch, loop):
    """The server sends part of the body and resets the connection (a crashed worker, a proxy's abort) while the
    client's loop is busy: bytes and reset wait together. A broken stream, as with asyncio's transport (uvloop
    calls the reader once for that socket, then stops watching it: the read must find the reset itself)."""
    reset = threading.Event()

    def reset_mid_body(conn):
        conn.recv(65536)
        conn.sendall(CHUNKED_HEAD + FIRST_CHUNK)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # with no linger: a reset
        reset.set()

    async def main(url):
        async with LeanClient(url, None, connect_timeout=HANG_S, stall_timeout=5) as client:
            await client.preconnect(1)
            task = asyncio.create_task(client.stream("/chat/completions", b"{}"))
            await asyncio.sleep(0)  # the request is written (a pooled connection)
            assert reset.wait(HANG_S)  # the loop is held: bytes and reset arrive before any read
            try:
                await task
            except Exception as exc:
                return str(classify(exc)[0].kind), root_cause(exc)

    with server(reset_mid_body) as url:
        stamped = run(lambda: main(url), loop)
    reset.clear()
    monkeypatch.setattr(sse_client, "SUPPORTED", False)
    with server(reset_mid_body) as url:
        plain = run(lambda: main(url), "asyncio")
    assert stamped == plain == (str(ErrorKind.STREAM_INTERRUPTED), BROKEN)


# -- interruption ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("how", ["cancel", "left pending"])
def test_a_request_interrupted_mid_stream_closes_its_socket(loop, how):
    """The task cancelled, or left pending when the run ends (as on Ctrl-C): the server sees the connection end;
    no warning (pytest turns a ResourceWarning or 'Task was destroyed' into a failure)."""
    started, seen_end = threading.Event(), threading.Event()

    def silent(conn):
        conn.settimeout(HANG_S)
        conn.recv(65536)
        conn.sendall(CHUNKED_HEAD + FIRST_CHUNK)
        started.set()
        try:
            while conn.recv(65536):
                pass
        except ConnectionResetError:  # closed with our chunk unread (a busy client): a reset, not a FIN
            pass
        seen_end.set()

    async def main(url):
        client = LeanClient(url, None, connect_timeout=HANG_S, stall_timeout=HANG_S)
        task = asyncio.create_task(client.stream("/chat/completions", b"{}"))
        while not started.is_set():
            await asyncio.sleep(0.001)
        if how == "cancel":
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    with server(silent) as url:
        run(lambda: main(url), loop)
        assert seen_end.wait(HANG_S)

