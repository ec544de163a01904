"""Reads stamped by the kernel (`backends._kernel_rx`): the lean client's plain-TCP connections stamp bytes when
they reached the socket, not when the event loop got to them; the transport writes what it is given, whole, and
tells its protocol of the end once."""

from __future__ import annotations

import asyncio
import socket
import time
from contextlib import contextmanager

import pytest

from releasegate.backends._dispatch import loop_factory
from releasegate.backends._kernel_rx import SUPPORTED, StampedTransport
from releasegate.backends._sse_client import LeanClient

LOOPS = ["asyncio", "uvloop"]
pytestmark = pytest.mark.skipif(not SUPPORTED, reason="kernel receive stamps: Linux only")


def run(main, loop: str):
    with asyncio.Runner(loop_factory=loop_factory(loop)) as runner:
        return runner.run(main())


@contextmanager
def kernel_stamping():
    """Linux turns receive stamping on a moment after the first socket asks for it (deferred work): until a
    datagram to itself comes back stamped, and for the block, a socket of ours keeps it asking."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_TIMESTAMPNS", 35), 1)
        probe.bind(("127.0.0.1", 0))
        for _ in range(1000):
            probe.sendto(b"x", probe.getsockname())
            if probe.recvmsg(1, socket.CMSG_SPACE(16))[1]:
                break
            time.sleep(0.001)
        yield


@pytest.mark.parametrize("loop", LOOPS)
def test_bytes_are_stamped_when_the_kernel_received_them_not_when_the_loop_got_to_them(loop):
    server = socket.create_server(("127.0.0.1", 0))
    body = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n'

    async def main():
        url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
        async with LeanClient(url, None, connect_timeout=5, stall_timeout=5) as client:
            await client.preconnect(1)
            answer = asyncio.create_task(client.stream("/chat/completions", b"{}"))
            await asyncio.sleep(0)  # the request is written
            conn, _ = server.accept()  # in the backlog already: no wait
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(body), body))
                time.sleep(0.01)  # the loop is held: no receive callback can run before `held`
                held = time.perf_counter_ns()
                lines, stamps, end, sent, _ = await answer
        return lines, stamps, end, sent, held

    with server, kernel_stamping():
        lines, stamps, end, sent, held = run(main, loop)
    assert lines[0].startswith("data:") and lines[-2] == "data: [DONE]"
    assert sent <= stamps[0] < held and end < held


class Collect:
    def __init__(self):
        self.data, self.stamps, self.lost = bytearray(), [], []

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data, at=None):
        self.data += data
        self.stamps.append(at)

    def connection_lost(self, exc):
        self.lost.append(exc)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_write_larger_than_the_socket_takes_goes_out_whole_and_the_end_is_told_once(loop):
    payload = bytes(range(256)) * 8192  # 2 MiB: more than a socket buffer holds

    async def main():
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        theirs.setblocking(False)
        running = asyncio.get_running_loop()
        mine, peer = Collect(), Collect()
        sender, receiver = StampedTransport(running, ours, mine), StampedTransport(running, theirs, peer)
        sender.write(payload)
        while len(peer.data) < len(payload):
            await asyncio.sleep(0.001)
        receiver.close()
        receiver.close()
        while not mine.lost:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.01)
        return mine, peer, sender.is_closing()

    mine, peer, closing = run(main, loop)
    assert bytes(peer.data) == payload
    assert peer.lost == [None] and len(mine.lost) == 1 and closing
    assert all(a is not None for a in peer.stamps) and peer.stamps == sorted(peer.stamps)
