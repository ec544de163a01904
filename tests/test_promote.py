"""Promotion of a PASS: the signed summary POSTed to a real loopback receiver (retried on 5xx, never after a 4xx,
never to a redirect's origin, the token never printed), and a model version in a real local MLflow registry
tagged with the verdict, rubric hash and report under an alias. A run that may not be released is never promoted."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import write_jsonl
from test_bless import WRONG, check, passing_project

TOKEN = "whk-secret-token-0042-do-not-print"


class Receiver:
    """A loopback webhook receiver: answers each POST with the next status of `statuses` (then 200)."""

    def __init__(self, statuses=(), location: str | None = None) -> None:
        self.statuses, self.location, self.bodies, self.headers = list(statuses), location, [], []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                outer.headers.append(dict(self.headers))
                status = outer.statuses.pop(0) if outer.statuses else 200
                self.send_response(status)
                if outer.location and status in (301, 302, 307, 308):
                    self.send_header("Location", outer.location)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def released(project, cli, tmp_path, monkeypatch):
    passing_project(project)
    run = check(cli, project, "ok")
    assert cli("attest", "--generate-key", tmp_path / "key")[0] == 0
    monkeypatch.setenv("HOOK_TOKEN", TOKEN)
    return run, tmp_path / "key"


def promote(cli, run, *args):
    return cli("promote", run, *map(str, args))


def test_the_signed_summary_reaches_the_webhook_after_a_5xx(released, cli, tmp_path):
    run, key = released
    with Receiver([503, 502]) as hook:
        code, out, err = promote(cli, run, "--webhook", hook.url, "--key", key, "--webhook-token-env", "HOOK_TOKEN",
                                 "--json")
    assert code == 0, err
    done = json.loads(out)
    assert done["webhook"]["status"] == 200 and done["webhook"]["attempts"] == 3 and len(hook.bodies) == 3
    body = hook.bodies[-1]
    assert body["summary"]["verdict"] == "PASS" and body["summary"]["rubric_sha256"]
    assert hook.headers[-1]["Authorization"] == f"Bearer {TOKEN}"
    assert len({h["Idempotency-Key"] for h in hook.headers}) == 1  # the same delivery, tried three times
    envelope = body["attestation"]  # the receiver can check it as a deploy does
    saved = tmp_path / "received.json"
    saved.write_text(json.dumps(envelope))
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["predicate"]["verdict"] == "PASS"
    code, _, err = cli("verify-attestation", saved, "--key", f"{key}.pub", "--artifact", run.parents[1] / "responses.jsonl")
    assert code == 1 and "subjects are not files" in err  # a replay run ships no model file: nothing to deploy
    assert TOKEN not in out + err


def test_a_4xx_is_not_retried_a_redirect_not_followed_and_the_token_never_shown(released, cli):
    run, key = released
    with Receiver([400]) as hook:
        code, out, err = promote(cli, run, "--webhook", hook.url, "--key", key, "--webhook-token-env", "HOOK_TOKEN")
    assert code == 4 and "HTTP 400" in err and "1 attempt" in err and len(hook.bodies) == 1
    assert TOKEN not in out + err
    with Receiver() as other, Receiver([302], location=None) as hook:
        hook.location = other.url
        code, out, err = promote(cli, run, "--webhook", hook.url, "--key", key, "--webhook-token-env", "HOOK_TOKEN")
    assert code == 4 and "redirect" in err.lower() and other.bodies == []
    assert TOKEN not in out + err
    userinfo = f"http://bot:{TOKEN}@127.0.0.1:9/hook"  # nothing listens on port 9: refused, retried, masked
    code, out, err = promote(cli, run, "--webhook", userinfo, "--key", key)
    assert code == 4 and "3 attempt" in err and TOKEN not in out + err


def test_only_a_releasable_run_is_promoted(project, cli, tmp_path):
    passing_project(project)
    write_jsonl(project / "responses.jsonl", WRONG)
    failed = check(cli, project, "bad", expect=1)
    assert cli("attest", "--generate-key", tmp_path / "key")[0] == 0
    with Receiver() as hook:
        code, _, err = promote(cli, failed, "--webhook", hook.url, "--key", tmp_path / "key")
    assert code == 1 and "not PASS" in err and hook.bodies == []
    assert promote(cli, failed)[0] == 2  # nothing to promote to
    code, _, err = promote(cli, failed, "--webhook", "http://127.0.0.1:9/")
    assert code == 2 and "--key" in err
    code, _, err = promote(cli, failed, "--webhook", "file:///etc/passwd", "--key", tmp_path / "key")
    assert code == 2 and "not an http(s) URL" in err


def test_a_model_version_in_a_real_mlflow_registry(released, cli, tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="the [mlflow] extra is not installed (pip install 'releasegate[mlflow]')")
    from mlflow import MlflowClient

    run, _ = released
    store = (tmp_path / "mlflow").as_uri()
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a local registry in files, as MLflow's own tests use
    code, out, err = promote(cli, run, "--mlflow-model", "support-bot", "--alias", "prod", "--mlflow-uri", store,
                             "--json")
    assert code == 0, err
    client = MlflowClient(tracking_uri=store, registry_uri=store)
    version = client.get_model_version_by_alias("support-bot", "prod")
    report = json.loads((run / "report.json").read_text())
    assert version.tags["releasegate.verdict"] == "PASS"
    assert version.tags["releasegate.rubric_sha256"] == report["judged_by"]["snapshot_sha256"]
    assert version.tags["releasegate.report"].endswith("report.json")
    code, out, err = promote(cli, run, "--mlflow-model", "support-bot", "--alias", "canary", "--mlflow-uri", store,
                             "--json")
    assert code == 0 and json.loads(out)["mlflow"]["version"] == str(version.version), err  # tagged again, not twice
    assert len(client.search_model_versions("name = 'support-bot'")) == 1
    assert str(client.get_model_version_by_alias("support-bot", "canary").version) == str(version.version)
    code, _, err = promote(cli, run, "--mlflow-model", "x' OR name != '", "--alias", "prod", "--mlflow-uri", store)
    assert code == 2


def test_a_webhook_is_shown_by_its_origin_only(released, cli):
    """A Slack or Discord webhook's secret is its path: stdout, --json and the error line show the origin alone."""
    run, key = released
    secret = "/services/T0AAAAAAA/B0BBBBBBB/xyzSECRETxyzSECRETxyz"
    with Receiver() as hook:
        origin = hook.url.rsplit("/", 1)[0]
        for extra in ((), ("--json",)):
            code, out, err = promote(cli, run, "--webhook", origin + secret, "--key", key, *extra)
            assert code == 0, err
            assert "SECRET" not in out + err and f"{origin}/…" in out, out
    code, out, err = promote(cli, run, "--webhook", "http://127.0.0.1:9" + secret, "--key", key)
    assert code == 4 and "SECRET" not in out + err and "http://127.0.0.1:9/…" in err, err
