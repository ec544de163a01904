"""Redaction happens in the data, before any format escapes it: a credential holding `" \\ & < > '`, echoed by
the server into every answer, is found in no artifact of the run (records, judgments of the report, report.json,
.md, .html, .junit.xml, .csv, the review queue, the job summary, stdout), neither as written nor escaped."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from conftest import run_subprocess, write_jsonl
from releasegate.redaction import REDACTED, add_secret, redact, redact_json, redact_values
from releasegate.testing import StubBehaviour, StubServer

MARK = "SENTINEL5e2b"
KEY = f"sk-{MARK}-key\" \\ & < > ' end"
BODY = f"b-{MARK}-body\" \\ & < > ' end"
ENV = {"RG_ESCAPED_KEY": KEY}


def echo(body: dict) -> str:
    """A server that repeats the credentials it was sent (the key, a secret body field) in its answer."""
    return f"no <b>luck</b> & 'quotes' here: {KEY} and {body['metadata']['client_secret']}"


def project(root: Path, port: int) -> Path:
    write_jsonl(root / "suite.jsonl", [{"id": f"c{i}", "messages": [{"role": "user", "content": f"hi {i}"}],
                                        "expected": "never", "tags": {"domain": "web"}} for i in range(3)])
    (root / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.9}\n"
                                      "review: {sample: {per_slice: 3}}\n")
    config = root / "releasegate.yaml"
    config.write_text(
        f"target:\n  backend: openai\n  base_url: http://127.0.0.1:{port}/v1\n  model: stub\n"
        "  api_key_env: RG_ESCAPED_KEY\n  concurrency: 1\n  retries: 0\n  timeout_s: 10\n"
        f"  extra_body:\n    metadata: {{client_secret: {json.dumps(BODY)}}}\n"
        "generation: {max_new_tokens: 8}\n"
        "suites: [{path: suite.jsonl, answer: {type: exact}}]\nrubric: rubric.yaml\n")
    return config


def forms(secret: str) -> list[str]:
    return [secret, json.dumps(secret)[1:-1], html.escape(secret), html.escape(secret, quote=False),
            secret.replace('"', '""'), repr(secret)[1:-1], MARK]


def test_an_escaped_secret_echoed_by_the_server_is_nowhere(tmp_path):
    summary = tmp_path / "summary.md"
    env = {**ENV, "GITHUB_STEP_SUMMARY": str(summary)}
    with StubServer(StubBehaviour(tokens=4, reply=echo)) as stub:
        config = project(tmp_path, stub.port)
        done = run_subprocess("check", "-c", config, "--run-id", "r", "--no-progress", "--json", cwd=tmp_path, env=env)
        bodies = list(stub.bodies)
    assert done.returncode == 1, done.stderr  # every answer is wrong: the gate fails, the run is whole
    assert bodies and all(b["metadata"]["client_secret"] == BODY for b in bodies)  # the secret did reach the server
    run = tmp_path / "reports" / "r"
    assert REDACTED in (run / "records.jsonl").read_text()  # the echo was recorded, the secret replaced
    outputs = [run_subprocess("review", "export", run, cwd=tmp_path),
               run_subprocess("report", run, "--format", "junit", "--junit-cases", "-o", tmp_path / "cases.xml",
                              cwd=tmp_path)]
    assert all(p.returncode == 0 for p in outputs), [p.stderr for p in outputs]
    inputs = {config, tmp_path / "suite.jsonl", tmp_path / "rubric.yaml"}  # the secret is in the config, rightly
    files = [f for f in sorted(tmp_path.rglob("*")) if f.is_file() and f not in inputs]
    names = {f.name for f in files}
    assert {"records.jsonl", "report.json", "report.md", "report.html", "report.junit.xml", "report.csv",
            "review_queue.csv", "cases.xml", "summary.md"} <= names, names
    for f in files:
        text = f.read_bytes().decode("utf-8", "replace")
        for form in forms(KEY) + forms(BODY):
            assert form not in text, (f.name, form)
    for stream in (done.stdout, done.stderr):
        assert MARK not in stream


def test_an_escaped_secret_echoed_by_the_judge_is_nowhere(tmp_path):
    """The judge's key, echoed in its replies (a reason, and an unparseable reply kept raw in judgments.jsonl)."""
    write_jsonl(tmp_path / "suite.jsonl", [{"id": f"c{i}", "messages": [{"role": "user", "content": f"hi {i}"}],
                                            "expected": "x"} for i in range(4)])
    write_jsonl(tmp_path / "drafts.jsonl", [{"id": f"c{i}", "output": f"draft {i}"} for i in range(4)])
    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {name: helpful, metric: accuracy, op: '>=', threshold: 0.5}\n"
                                          "judge: {min_agreement: 0.0, min_labels: 1}\n")

    def judge(body: dict) -> str:
        if "draft 1" in body["messages"][-1]["content"]:
            return f"I refuse & say {KEY}"  # no verdict: kept raw
        return json.dumps({"reason": f"ok <{KEY}>", "verdict": "pass"})

    with StubServer(StubBehaviour(tokens=2, reply=judge)) as stub:
        config = tmp_path / "releasegate.yaml"
        config.write_text("target: {backend: replay, responses: drafts.jsonl}\n"
                          f"judge:\n  base_url: http://127.0.0.1:{stub.port}/v1\n  model: judge\n  retries: 0\n"
                          "  api_key_env: RG_ESCAPED_KEY\n  criteria:\n    helpful: {instructions: The reply helps.}\n"
                          "suites:\n  - path: suite.jsonl\n    answer: {type: judge, criterion: helpful}\nrubric: rubric.yaml\n")
        done = run_subprocess("check", "-c", config, "--run-id", "r", "--no-progress", "--json", cwd=tmp_path, env=ENV)
    assert done.returncode in (0, 1, 3), done.stderr
    run = tmp_path / "reports" / "r"
    judgments = (run / "judgments.jsonl").read_text()
    assert judgments.count(REDACTED) >= 4  # every echo was kept, the key replaced
    for f in sorted(run.rglob("*")):
        if f.is_file():
            text = f.read_bytes().decode("utf-8", "replace")
            for form in forms(KEY):
                assert form not in text, (f.name, form)
    assert MARK not in done.stdout + done.stderr


# ---------------------------------------------------------------- the functions

@pytest.fixture
def registered():
    add_secret(KEY)
    return KEY


def test_values_are_replaced_in_the_data(registered):
    data = {"output": f"x {KEY} y", KEY: [KEY, 1, None], "n": 2}
    assert redact_values(data) == {"output": f"x {REDACTED} y", REDACTED: [REDACTED, 1, None], "n": 2}
    line = json.dumps({"output": KEY})
    assert KEY not in json.loads(redact_json(line))["output"] and REDACTED in redact_json(line)


def test_text_redaction_knows_the_escaped_forms(registered):
    for form in forms(KEY)[:-1]:
        assert redact(f"<td>{form}</td>") == f"<td>{REDACTED}</td>", form


def test_json_without_a_secret_is_kept_byte_for_byte(registered):
    line = '{"a":1.0,"b":"x"}'
    assert redact_json(line) is line
