"""The total deadline of the border's HTTP reader holds to the last byte, whatever the reply's shape: a body
framed by its Content-Length, one that ends at the close (no Content-Length) and one sent with
`Connection: close` and one in chunks are each cut at the deadline when the server trickles them a byte at a time (each read
returns in time, the whole reply never would). The webhook and the embeddings endpoint read through it; the
target's streaming clients (lean and openai) are bounded by the request's `timeout_s` around the whole
exchange."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import pytest

import releasegate.pipeline.promote as promote
from releasegate.backends.embeddings import Embedded, _endpoint
from releasegate.border.http import HttpError, Limits, fetch, post_json
from releasegate.errors import ErrorKind, TargetError
from releasegate.inputs.cache_config import EmbeddingSource

BYTES = 400
"""What the server trickles: 400 bytes at 20 a second, far longer than any deadline here. Should the deadline
not hold, the server sends its last byte: each test asserts it never did (`Trickler.whole`)."""

SHAPES = {
    "content-length": f"Content-Length: {BYTES}\r\n",
    "until-close": "",
    "connection-close": "Connection: close\r\n",
    "length-and-close": f"Content-Length: {BYTES}\r\nConnection: close\r\n",
    "chunked": "Transfer-Encoding: chunked\r\n",
}


@dataclass
class Trickler:
    url: str
    whole: list[bool] = field(default_factory=list)
    """Per request answered: whether the server sent its last byte (the client never cut it)."""


@contextmanager
def trickler(head: str, content_type: str = "application/json", status: str = "200 OK") -> Iterator[Trickler]:
    """A server on a loopback port that answers each request with `head` and then a byte every 50 ms. Every
    thread it starts ends before it returns."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    threads: list[threading.Thread] = []
    served = Trickler(f"http://127.0.0.1:{server.getsockname()[1]}")

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(65536)
                conn.sendall(f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{head}\r\n".encode())
                for _ in range(BYTES):
                    if stop.wait(0.05):
                        return
                    conn.sendall(b"1\r\n \r\n" if "chunked" in head else b" ")  # a chunk of one byte
                served.whole.append(True)
            except OSError:  # the client cut the connection: what the test wants
                served.whole.append(False)

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            worker = threading.Thread(target=answer, args=(conn,), daemon=True)
            worker.start()
            threads.append(worker)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield served
    finally:
        stop.set()
        acceptor.join()
        for worker in threads:
            worker.join()
        server.close()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_trickled_reply_of_every_shape_ends_with_the_deadline(shape):
    with trickler(SHAPES[shape]) as server, pytest.raises(HttpError) as caught:
        fetch(server.url + "/x", limits=Limits(deadline_s=1.0, read_timeout_s=0.9))
    assert caught.value.kind == ErrorKind.TIMEOUT and caught.value.detail == "no whole reply within 1 s"
    assert True not in server.whole


@pytest.mark.parametrize("shape", ["until-close", "connection-close"])
def test_the_read_loop_checks_the_deadline_itself(monkeypatch, shape):
    """With the watchdog never firing (a thread a busy machine runs late), the read loop still ends the reply."""
    import releasegate.border.http as border_http

    monkeypatch.setattr(border_http._Watchdog, "__enter__", lambda self: self)
    with trickler(SHAPES[shape]) as server, pytest.raises(HttpError) as caught:
        post_json(server.url + "/x", {"a": 1}, limits=Limits(deadline_s=1.0, read_timeout_s=0.9))
    assert caught.value.kind == ErrorKind.TIMEOUT and True not in server.whole


@pytest.mark.parametrize("shape", ["content-length", "until-close", "connection-close"])
def test_the_webhook_is_cut_at_its_deadline(monkeypatch, shape):
    monkeypatch.setattr(promote, "_WEBHOOK_LIMITS", Limits(deadline_s=1.0, read_timeout_s=0.9))
    monkeypatch.setattr(promote, "WEBHOOK_ATTEMPTS", 1)
    with trickler(SHAPES[shape], status="503 Service Unavailable") as server, pytest.raises(TargetError) as caught:
        promote.post_webhook(server.url + "/hook/secret-path", {"event": "x"}, None)
    assert "no whole reply within 1 s" in str(caught.value) and "secret-path" not in str(caught.value)
    assert True not in server.whole


@pytest.mark.parametrize("shape", ["content-length", "until-close", "connection-close"])
def test_a_webhook_that_took_the_promotion_and_trickles_is_delivered_once(monkeypatch, shape):
    """A 2xx head is the receiver's word that it took the promotion: the trickle after it is cut at the deadline
    and not read, and the promotion is not sent again (a second deploy)."""
    monkeypatch.setattr(promote, "_WEBHOOK_LIMITS", Limits(deadline_s=1.0, read_timeout_s=0.9))
    with trickler(SHAPES[shape]) as server:
        done = promote.post_webhook(server.url + "/hook/secret-path", {"event": "x"}, None)
    assert done["status"] == 200 and done["attempts"] == 1 and "no whole reply within 1 s" in done["reply_not_read"]
    assert True not in server.whole


@pytest.mark.parametrize("shape", ["content-length", "until-close", "connection-close"])
def test_the_embeddings_endpoint_is_cut_at_its_timeout(shape):
    with trickler(SHAPES[shape]) as server:
        source = replace(EmbeddingSource(base_url=server.url + "/v1", model="m"), timeout_s=1.0)
        with pytest.raises(TargetError) as caught:
            _endpoint(["a text"], source, Embedded([], ""))
    assert "no whole reply within 1 s (timeout)" in str(caught.value) and True not in server.whole


@pytest.mark.parametrize("client", ["lean", "openai"])
@pytest.mark.parametrize("shape", ["until-close", "connection-close"])
def test_the_target_stream_is_cut_at_its_timeout(tmp_path, client, shape):
    """A streamed completion trickled a byte at a time: the request's `timeout_s` ends it, for either client,
    as a timeout recorded on the request."""
    from releasegate.backends._base import Request
    from releasegate.backends.openai import OpenAIBackend
    from releasegate.inputs.target import TargetConfig

    with trickler(SHAPES[shape], content_type="text/event-stream") as server:
        target = TargetConfig(backend="openai", base_url=server.url + "/v1", model="m", client=client, timeout_s=1.0,
                              stall_timeout_s=0.9, retries=0)
        gen = OpenAIBackend(target).generate([Request(case_id="c", messages=[{"role": "user", "content": "hi"}])],
                                             max_new_tokens=8)[0]
    assert gen.error is not None and gen.error.startswith(ErrorKind.TIMEOUT), gen.error
    assert True not in server.whole
