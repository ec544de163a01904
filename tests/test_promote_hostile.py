"""`promote` against hostile receivers and stores: a webhook that answers with a malformed or oversized head, a
huge body after a 2xx, garbage instead of HTTP, or a redirect to itself; an MLflow store path that is not an MLflow
registry (a directory, a FIFO, a file that is no SQLite database, releasegate's own history database, a folder that
does not exist). Each ends in one line with its exit code (4 for a receiver, 2 for a store the user named wrong),
never a traceback, never 70, never a hang, and the webhook's secret path is never shown."""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import releasegate.pipeline.promote as promote_module
from releasegate.border.http import Limits
from test_promote import Receiver, promote, released  # noqa: F401 - the fixture

SECRET = "/hooks/T0HOSTILE/pathSECRET"


class RawReceiver:
    """A loopback server that reads the request's head and answers with `reply` bytes, then closes."""

    def __init__(self, reply: bytes, *then: bytes) -> None:
        self.replies, self.requests, self.stopping = [reply, *then], 0, False
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.stopping:
                conn.close()
                return
            with conn:
                conn.settimeout(5)
                try:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        piece = conn.recv(65536)
                        if not piece:
                            break
                        data += piece
                    self.requests += 1
                    reply = self.replies[min(self.requests, len(self.replies)) - 1]
                    if reply == DRIP:  # an interim reply every 50 ms for 10 s: a head that never ends
                        for _ in range(200):
                            if self.stopping:
                                break
                            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                            time.sleep(0.05)
                        continue
                    conn.sendall(reply)
                except OSError:
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stopping = True
        socket.create_connection(self.sock.getsockname(), timeout=5).close()  # wakes the accept()
        self.thread.join(10)
        self.sock.close()


DRIP = b"drip"


@pytest.fixture
def quick(monkeypatch):
    """promote's webhook bounds made short (the same code paths; a test of seconds, not of a minute)."""
    monkeypatch.setattr(promote_module, "_WEBHOOK_LIMITS", Limits(deadline_s=3.0, read_timeout_s=2.0, max_bytes=1 << 20))
    monkeypatch.setattr(promote_module, "_BACKOFF_S", 0.0)


def _one_line(code: int, out: str, err: str, expect: int) -> None:
    assert code == expect, (code, out, err)
    assert "Traceback" not in err and "internal error" not in err and "SECRET" not in out + err, err


HOSTILE_HEADS = {
    "too many headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(200)) + b"\r\n",
    "a header line of 100 kB": b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 100_000 + b"\r\n\r\n",
    "a status line that is not HTTP": b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
    "a status that is not a number": b"HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n",
    "escape sequences in the reason": b"HTTP/1.1 500 \x1b]0;pwned\x07\x1b[31mboom\r\nContent-Length: 0\r\n\r\n",
    "nothing at all": b"",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_HEADS))
def test_a_hostile_reply_head_is_exit_4_in_one_line(released, cli, quick, name):  # noqa: F811
    run, key = released
    with RawReceiver(HOSTILE_HEADS[name]) as hook:
        code, out, err = promote(cli, run, "--webhook", hook.url + SECRET, "--key", key)
    _one_line(code, out, err, 4)
    assert "\x1b" not in out + err and hook.url in err, err
    assert hook.requests >= 1


def test_a_2xx_with_a_huge_body_is_delivered_and_the_body_not_read(released, cli, quick):  # noqa: F811
    """The receiver took the promotion (2xx); what it says after is not promote's to read: a declared 10 GB body
    is not read (nor waited for), and the delivery is not sent again (a second deploy)."""
    run, key = released
    with RawReceiver(b"HTTP/1.1 202 Accepted\r\nContent-Length: 10000000000\r\n\r\n" + b"x" * 65536) as hook:
        code, out, err = promote(cli, run, "--webhook", hook.url + SECRET, "--key", key)
    _one_line(code, out, err, 0)
    assert hook.requests == 1 and "answered 202" in out


def test_interim_replies_that_never_end_are_cut_at_the_deadline(released, cli, quick, monkeypatch):  # noqa: F811
    """`100 Continue` after `100 Continue`: http.client skips each and reads on; the deadline ends the head."""
    monkeypatch.setattr(promote_module, "WEBHOOK_ATTEMPTS", 1)
    run, key = released
    with RawReceiver(DRIP) as hook:
        code, out, err = promote(cli, run, "--webhook", hook.url + SECRET, "--key", key)
    _one_line(code, out, err, 4)
    assert "no whole reply within 3 s" in err, err


def test_a_5xx_with_a_huge_body_is_tried_again_as_any_5xx(released, cli, quick):  # noqa: F811
    run, key = released
    huge_503 = b"HTTP/1.1 503 Busy\r\nContent-Length: 10000000000\r\n\r\n"
    with RawReceiver(huge_503, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}") as hook:
        code, out, err = promote(cli, run, "--webhook", hook.url + SECRET, "--key", key)
    _one_line(code, out, err, 0)
    assert hook.requests == 2 and "answered 200 (attempt 2)" in out


def test_a_redirect_to_itself_is_not_followed(released, cli, quick):  # noqa: F811
    run, key = released
    with Receiver([307, 307, 307, 307]) as hook:
        hook.location = hook.url + SECRET
        code, out, err = promote(cli, run, "--webhook", hook.url + SECRET, "--key", key)
    _one_line(code, out, err, 4)
    assert len(hook.bodies) == 1 and "redirect" in err.lower()


