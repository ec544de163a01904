"""`validate --probe` reaches every endpoint a config names (the target, the judge, the response-cache probe's
embeddings) and fails in seconds with one line naming which one and why; the llama.cpp launcher serves
/v1/embeddings with `--embeddings`, so the cache-probe setup of docs/cache-probe.md works as written."""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import llamacpp
from releasegate.testing import StubBehaviour, StubServer
from test_dead_server import one_line
from test_llm_judge import stub_judge
from test_openai_backend import project

NOT_SUPPORTED = {"error": {"code": 501, "message": "This server does not support embeddings. Start it with `--embeddings`",
                           "type": "not_supported_error"}}
"""What llama.cpp's server answers on /v1/embeddings when it was started without its embeddings option."""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def config_with(tmp_path: Path, target: str, *, judge: str | None = None, embeddings: str | None = None) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    extra = f"judge:\n{stub_judge(judge)}" if judge else ""
    if embeddings:
        extra += ("response_cache_probe:\n  mode: semantic\n  threshold: 0.9\n"
                  f"  embeddings: {{base_url: '{embeddings}', model: demo, timeout_s: 30}}\n")
    return project(tmp_path, target, load=extra)


class _NoEmbeddings(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps(NOT_SUPPORTED).encode()
        self.send_response(501)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_every_endpoint_reached_is_named_with_its_time(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = config_with(tmp_path, stub.base_url, judge=stub.base_url, embeddings=stub.base_url)
        code, out, err = cli("validate", "-c", config, "--probe")
        assert code == 0, err
        for name in ("target", "judge", "embeddings"):
            assert f"reached {name}: " in out
        code, out, err = cli("validate", "-c", config, "--probe", "--json")
    assert code == 0 and [e["name"] for e in json.loads(out)["endpoints"]] == ["target", "judge", "embeddings"]
    code, out, err = cli("validate", "-c", config)  # without --probe nothing is reached: the servers are gone
    assert code == 0 and "reached target" not in out


def test_an_unreachable_judge_is_named(tmp_path, cli):
    port = closed_port()
    with StubServer(StubBehaviour(tokens=4)) as stub:
        code, _, err = cli("validate", "-c", config_with(tmp_path, stub.base_url, judge=f"http://127.0.0.1:{port}/v1"),
                           "--probe")
    assert code == 4 and one_line(err).startswith(f"error: judge endpoint: cannot reach http://127.0.0.1:{port}/v1: ")


def test_an_unreachable_target_is_named(tmp_path, cli):
    port = closed_port()
    code, _, err = cli("validate", "-c", config_with(tmp_path, f"http://127.0.0.1:{port}/v1"), "--probe")
    assert code == 4 and one_line(err).startswith(f"error: target endpoint: cannot reach http://127.0.0.1:{port}/v1: ")


def test_a_server_without_embeddings_is_named_with_what_it_said(tmp_path, cli):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoEmbeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with StubServer(StubBehaviour(tokens=4)) as stub:
            code, _, err = cli("validate", "-c", config_with(tmp_path, stub.base_url, embeddings=url), "--probe")
    finally:
        server.shutdown()
        server.server_close()
    line = one_line(err)
    assert code == 4 and line.startswith(f"error: embeddings endpoint: the embeddings endpoint {url}/embeddings failed: ")
    assert "HTTP 501: This server does not support embeddings. Start it with `--embeddings`" in line


def test_the_launcher_takes_embeddings():
    from releasegate.export import llamacpp as launcher

    assert launcher._parser().parse_args(["--gguf", sys.executable, "--embeddings"]).embeddings
    assert not launcher._parser().parse_args(["--gguf", sys.executable]).embeddings


@pytest.mark.slow
def test_llamacpp_serves_embeddings_only_when_told_and_the_probe_says_which(tmp_path, cli):
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    pytest.importorskip("gguf", reason="gguf (pip install gguf) not installed")
    if not llamacpp.demo_available():
        pytest.skip(f"demo model not built: {llamacpp.DEMO}")
    from releasegate.export.llamacpp import launch_server

    model, _ = llamacpp.export_demo(tmp_path / "gguf", adapters=())
    for embeddings in (False, True):
        server = launch_server(model, n_parallel=1, embeddings=embeddings, log_path=tmp_path / f"{embeddings}.log")
        try:
            config = config_with(tmp_path / str(embeddings), server.base_url, embeddings=server.base_url)
            code, out, err = cli("validate", "-c", config, "--probe")
        finally:
            server.stop()
        if embeddings:  # the documented setup: one server answers completions and embeddings
            assert code == 0 and "reached embeddings: demo at " in out, err
        else:
            line = one_line(err)
            assert code == 4 and line.startswith("error: embeddings endpoint: ") and "--embeddings" in line
