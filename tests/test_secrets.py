"""Credentials never reach anything releasegate writes: run directory, response cache, job summary, stdout, stderr.

A sentinel marker is put in every place a config can carry a credential (the API key's variable, userinfo and a
query token in base_url, a header read from the environment, a literal secret header, a secret extra_body field);
`releasegate check` runs as a user runs it (a separate process) against a stub endpoint, and against no endpoint.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import run_subprocess, write_jsonl
from releasegate.inputs.config import load_config
from releasegate.redaction import REDACTED, is_secret_name, mask_url, redact_error, url_secrets
from releasegate.testing import StubBehaviour, StubServer

MARK = "SENTINEL7f3a"
KEY = f"sk-{MARK}-apikey-0001"
PASSWORD = f"pw-{MARK}-userinfo-0002"
QUERY = f"q-{MARK}-querytoken-0003"
HEADER = f"h-{MARK}-envheader-0004"
LITERAL = f"l-{MARK}-literalheader-0005"
BODY = f"b-{MARK}-extrabody-0006"
ENV = {"RG_SECRET_TEST_KEY": KEY, "RG_SECRET_TEST_HEADER": HEADER}

RUBRIC = 'criteria:\n  - {metric: error_rate, op: "<=", threshold: 0.0}\n'


def make_project(tmp_path: Path, host: str, *, client: str = "lean", cases: int = 3) -> Path:
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"} for i in range(cases)
    ])
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    config = tmp_path / "releasegate.yaml"
    config.write_text(
        "# the gateway wants a key header, basic auth and a signed query\n"
        "target:\n"
        "  backend: openai\n"
        f"  base_url: http://rg-user:{PASSWORD}@{host}/v1?api-version=2024-06-01&sig={QUERY}\n"
        "  model: stub\n"
        f"  client: {client}\n"
        "  api_key_env: RG_SECRET_TEST_KEY\n"
        "  concurrency: 2\n  retries: 0\n  timeout_s: 10\n  connect_timeout_s: 2\n"
        "  headers:\n"
        "    X-Gateway-Key: {env: RG_SECRET_TEST_HEADER}\n"
        f"    X-Api-Key: {LITERAL}\n"
        "    X-Team: ml-platform\n"
        "  extra_body:\n"
        "    repeat_penalty: 1.0\n"
        f"    metadata: {{user: rg, client_secret: {BODY}}}\n"
        "generation: {max_new_tokens: 8}\n"
        "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\n"
        "rubric: rubric.yaml\n"
        "cache: {path: cache/responses.sqlite}\n"
    )
    return config


def forms(secret: str) -> list[bytes]:
    return [secret.encode(), base64.b64encode(secret.encode())]


def assert_nowhere(paths: list[Path], *texts: str) -> None:
    """No sentinel (nor the Basic-auth token holding the password) in any file under `paths` or in `texts`."""
    basic = base64.b64encode(f"rg-user:{PASSWORD}".encode())
    files = [f for p in paths if p.exists() for f in ([p] if p.is_file() else sorted(p.rglob("*"))) if f.is_file()]
    assert files
    for f in files:
        data = f.read_bytes()
        assert MARK.encode() not in data and basic not in data, f
    for text in texts:
        assert MARK not in text and basic.decode() not in text, text


def check(config: Path, summary: Path, *extra: str, run_id: str = "r"):
    env = {**ENV, "GITHUB_STEP_SUMMARY": str(summary)}
    return run_subprocess("check", "-c", config, "--run-id", run_id, "--no-progress", "--allow-pending", *extra,
                          cwd=config.parent, env=env)


# -- the whole run ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("client", ["lean", "openai"])
def test_no_credential_in_any_artifact_or_stream(tmp_path, client):
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = make_project(tmp_path, f"127.0.0.1:{stub.port}", client=client)
        summary = tmp_path / "summary.md"
        done = check(config, summary)
        again = check(config, summary, "--json", run_id="r2")  # every answer from the cache, the report on stdout
        bodies = list(stub.bodies)
    assert done.returncode == 0, done.stderr
    # every answer from the cache, each carrying the request that produced it: the error rate is that session's
    assert again.returncode == 0 and json.loads(again.stdout)["verdict"] == "PASS", again.stderr
    assert len(bodies) == 3  # the second run sent nothing
    assert bodies and all(b["metadata"]["client_secret"] == BODY for b in bodies)  # the secret still reaches the server
    run = tmp_path / "reports" / "r"
    for name in ("run.json", "manifest.json", "config.yaml", "records.jsonl", "report.json", "report.md", "report.html",
                 "report.junit.xml"):
        assert (run / name).is_file(), name
    info = json.loads((run / "run.json").read_text())
    assert info["target"] == f"stub at http://REDACTED@127.0.0.1:{stub.port}/v1?api-version=2024-06-01&sig={REDACTED} (chat)"
    report = run_subprocess("report", run, "--format", "md", cwd=tmp_path)  # a later process that never loaded the config
    assert report.returncode == 0 and "REDACTED@" in report.stdout and f"127.0.0.1:{stub.port}/v1" in report.stdout
    assert_nowhere([tmp_path / "reports", tmp_path / "cache", summary], done.stdout, done.stderr, again.stdout, again.stderr,
                   report.stdout, report.stderr)
    assert (tmp_path / "cache" / "responses.sqlite").is_file() and summary.read_text().strip()


def test_the_snapshot_is_masked_and_still_loads(tmp_path):
    with StubServer(StubBehaviour(tokens=2)) as stub:
        config = make_project(tmp_path, f"127.0.0.1:{stub.port}")
        done = check(config, tmp_path / "summary.md")
    assert done.returncode == 0, done.stderr
    snapshot = tmp_path / "reports" / "r" / "config.yaml"
    loaded = load_config(snapshot, base_dir=tmp_path)
    assert loaded.target.headers == {"X-Gateway-Key": {"env": "RG_SECRET_TEST_HEADER"}, "X-Api-Key": REDACTED,
                                     "X-Team": "ml-platform"}
    assert loaded.target.extra_body == {"repeat_penalty": 1.0, "metadata": {"user": "rg", "client_secret": REDACTED}}
    assert loaded.target.base_url.startswith("http://REDACTED@127.0.0.1:")
    assert loaded.target.model == "stub" and loaded.target.api_key_env == "RG_SECRET_TEST_KEY"
    # the original config's credentials come back when the snapshot is read for the run it was made from
    restored = load_config(snapshot, base_dir=tmp_path, secrets_from=config)
    assert restored.target.extra_body["metadata"]["client_secret"] == BODY and PASSWORD in restored.target.base_url


@pytest.mark.parametrize("client", ["lean", "openai"])
def test_unreachable_endpoint_error_names_no_credential(tmp_path, client):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    config = make_project(tmp_path, f"127.0.0.1:{port}", client=client)
    done = check(config, tmp_path / "summary.md")
    assert done.returncode == 4, done.stderr
    assert f"127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr
    assert_nowhere([tmp_path / "reports"], done.stdout, done.stderr)


# -- what reaches the server -----------------------------------------------------------------------------------

class _Recorder(BaseHTTPRequestHandler):
    """Answers GET with a model list and POST with a short SSE stream; records path and headers of each."""

    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, dict[str, str]]] = []

    def log_message(self, *args) -> None:
        pass

    def _answer(self, content_type: str, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self.seen.append(("GET", self.path, dict(self.headers.items())))
        self._answer("application/json", b'{"object": "list", "data": [{"id": "stub", "object": "model"}]}')

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.seen.append(("POST", self.path, dict(self.headers.items())))
        events = [
            {"choices": [{"index": 0, "delta": {"content": "tok"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
        ]
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self._answer("text/event-stream", body.encode())


@pytest.fixture
def recorder():
    handler = type("Recorder", (_Recorder,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, handler.seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("client", ["lean", "openai"])
def test_headers_userinfo_and_query_reach_the_server(tmp_path, recorder, client):
    server, seen = recorder
    config = make_project(tmp_path, f"127.0.0.1:{server.server_address[1]}", client=client)
    done = check(config, tmp_path / "summary.md")
    assert done.returncode == 0, done.stderr
    posts = [(path, {k.lower(): v for k, v in headers.items()}) for method, path, headers in seen if method == "POST"]
    assert len(posts) == 3
    basic = "Basic " + base64.b64encode(f"rg-user:{PASSWORD}".encode()).decode()
    for path, headers in posts:
        assert path == f"/v1/chat/completions?api-version=2024-06-01&sig={QUERY}"
        assert headers["x-gateway-key"] == HEADER and headers["x-api-key"] == LITERAL
        assert headers["x-team"] == "ml-platform"
        assert headers["authorization"] == basic  # the URL's userinfo replaces the key's Bearer
    assert_nowhere([tmp_path / "reports"], done.stdout, done.stderr)


def test_an_authorization_header_replaces_the_bearer_key(tmp_path, recorder):
    server, seen = recorder
    config = make_project(tmp_path, f"127.0.0.1:{server.server_address[1]}")
    text = config.read_text().replace(f"rg-user:{PASSWORD}@", "").replace(
        "    X-Team: ml-platform\n", "    X-Team: ml-platform\n    authorization: {env: RG_SECRET_TEST_HEADER}\n")
    config.write_text(text)
    assert check(config, tmp_path / "summary.md").returncode == 0
    posts = [{k.lower(): v for k, v in h.items()} for m, _, h in seen if m == "POST"]
    assert posts and all(h["authorization"] == HEADER for h in posts)
    (tmp_path / "plain").mkdir()
    plain = make_project(tmp_path / "plain", f"127.0.0.1:{server.server_address[1]}")
    plain.write_text(plain.read_text().replace(f"rg-user:{PASSWORD}@", ""))
    seen.clear()
    assert check(plain, tmp_path / "summary.md").returncode == 0
    assert [h.get("Authorization") for m, _, h in seen if m == "POST"] == [f"Bearer {KEY}"] * 3


# -- config errors ---------------------------------------------------------------------------------------------

def test_an_unset_header_variable_is_an_input_error(tmp_path):
    with StubServer() as stub:
        config = make_project(tmp_path, f"127.0.0.1:{stub.port}", cases=1)
        done = run_subprocess("check", "-c", config, "--no-progress", cwd=tmp_path, env={"RG_SECRET_TEST_KEY": KEY})
    assert done.returncode == 2 and "RG_SECRET_TEST_HEADER" in done.stderr
    assert MARK not in done.stderr + done.stdout


@pytest.mark.parametrize("headers, message", [
    ("{X-Key: {envv: A}}", "headers"),
    ("{X-Key: {env: 'not a name'}}", "headers"),
    ("{'Bad Name': x}", "headers"),
    ("{Content-Length: '3'}", "set by releasegate"),
])
def test_bad_headers_are_refused(project, cli, headers, message):
    config = project / "releasegate.yaml"
    config.write_text(config.read_text().replace("  backend: replay\n", f"  backend: replay\n  headers: {headers}\n"))
    code, _, err = cli("validate", "-c", config)
    assert code == 2 and message in err, err


def test_validation_errors_quote_no_credential(project, cli):
    config = project / "releasegate.yaml"
    secret = f"x-{MARK}-header-number"
    config.write_text(config.read_text().replace("  backend: replay\n",
                                                 f"  backend: replay\n  headers: {{Authorization: [{secret}]}}\n"))
    code, _, err = cli("validate", "-c", config)
    assert code == 2 and MARK not in err


# -- the rules -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, secret", [
    ("Authorization", True), ("X-Api-Key", True), ("api-key", True), ("apiKey", True), ("access_token", True),
    ("client_secret", True), ("password", True), ("sig", True), ("X-Amz-Signature", True), ("Cookie", True),
    ("Ocp-Apim-Subscription-Key", True), ("hfToken", True),
    ("max_tokens", False), ("stop_token", False), ("stop_token_ids", False), ("prompt_cache_key", False),
    ("repeat_penalty", False), ("lora", False), ("X-Team", False), ("monkey", False),
])
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


def test_urls_are_masked_and_still_parse():
    url = f"https://bot:{PASSWORD}@gw.example.invalid:8443/v1?api-version=1&token={QUERY}&tenant=acme#access_token=x1"
    masked = mask_url(url)
    assert masked == (f"https://REDACTED@gw.example.invalid:8443/v1?api-version=1&token={REDACTED}&tenant={REDACTED}"
                      f"#access_token={REDACTED}")
    assert mask_url(masked) == masked
    assert {PASSWORD, QUERY, "acme", "x1"} <= set(url_secrets(url))
    assert mask_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    line = redact_error(f"cannot reach {url}: refused")
    assert PASSWORD not in line and QUERY not in line and "gw.example.invalid:8443" in line
