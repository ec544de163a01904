"""Every socket is closed when its exchange ends, whatever the other end left undone: the lean client's when a
server never reads a large request, or closes its side while the request is still being written (on asyncio's
transport, as for HTTPS, and on the kernel-stamped one; on asyncio's loop and uvloop's), and the stub's when it
stops while a client has not read its answer. A socket left open is found here, in the test that leaked it: the
garbage is collected with every warning recorded, and nothing may be printed when the loop closes."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import releasegate.backends._sse_client as sse_client
from releasegate.backends._kernel_rx import SUPPORTED
from releasegate.errors import ErrorKind
from releasegate.testing import StubBehaviour, StubServer
from test_kernel_rx_attack import HANG_S, LOOPS, WHOLE, failure, run, server

LARGE = b"x" * 16_000_000
"""A request body far larger than the socket buffers hold: its write waits in the transport."""
TRANSPORTS = ["asyncio", pytest.param("stamped", marks=pytest.mark.skipif(not SUPPORTED, reason="Linux only"))]


@contextmanager
def no_socket_left_open(capfd: pytest.CaptureFixture[str]) -> Iterator[None]:
    """Fails if a socket or transport made inside is left open (found by collecting the garbage afterwards), or if
    anything is printed on stderr (uvloop's 'EBUSY' when it closes with a handle still open)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield
        gc.collect()
    leaks = [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)]
    assert not leaks, leaks
    assert capfd.readouterr().err == ""


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "asyncio":
        monkeypatch.setattr(sse_client, "SUPPORTED", False)  # asyncio's transport, as for HTTPS
    return str(request.param)


def held_until(release: threading.Event, read_first: int = 0, shut: bool = False, answer: bytes = b""):
    """A server that reads `read_first` bytes, answers `answer`, closes its sending side if `shut`, and reads
    nothing more until `release` is set."""

    def handle(conn: socket.socket) -> None:
        if read_first:
            conn.recv(read_first)
        conn.sendall(answer)
        if shut:
            conn.shutdown(socket.SHUT_WR)
        release.wait(HANG_S)

    return handle


@pytest.mark.parametrize("loop", LOOPS)
def test_a_large_request_the_server_never_reads_leaves_no_socket_open(capfd, transport, loop):
    release = threading.Event()
    with no_socket_left_open(capfd), server(held_until(release)) as url:
        assert failure(url, loop, LARGE, stall_timeout=0.2) == (str(ErrorKind.STALL_TIMEOUT),
                                                                "StallTimeout: no data for 0.2 s")
        release.set()


@pytest.mark.parametrize("loop", LOOPS)
def test_a_server_that_closes_its_side_while_the_request_is_written_is_a_broken_stream(capfd, transport, loop):
    """The server's FIN ends the exchange at once (a broken stream, not a stall), and the socket is closed."""
    release = threading.Event()
    with no_socket_left_open(capfd), server(held_until(release, read_first=1, shut=True)) as url:
        assert failure(url, loop, LARGE, stall_timeout=5) == (str(ErrorKind.CONNECTION_ERROR),
                                                              "StreamBroken: connection closed before the response was complete")
        release.set()


@pytest.mark.parametrize("loop", LOOPS)
def test_an_answer_that_comes_before_the_request_is_read_is_kept_and_its_connection_not_pooled(capfd, transport,
                                                                                              loop):
    """A server may answer before it read the whole request; the answer is good, but the rest of the request is
    never read, so the connection cannot be reused and is closed."""
    release = threading.Event()

    async def main(url: str) -> tuple[list[str], int]:
        async with sse_client.LeanClient(url, None, connect_timeout=HANG_S, stall_timeout=HANG_S) as client:
            lines = (await client.stream("/chat/completions", LARGE))[0]
            return lines, len(client._idle)

    with no_socket_left_open(capfd), server(held_until(release, read_first=1, answer=WHOLE)) as url:
        lines, pooled = run(lambda: main(url), loop)
        release.set()
    assert lines[-2:] == ["data: [DONE]", ""] and pooled == 0


def test_a_stub_stopped_while_a_client_has_not_read_its_answer_leaves_no_socket_open(capfd):
    body = json.dumps({"prompt": "x", "stream": True}).encode()
    with no_socket_left_open(capfd), socket.socket() as client:
        with StubServer(StubBehaviour(ttft_ms=0, itl_ms=0, tokens=200_000)) as stub:
            client.connect(("127.0.0.1", stub.port))
            client.sendall(b"POST /v1/completions HTTP/1.1\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
            client.recv(1)  # the answer has begun; the rest fills the socket buffers, unread


def test_a_stub_stopped_while_a_client_holds_an_idle_keep_alive_connection_leaves_no_socket_open(capfd):
    stub = StubServer(StubBehaviour(ttft_ms=0, itl_ms=0))

    async def main() -> None:
        async with sse_client.LeanClient(stub.base_url, None, connect_timeout=HANG_S, stall_timeout=HANG_S) as client:
            await client.stream("/completions", b'{"prompt": "x", "stream": true}')
            assert len(client._idle) == 1
            stub.__exit__()  # stopped with the connection in the client's pool

    with no_socket_left_open(capfd):
        stub.__enter__()
        asyncio.run(main())

