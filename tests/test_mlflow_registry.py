"""`promote --mlflow-model` against real local registries (a SQLite file, a folder) and against hostile MLflow
servers on loopback: the version names every weights file that passed (base and adapter of the real demo model)
with its sha256 and the report by a relative path, no tag holds a path of the machine; a registry that is down,
silent, keeps a version pending, sends a huge reply or a reply of another shape is exit 4 naming promote's bound
(never minutes, never 70); a store URI promote cannot use is one line, exit 2, with the fix; MLflow's log lines
carry no raw escape sequence."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import releasegate.pipeline.mlflow_registry as registry
from releasegate.pipeline.mlflow_registry import artifact_tags, store_problem
from test_attest import LENIENT, _check, _project
from test_promote import promote, released  # noqa: F401 - the fixture

pytest.importorskip("mlflow", reason="the [mlflow] extra is not installed (pip install 'releasegate[mlflow]')")

ESC = "\x1b]0;pwned\x07\x1b[31m"


# -- store URIs ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("uri, needle", [
    ("ftp://registry.example/x", "scheme 'ftp' is not one promote uses"),
    ("uc:catalog", "sqlite:///PATH or file:///PATH"),
    ("http://[::1", "not a URL"),
    ("file:///tmp/registry", "MLFLOW_ALLOW_FILE_STORE=true"),
])
def test_a_store_promote_cannot_use_is_one_line_with_the_fix(released, cli, monkeypatch, uri, needle):  # noqa: F811
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    run, _ = released
    code, out, err = promote(cli, run, "--mlflow-model", "bot", "--alias", "prod", "--mlflow-uri", uri)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and needle in err and "Traceback" not in err, err
    assert len(lines) <= 2 and "--mlflow-uri" in err  # the error and, where there is one, its hint


def test_a_registry_named_nowhere_is_refused_before_the_webhook_is_sent(released, cli, monkeypatch,  # noqa: F811
                                                                           tmp_path):
    """With no --mlflow-uri and no MLFLOW_TRACKING_URI, MLflow would register in a new ./mlflow.db that no
    deploy reads: refused in one line, exit 2, nothing sent to the webhook and no file made."""
    from test_promote import Receiver

    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
        monkeypatch.delenv(name, raising=False)
    run, key = released
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    with Receiver([200]) as hook:
        code, _, err = promote(cli, run, "--webhook", hook.url, "--key", key, "--mlflow-model", "bot", "--alias",
                               "prod")
    assert code == 2 and "--mlflow-uri" in err and "MLFLOW_TRACKING_URI" in err and "Traceback" not in err, err
    assert hook.bodies == [] and list((tmp_path / "cwd").iterdir()) == []


def test_sqlite_without_sqlalchemy_names_the_package(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sqlalchemy" else real(name, *a))
    assert "pip install 'mlflow'" in store_problem("sqlite:///mlflow.db")


# -- real local registries, the real demo model --------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    run = _check(_project(tmp_path_factory.mktemp("mlflow") / "p", LENIENT), "ok")
    assert json.loads((run / "report.json").read_text())["verdict"] == "PASS"
    return run


@pytest.mark.slow
@pytest.mark.parametrize("store", ["sqlite", "file"])
def test_the_version_names_every_artifact_that_passed(demo_run, cli, tmp_path, monkeypatch, store):
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # MLflow writes nothing where promote runs (it made a ./mlflow.db)
    uri = f"sqlite:///{tmp_path / 'registry.db'}" if store == "sqlite" else (tmp_path / "mlruns").as_uri()
    code, out, err = promote(cli, demo_run, "--mlflow-model", "contracts", "--alias", "prod", "--mlflow-uri", uri,
                             "--json")
    assert code == 0, err
    assert list((tmp_path / "cwd").iterdir()) == []
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # MLflow's file registry reads versions through the default store
    version = MlflowClient(tracking_uri=uri, registry_uri=uri).get_model_version_by_alias("contracts", "prod")
    tags = version.tags
    artifacts = [json.loads(v) for k, v in tags.items() if k.startswith("releasegate.artifact.")]
    models = demo_run.parent.parent / "models"
    on_disk = {("model" if part == "base" else part, f.name): hashlib.sha256(f.read_bytes()).hexdigest()
               for part in ("base", "adapter") for f in (models / part).iterdir() if f.suffix == ".safetensors"}
    named = {(a["role"], Path(a["name"]).name): a["sha256"] for a in artifacts}
    assert {role for role, _ in named} == {"model", "adapter"} and named == on_disk
    assert tags["releasegate.report"] == "ok/report.json" and tags["releasegate.verdict"] == "PASS"
    assert not any(str(tmp_path) in v or v.startswith("/") for v in tags.values()), tags
    assert json.loads(out)["summary"]["report"] == "ok/report.json"


def test_artifact_tags_keep_no_machine_path():
    manifest = {"inputs": [
        {"role": "model:weights", "path": "/home/ci/m/model.safetensors", "name": "/home/ci/m/model.safetensors",
         "sha256": "a" * 64},
        {"role": "gguf", "path": "/srv/x.gguf", "name": "x.gguf", "sha256": "b" * 64},
        {"role": "tokenizer", "path": "/srv/tok.json", "name": "tok.json", "sha256": "c" * 64},
        {"role": "adapter:weights", "path": "/srv/a.safetensors", "name": "adapter/a.safetensors", "sha256": None}]}
    tags = [json.loads(v) for v in artifact_tags(manifest).values()]
    assert tags == [{"name": "model.safetensors", "role": "model", "sha256": "a" * 64},
                    {"name": "x.gguf", "role": "gguf", "sha256": "b" * 64}]


# -- hostile registries ------------------------------------------------------------------------------------------
class Registry:
    """A loopback MLflow server of a given `mode`: 'pending' (a version that never becomes READY), 'huge' (2 MiB
    replies, with or without a Content-Length), 'shape' (replies of another shape), 'silent' (reads the request
    and never answers). `name` is what the registry calls the model."""

    def __init__(self, mode: str, name: str = "bot") -> None:
        self.mode, self.name, outer = mode, name, self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802
                outer.answer(self)

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.answer(self)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *a: None  # a client that cut a reply short is what some tests want
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.stop = threading.Event()
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        if self.mode == "silent":
            self.stop.wait(30)
            return
        path = handler.path.split("?")[0].rsplit("/", 2)[-2:]
        version = {"name": self.name, "version": "1", "status": "PENDING_REGISTRATION"}
        body: bytes = {
            ("registered-models", "get"): json.dumps({"registered_model": {"name": self.name}}),
            ("model-versions", "search"): json.dumps({"model_versions": []}),
            ("model-versions", "create"): json.dumps({"model_version": version}),
            ("model-versions", "get"): json.dumps({"model_version": version}),
        }.get(tuple(path), "{}").encode()
        if self.mode == "huge":
            body = b'{"registered_model": {"name": "' + b"x" * (2 << 20) + b'"}}'
        elif self.mode == "shape":
            body = b'{"registered_model": [1, 2], "model_versions": "no", "model_version": 7}'
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if self.mode == "huge-close":
            body = b'{"registered_model": {"name": "' + b"x" * (2 << 20) + b'"}}'
            handler.send_header("Connection", "close")
        else:
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def tight(monkeypatch):
    """promote's bounds made small, so that each runs out in a moment."""
    for name, value in (("REQUEST_TIMEOUT_S", 1), ("REQUEST_RETRIES", 1), ("CREATION_WAIT_S", 1),
                        ("REPLY_MAX_BYTES", 1 << 20), ("REGISTRY_DEADLINE_S", 60)):
        monkeypatch.setattr(registry, name, value)
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)


