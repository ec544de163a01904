"""Where an unclosed socket was made: a socket the garbage collector finalizes while still open prints the stack
that created it to stderr (then warns as it always does, which `filterwarnings = error` turns into a failure).

Such a ResourceWarning fails whichever test the collector happens to run in, usually not the test that leaked
the socket; the creation stack names the code that did. `RELEASEGATE_TEST_GC=1` also collects after every test
(slow), so the failure lands in the test that leaked it."""

from __future__ import annotations

import _socket
import socket
import sys
import traceback

_origins: dict[int, str] = {}
_init = socket.socket.__init__
_close = socket.socket.close
_detach = socket.socket.detach


def _tracked_init(self: socket.socket, *args: object, **kwargs: object) -> None:
    _init(self, *args, **kwargs)  # type: ignore[arg-type]
    _origins[id(self)] = "".join(traceback.format_stack(limit=16)[:-1])


def _tracked_close(self: socket.socket) -> None:
    _origins.pop(id(self), None)
    _close(self)


def _tracked_detach(self: socket.socket) -> int:
    _origins.pop(id(self), None)
    return _detach(self)


def _finalize(self: socket.socket) -> None:
    origin = _origins.pop(id(self), None)
    if origin is not None and self.fileno() != -1:
        sys.stderr.write(f"\nan unclosed socket {self!r} was made here:\n{origin}\n")
    _socket.socket.__del__(self)  # type: ignore[attr-defined]  # the C finalizer: close it and warn


def install() -> None:
    socket.socket.__init__ = _tracked_init  # type: ignore[method-assign]
    socket.socket.close = _tracked_close  # type: ignore[method-assign]
    socket.socket.detach = _tracked_detach  # type: ignore[method-assign]
    socket.socket.__del__ = _finalize  # type: ignore[attr-defined]
