"""Plain-TCP connections that stamp each read with the kernel's receive time.

A clock read in a receive callback comes as late as the event loop reaches the callback: after the other
callbacks of its iteration, and after the wait for a CPU when the process was not running (a shared machine,
the server on the same core). Linux stamps every packet as it arrives (`SO_TIMESTAMPNS`) and hands the stamp
back with the bytes (`recvmsg`); read that way, a TTFT no longer holds the client's own scheduling delays. The
kernel's stamp is on the wall clock: it becomes a `perf_counter_ns()` time by its age, the wall clock read now
minus the stamp, taken from the monotonic clock read now. A stamp that would fall before the connection's last
one (the wall clock set back or forward meanwhile) is read as that last one, and one that would lie ahead of
now as now: an age is never guessed.

The transport here does what `_sse_client._Response` asks of one (write, close, abort, is_closing, get_write_buffer_size) over a non-blocking
socket the loop watches (`add_reader`), on asyncio's loop and uvloop's alike; TLS connections keep asyncio's
transport and the callback's clock read.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

__all__ = ["SUPPORTED", "StampedTransport", "open_stamped"]

_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Python names it from 3.12 on; Linux's value
SUPPORTED = sys.platform.startswith("linux")
"""Whether this platform stamps reads in the kernel (Linux); elsewhere the asyncio transport is used."""
_READ_MAX = 64 * 1024  # each read allocates this much (asyncio reads 256 KiB at once); an SSE event is far smaller
_ANCILLARY = socket.CMSG_SPACE(16) if SUPPORTED else 0  # one struct timespec
_TIMESPEC = struct.Struct("@qq")


class Receiver(Protocol):
    def connection_made(self, transport: Any) -> None: ...
    def data_received(self, data: bytes, at: int | None = None) -> None: ...
    def connection_lost(self, exc: Exception | None) -> None: ...


class StampedTransport:
    """A connected non-blocking socket read with `recvmsg`: each read goes to the protocol with its kernel stamp."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, protocol: Receiver) -> None:
        self._loop, self._sock, self._protocol = loop, sock, protocol
        self._fd = sock.fileno()
        self._closing = False
        self._out = bytearray()
        self._last = 0  # the last stamp handed over
        self._error: OSError | None = None  # a reset taken from the socket (SO_ERROR) while bytes were left to read
        # asyncio's selector loop calls the reader again while an error is pending; other loops may not (uvloop)
        self._last_call_may_be_final = not isinstance(loop, asyncio.SelectorEventLoop)
        protocol.connection_made(self)
        loop.add_reader(self._fd, self._readable)

    def _readable(self) -> None:
        while self._read() and self._last_call_may_be_final:
            # uvloop watches the socket with libuv's uv_poll, which, once the socket reports an error (a reset that
            # came with bytes unread), calls the reader one last time and stops watching it: that call must find
            # the reset itself. SO_ERROR takes the error (recv would, after the bytes): read on, then report it
            if self._error is None:
                error = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if not error:
                    return
                self._error = OSError(error, os.strerror(error))

    def _read(self) -> bool:
        """One read handed to the protocol; False when there was nothing to read or the connection ended."""
        if self._closing:
            return False
        try:
            data, ancillary, _, _ = self._sock.recvmsg(_READ_MAX, _ANCILLARY)
        except (BlockingIOError, InterruptedError):
            if self._error is not None:
                self._lost(self._error)
            return False
        except OSError as exc:
            self._lost(exc)
            return False
        if not data:
            self._lost(self._error)
            return False
        self._protocol.data_received(data, self._stamp(ancillary))
        return not self._closing

    def _stamp(self, ancillary: list[tuple[int, int, bytes]]) -> int:
        """The kernel's receive time of the last packet read, on perf_counter_ns, never before the connection's
        last stamp nor after now; now where the kernel gave none (it starts stamping a moment after the first
        socket asks it to)."""
        now = time.perf_counter_ns()
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(value) >= _TIMESPEC.size:
                sec, nsec = _TIMESPEC.unpack_from(value)
                age = time.time_ns() - (sec * 1_000_000_000 + nsec)
                now = min(now, max(now - age, self._last))
        self._last = now
        return now

    def write(self, data: bytes) -> None:
        if self._closing:
            return
        if not self._out:
            try:
                sent = self._sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._lost(exc)
                return
            data = data[sent:]
            if not data:
                return
            self._loop.add_writer(self._fd, self._writable)
        self._out += data

    def _writable(self) -> None:
        try:
            sent = self._sock.send(self._out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lost(exc)
            return
        del self._out[:sent]
        if not self._out:
            self._loop.remove_writer(self._fd)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """Close; the protocol hears of it (`connection_lost(None)`) in a later callback, as from asyncio's."""
        if not self._closing:
            self._shut()
            self._loop.call_soon(self._protocol.connection_lost, None)

    abort = close  # nothing is left to drop: close() drops unwritten bytes already

    def get_write_buffer_size(self) -> int:
        return len(self._out)

    def _lost(self, exc: Exception | None) -> None:
        if not self._closing:
            self._shut()
            self._protocol.connection_lost(exc)

    def _shut(self) -> None:
        self._closing = True
        self._loop.remove_reader(self._fd)
        if self._out:
            self._loop.remove_writer(self._fd)
            self._out.clear()
        self._sock.close()


_R = TypeVar("_R", bound=Receiver)


def _ask_for_stamps(sock: socket.socket) -> None:
    """Turn kernel receive stamps on where the kernel lets us; a sandbox or kernel that refuses the option
    (gVisor, a seccomp filter) leaves the socket unstamped: its reads are stamped when read, never refused."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        pass


async def open_stamped(host: str, port: int, factory: Callable[[], _R]) -> _R:
    """Connect to host:port (each address in turn), kernel receive stamps on; the protocol `factory` made."""
    loop = asyncio.get_running_loop()
    failure: OSError | None = None
    for family, kind, proto, _, address in await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as asyncio's transports set it
            _ask_for_stamps(sock)
            await loop.sock_connect(sock, address)
        except OSError as exc:
            sock.close()
            failure = exc
            continue
        except BaseException:
            sock.close()
            raise
        protocol = factory()
        StampedTransport(loop, sock, protocol)
        return protocol
    raise failure or OSError(f"no address for {host}:{port}")