# -- MLflow store paths that are no MLflow registry -----------------------------------------------------------------
def _fifo(tmp_path):
    path = tmp_path / "registry.db"
    os.mkfifo(path)
    return path


def _not_sqlite(tmp_path):
    path = tmp_path / "registry.db"
    path.write_text('{"this": "is report.json"}')
    return path


def _other_database(tmp_path):
    path = tmp_path / "history.sqlite"  # releasegate's own index, or any application's database
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, verdict TEXT)")
        db.execute("INSERT INTO runs VALUES ('r1', 'PASS')")
    db.close()
    return path


def _escaped_dir(tmp_path):
    path = tmp_path / "reg\x1b]0;pwned\x07\x1b[31mistry"
    path.mkdir()
    return path


STORES = {
    "a directory": (lambda tmp: tmp, "a directory"),
    "a FIFO": (_fifo, "not a regular file"),
    "a file that is no SQLite database": (_not_sqlite, "not a SQLite database"),
    "another application's database": (_other_database, "not an MLflow registry"),
    "memory": (lambda tmp: Path(":memory:"), "in memory"),
    "a directory named with escape sequences": (lambda tmp: _escaped_dir(tmp), "a directory"),
}


@pytest.mark.parametrize("name", sorted(STORES))
def test_a_sqlite_store_that_is_no_mlflow_registry_is_exit_2_naming_it(released, cli, tmp_path, name):  # noqa: F811
    pytest.importorskip("mlflow", reason="the [mlflow] extra is not installed (pip install 'releasegate[mlflow]')")
    run, _ = released
    make, needle = STORES[name]
    (tmp_path / "store").mkdir()
    path = make(tmp_path / "store")
    before = path.read_bytes() if path.is_file() else None
    uri = f"sqlite:///{path}"
    code, out, err = promote(cli, run, "--mlflow-model", "bot", "--alias", "prod", "--mlflow-uri", uri)
    _one_line(code, out, err, 2)
    assert needle in err and "--mlflow-uri" in err and "\x1b" not in err, err
    if before is not None:
        assert path.read_bytes() == before  # nothing written into another application's file


@pytest.mark.parametrize("what", ["a file", "a FIFO"])
def test_a_file_store_that_is_no_folder_is_exit_2_naming_it(released, cli, tmp_path, monkeypatch, what):  # noqa: F811
    pytest.importorskip("mlflow", reason="the [mlflow] extra is not installed (pip install 'releasegate[mlflow]')")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    run, _ = released
    path = tmp_path / "mlruns"
    if what == "a file":
        path.write_text("not a folder")
    else:
        os.mkfifo(path)
    code, out, err = promote(cli, run, "--mlflow-model", "bot", "--alias", "prod", "--mlflow-uri", path.as_uri())
    _one_line(code, out, err, 2)
    assert "not a folder" in err and "--mlflow-uri" in err, err


# -- a served file changed after the run ----------------------------------------------------------------------------
def _served_project(root, cli):
    """A replayed run whose server's GGUF is declared (target.served_files), passing; a key to sign with."""
    from conftest import write_jsonl

    write_jsonl(root / "suite.jsonl", [{"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}],
                                        "expected": f"a{i}", "tags": {"domain": "billing"}} for i in range(4)])
    write_jsonl(root / "replies.jsonl", [{"id": f"c{i}", "output": f"a{i}"} for i in range(4)])
    (root / "support.gguf").write_bytes(b"GGUF" + bytes(range(256)) * 8)
    (root / "rubric.yaml").write_text("review: {required_domains: []}\n"
                                      "criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    (root / "releasegate.yaml").write_text(
        "target: {backend: replay, responses: replies.jsonl, served_files: [support.gguf]}\n"
        "suites:\n  - {path: suite.jsonl, answer: {type: exact}}\nrubric: rubric.yaml\n")
    code, _, err = cli("check", "-c", root / "releasegate.yaml", "--run-id", "r", "--no-progress")
    assert code == 0, err
    assert cli("attest", "--generate-key", root / "key")[0] == 0
    return root / "reports" / "r"


def test_a_served_file_changed_after_the_run_is_neither_attested_nor_promoted(tmp_path, cli):
    """The GGUF the run declared is changed after it (one byte, the same size: another commit, a server reloaded
    with another file): attest, bless and promote each refuse in one line naming it, and nothing is sent."""
    run = _served_project(tmp_path, cli)
    gguf = tmp_path / "support.gguf"
    data = bytearray(gguf.read_bytes())
    data[-1] ^= 1
    gguf.write_bytes(bytes(data))
    code, out, err = cli("attest", run, "--key", tmp_path / "key", "-o", tmp_path / "r.intoto.json")
    _one_line(code, out, err, 1)
    assert "support.gguf" in err and not (tmp_path / "r.intoto.json").exists(), err
    code, out, err = cli("bless", run, "--as", "production", "--reason", "r")
    _one_line(code, out, err, 1)
    with Receiver() as hook:
        code, out, err = promote(cli, run, "--webhook", hook.url + SECRET, "--key", tmp_path / "key")
    _one_line(code, out, err, 1)
    assert hook.bodies == [] and "support.gguf" in err