def _promote(cli, run, uri):
    return promote(cli, run, "--mlflow-model", "bot", "--alias", "prod", "--mlflow-uri", uri)


@pytest.mark.parametrize("mode, bound", [
    ("pending", "stayed pending past 1 s (promote's creation wait)"),
    ("silent", "no reply within 1 s, 2 tries (promote's request timeout and retries)"),
    ("huge", f"over {1 << 20} bytes (promote's bound on a reply)"),
    ("huge-close", f"over {1 << 20} bytes (promote's bound on a reply)"),
    ("shape", "MLflow registry"),
])
def test_a_hostile_registry_is_exit_4_naming_the_bound(released, cli, tight, mode, bound):  # noqa: F811
    run, _ = released
    with Registry(mode) as server:
        code, out, err = _promote(cli, run, server.url)
    assert code == 4 and bound in err and "Traceback" not in err, err


def test_a_registry_that_is_down_is_exit_4_after_its_tries(released, cli, tight):  # noqa: F811
    run, _ = released
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: every connect is refused
        code, out, err = _promote(cli, run, f"http://127.0.0.1:{port}")
    assert code == 4 and "unreachable after 2 tries (promote's retries)" in err, err


def test_the_whole_registration_has_a_deadline(released, cli, tight, monkeypatch):  # noqa: F811
    monkeypatch.setattr(registry, "REQUEST_TIMEOUT_S", 30)
    monkeypatch.setattr(registry, "REGISTRY_DEADLINE_S", 1)
    run, _ = released
    with Registry("silent") as server:
        code, out, err = _promote(cli, run, server.url)
    assert code == 4 and "not done within 1 s (promote's bound on a registration)" in err, err


def test_mlflows_log_lines_carry_no_escape_sequence(released, cli, tight):  # noqa: F811
    """The registry names the model with escape sequences; MLflow logs the name while it waits: the terminal
    gets them made visible, never raw."""
    run, _ = released
    with Registry("pending", name="bot" + ESC) as server:
        code, out, err = _promote(cli, run, server.url)
    assert code == 4 and "mlflow: Waiting up to 1 seconds" in err, err
    assert "\x1b" not in out + err and "\x07" not in err and "pwned" in err


def test_a_versions_source_is_the_model_that_answered_never_a_suites_folder(tmp_path):
    """The source MLflow shows: the target's model directory (never a hub dataset's folder listed before it, nor
    a leakage probe's base after it), else a served weights file (an endpoint's GGUF), else the run directory."""
    from types import SimpleNamespace

    sha = "0" * 64

    def source(directories, inputs=()):
        run = SimpleNamespace(path=tmp_path / "run", manifest={"directories": directories, "inputs": list(inputs)})
        return registry._source(run)

    model, base = tmp_path / "model", tmp_path / "leak-base"
    assert source([{"role": "suite", "path": str(tmp_path / "data")}, {"role": "model", "path": str(model)},
                   {"role": "model", "path": str(base)}]) == model.as_uri()
    gguf = {"role": "served:weights", "path": str(tmp_path / "m.gguf"), "sha256": sha}
    assert source([{"role": "suite", "path": str(tmp_path / "data")}], [gguf]) == (tmp_path / "m.gguf").as_uri()
    assert source([], [{"role": "config", "path": str(tmp_path / "c.yaml"), "sha256": sha}]) == \
        (tmp_path / "run").as_uri()
