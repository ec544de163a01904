"""A hostile OpenAI-compatible server against the lean client, on plain HTTP (kernel-stamped reads) and HTTPS
(asyncio's transport), on asyncio's loop and uvloop's: each reply that is no answer ends as one failed request with
a named error kind, never a traceback, a hang, a socket left open, nor latency figures that were not measured."""

from __future__ import annotations

import datetime
import gzip
import ipaddress
import json
import re
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from releasegate.backends._base import Request
from releasegate.backends._retry import _retry_after, backoff
from releasegate.backends._sse_client import LeanClient
from releasegate.backends.openai import OpenAIBackend
from releasegate.errors import ErrorKind
from releasegate.inputs.target import TargetConfig
from test_kernel_rx_attack import HANG_S, LOOPS, WHOLE, failure, run, server
from test_transport_cleanup import LARGE, held_until, no_socket_left_open

BROKEN = "StreamBroken: connection closed before the response was complete"
SCHEMES = ["http", "https"]
Handle = Callable[[socket.socket], None]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key."""
    folder = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture(params=LOOPS)
def event_loop_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("RELEASEGATE_EVENT_LOOP", request.param)
    return str(request.param)


@pytest.fixture(params=SCHEMES)
def hostile(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, certificate):
    """`hostile(handle)`: a server whose connections `handle` answers, over plain TCP or TLS (its certificate
    trusted through SSL_CERT_FILE, as a user's private CA would be); a context manager giving its base URL."""
    if request.param == "http":
        return server
    cert_path, key_path = certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert_path, key_path)

    def over_tls(handle: Handle) -> Iterator[str]:
        def wrapped(conn: socket.socket) -> None:
            conn.settimeout(HANG_S)
            with tls.wrap_socket(conn, server_side=True) as secure:
                secure.settimeout(None)
                handle(secure)

        return server(wrapped)

    return lambda handle: _https(over_tls(handle))


def _https(urls):
    class Swapped:
        def __enter__(self) -> str:
            return urls.__enter__().replace("http://", "https://")

        def __exit__(self, *exc: object) -> None:
            urls.__exit__(*exc)

    return Swapped()


# -- a request the server never reads, or stops reading (asyncio's transport for HTTPS) -------------------------
@pytest.mark.parametrize("loop", LOOPS)
def test_a_large_request_the_server_never_reads_is_a_stall_and_leaves_no_socket_open(capfd, hostile, loop):
    release = threading.Event()
    with no_socket_left_open(capfd), hostile(held_until(release)) as url:
        assert failure(url, loop, LARGE, stall_timeout=0.2) == (str(ErrorKind.STALL_TIMEOUT),
                                                                "StallTimeout: no data for 0.2 s")
        release.set()


@pytest.mark.parametrize("loop", LOOPS)
def test_a_fin_while_a_large_request_is_written_is_a_broken_stream_and_leaves_no_socket_open(capfd, request, hostile,
                                                                                            loop):
    if loop == "uvloop" and "https" in request.node.callspec.id:
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "uvloop's TLS layer, told of the server's FIN while a request is still being written, waits to flush "
            "that request (which the server never reads) and tells the protocol nothing: the request ends at the "
            "stall timeout as stall_timeout, the socket closed")))
    release = threading.Event()
    with no_socket_left_open(capfd), hostile(held_until(release, read_first=1, shut=True)) as url:
        kind, line = failure(url, loop, LARGE, stall_timeout=5)
        release.set()
    assert (kind, line) == (str(ErrorKind.CONNECTION_ERROR), BROKEN)


def answer_then_hold(release: threading.Event) -> Handle:
    """Answers one request, then reads nothing more (a TLS close_notify goes unanswered) until `release`."""

    def handle(conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(WHOLE)
        release.wait(HANG_S)

    return handle


@pytest.mark.parametrize("loop", LOOPS)
def test_a_pooled_connection_is_closed_at_the_runs_end_whatever_the_server_answers(capfd, hostile, loop):
    """The pool's idle connections are dropped when the client closes: a TLS one must not wait for the server's
    close_notify, which the loop's end would cut short (the socket left open)."""
    release = threading.Event()

    async def main(url: str) -> int:
        async with LeanClient(url, None, connect_timeout=HANG_S, stall_timeout=HANG_S) as client:
            await client.stream("/chat/completions", b"{}")
            return len(client._idle)

    with no_socket_left_open(capfd), hostile(answer_then_hold(release)) as url:
        assert run(lambda: main(url), loop) == 1
        release.set()


@pytest.mark.parametrize("loop", LOOPS)
def test_an_answer_before_a_large_request_was_read_is_kept_and_its_connection_not_pooled(capfd, request, hostile,
                                                                                        loop):
    if "https" in request.node.callspec.id:
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "a TLS transport's get_write_buffer_size() counts its own buffers only, not the TCP transport's under "
            "it that holds the unwritten request (uvloop's exposes no other): the connection is pooled, and the "
            "next request on it goes out behind the rest of this one")))
    release = threading.Event()

    async def main(url: str) -> tuple[list[str], int]:
        async with LeanClient(url, None, connect_timeout=HANG_S, stall_timeout=HANG_S) as client:
            lines = (await client.stream("/chat/completions", LARGE))[0]
            return lines, len(client._idle)

    with no_socket_left_open(capfd), hostile(held_until(release, read_first=1, answer=WHOLE)) as url:
        lines, pooled = run(lambda: main(url), loop)
        release.set()
    assert lines[-2:] == ["data: [DONE]", ""] and pooled == 0


# -- replies that are no answer: one failed request each, named; replies that are one: read as one ---------------
def event(content: str | None = None, finish: str | None = None, usage: object = None, choices: bool = True) -> bytes:
    body: dict[str, object] = {"choices": [{"index": 0, "delta": {"content": content} if content else {},
                                            "finish_reason": finish}] if choices else []}
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body).encode() + b"\n\n"


ANSWER = event("hello") + event(" world", "stop")
DONE = b"data: [DONE]\n\n"


def whole(body: bytes, status: bytes = b"200 OK", headers: bytes = b"") -> bytes:
    return b"HTTP/1.1 %s\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n%s\r\n%s" % (
        status, len(body), headers, body)


def with_usage(usage: object) -> bytes:
    return whole(ANSWER + event(usage=usage, choices=False) + DONE)


def each_request(reply: bytes | Callable[[bytes], bytes], keep: bool = True) -> Handle:
    """Reads each request whole (head and Content-Length body) and sends `reply` (or what `reply(head)` gives);
    closes after one unless `keep`."""

    def handle(conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        while True:
            head = b""
            while (line := reader.readline()) not in (b"\r\n", b""):
                head += line
            if not line:
                return
            length = re.search(rb"(?i)content-length: *(\d+)", head)
            reader.read(int(length.group(1)) if length else 0)
            conn.sendall(reply(head) if callable(reply) else reply)
            if not keep:
                return

    return handle


REPLIES = {
    # the server's usage, lying
    "usage negative": (with_usage({"prompt_tokens": 3, "completion_tokens": -2}), ErrorKind.BAD_RESPONSE),
    "usage huge": (with_usage({"prompt_tokens": 3, "completion_tokens": 10**15}), ErrorKind.BAD_RESPONSE),
    "usage float": (with_usage({"prompt_tokens": 3, "completion_tokens": 2.5}), ErrorKind.BAD_RESPONSE),
    "usage string": (with_usage({"prompt_tokens": 3, "completion_tokens": "2"}), ErrorKind.BAD_RESPONSE),
    "usage above the cap": (with_usage({"prompt_tokens": 3, "completion_tokens": 100}), ErrorKind.BAD_RESPONSE),
    "usage in every chunk": (whole(event("hello", usage={"completion_tokens": 1}) + event(" world", "stop", usage={
        "completion_tokens": 2}) + DONE), "usage"),
    "usage missing": (whole(ANSWER + DONE), "chunks"),
    # how the stream ends
    "[DONE] twice": (whole(ANSWER + event(usage={"completion_tokens": 2}, choices=False) + DONE + DONE), "usage"),
    "no [DONE], a finish_reason": (whole(ANSWER), "chunks"),
    "no [DONE], no finish_reason": (whole(event("hello") + event(" world")), ErrorKind.STREAM_INTERRUPTED),
    "data after [DONE]": (whole(ANSWER + DONE + event(" and more", "stop")), "chunks"),
    # SSE and HTTP framing
    "retry: and id: fields": (whole(b"retry: 10\nid: 5\nevent: message\n" + event("hello") + b"id: 6\n"
                                    + event(" world", "stop") + DONE), "chunks"),
    "CRLF line ends": (whole((ANSWER + DONE).replace(b"\n", b"\r\n")), "chunks"),
    "a 1 GB chunk, then close": (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n40000000\r\n" + ANSWER,
                                 ErrorKind.STREAM_INTERRUPTED),
    "gzip, never asked for": (whole(gzip.compress(ANSWER + DONE), headers=b"content-encoding: gzip\r\n"),
                              ErrorKind.BAD_RESPONSE),
    "HTTP/1.0, no Content-Length": (b"HTTP/1.0 200 OK\r\n\r\n" + ANSWER + DONE, "chunks"),
    "100 Continue first": (b"HTTP/1.1 100 Continue\r\n\r\n" + whole(ANSWER + DONE), "chunks"),
    "103 Early Hints first": (b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\ncontent-length: 0\r\n\r\n"
                              + whole(ANSWER + DONE), "chunks"),
    "101, never asked for": (b"HTTP/1.1 101 Switching Protocols\r\nupgrade: h2c\r\n\r\n" + whole(ANSWER + DONE),
                             ErrorKind.BAD_RESPONSE),
    "200 with an error document": (whole(b'{"error": {"message": "overloaded", "code": 503}}'), ErrorKind.BAD_RESPONSE),
    "redirect to another host": (whole(b"", b"307 Temporary Redirect", b"location: http://elsewhere.test/v1\r\n"),
                                 ErrorKind.REDIRECT),
}
"""Each reply, and what its request must be recorded as: an error kind, or for an answer ('hello world') where its
output token count came from ('usage' or 'chunks')."""


def generate(url: str, n: int = 2, **target: object) -> list:
    config = TargetConfig(**{"backend": "openai", "base_url": url, "model": "m", "client": "lean", "concurrency": 1,
                             "retries": 0, "timeout_s": HANG_S, "stall_timeout_s": HANG_S, **target})
    requests = [Request(case_id=f"c{i}", messages=[{"role": "user", "content": "hi"}]) for i in range(n)]
    return OpenAIBackend(config).generate(requests, max_new_tokens=8)


@pytest.mark.parametrize("name", list(REPLIES))
def test_each_hostile_reply_is_one_named_failure_or_the_answer_it_holds(capfd, hostile, event_loop_name, name):
    reply, expected = REPLIES[name]
    with no_socket_left_open(capfd), hostile(each_request(reply, keep=b"content-length" in reply)) as url:
        gens = generate(url, n=2)
    for gen in gens:
        if isinstance(expected, ErrorKind):
            assert (gen.error, gen.text, gen.timing.ttft_ms) == (expected, None, None), gen.error_message
            assert gen.error_message and "Traceback" not in gen.error_message
        else:
            assert (gen.error, gen.text, gen.tokens.source, gen.tokens.output) == (None, "hello world", expected, 2)
            assert 0 <= gen.timing.ttft_ms <= gen.timing.e2e_ms


# -- Retry-After: what a server may say, and what it may not ---------------------------------------------------
@pytest.mark.parametrize(("said", "waits"), [
    ("2", 2.0), ("99999999", 10.0), ("-5", None), ("nan", None), ("inf", None), ("", None), ("soon", None),
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date gone by: at once
    ("Fri, 31 Dec 9999 23:59:59 GMT", 10.0),  # a date far ahead: the cap
])
def test_a_retry_after_is_seconds_or_a_date_ahead_else_the_backoff_decides(said, waits):
    seconds = _retry_after(said)
    assert seconds is None or 0 <= seconds
    if waits is None:
        assert seconds is None and 0 < backoff(1, seconds) <= 4.0
    else:
        assert backoff(1, seconds) == waits


# -- the load phase against a server that never answers; retries ---------------------------------------------------
def read_then_hold(release: threading.Event) -> Handle:
    def handle(conn: socket.socket) -> None:
        conn.recv(65536)
        release.wait(HANG_S)

    return handle


def test_a_server_that_never_answers_fails_every_load_request_and_leaves_no_socket_open(capfd, hostile,
                                                                                      event_loop_name):
    """64 in flight, each request read and never answered: every request the closed loop took is one stall_timeout
    (none lost, none counted twice) until the watch calls the target dead and the loop takes no more; nothing is
    left open when the run ends."""
    release = threading.Event()
    with no_socket_left_open(capfd), hostile(read_then_hold(release)) as url:
        config = TargetConfig(backend="openai", base_url=url, model="m", client="lean", concurrency=4, retries=0,
                              timeout_s=HANG_S, stall_timeout_s=0.3)
        requests = [Request(case_id=f"c{i}", messages=[{"role": "user", "content": "hi"}]) for i in range(128)]
        backend = OpenAIBackend(config)
        run = backend.run_load(iter(requests), offsets=None, concurrency=64, max_new_tokens=8)
        release.set()
    taken = len(run.results)
    assert [r.case_id for r, _ in run.results] == [r.case_id for r in requests[:taken]]
    assert [gen.error for _, gen in run.results] == [ErrorKind.STALL_TIMEOUT] * taken and taken >= 64
    assert taken == 128 or "stall_timeout" in (backend.stop_reason() or "")
    assert all(gen.timing.ttft_ms is None and gen.text is None for _, gen in run.results)


def refuse_every_other(conn: socket.socket) -> None:
    """503 to the first request of each pair, the answer to the second (keep-alive)."""
    refused = whole(b'{"error": "busy"}', b"503 Service Unavailable", b"retry-after: 0\r\n")
    count = 0

    def reply(_: bytes) -> bytes:
        nonlocal count
        count += 1
        return refused if count % 2 else whole(ANSWER + DONE)

    each_request(reply)(conn)


def test_a_retried_requests_ttft_counts_from_its_first_send_and_its_own_attempt_apart(capfd, hostile,
                                                                                      event_loop_name):
    with no_socket_left_open(capfd), hostile(refuse_every_other) as url:
        gens = generate(url, n=3, retries=1)
    for gen in gens:
        t = gen.timing
        assert (gen.error, gen.text, t.attempts, t.retried_errors) == (None, "hello world", 2, [ErrorKind.HTTP_5XX])
        assert 0 <= t.ttft_last_attempt_ms <= t.ttft_ms <= t.e2e_ms
        assert 0 <= t.retry_wait_ms <= t.ttft_ms - t.ttft_last_attempt_ms + 1e-6
