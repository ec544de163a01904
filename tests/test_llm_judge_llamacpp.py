"""The LLM judge served by a real llama.cpp server: the demo model grades the reply drafts under a JSON schema
(llama.cpp turns `response_format` into a grammar), so every reply is a verdict or a classified judge error."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from releasegate.record.judge_journal import read_judgments
from releasegate.record.records import RunDir

pytestmark = pytest.mark.slow
LIMIT = 12


def test_a_llamacpp_judge_under_a_json_schema(llamacpp_server, cli, tmp_path):
    demo = ROOT / "suites" / "demo"
    # the demo model reads 256 tokens at most: a short system message and a template with the draft alone
    (tmp_path / "judge.j2").write_text("Reply: {{ output }}")
    (tmp_path / "rubric.yaml").write_text(
        "review: {required_domains: []}\ncriteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\n")
    (tmp_path / "releasegate.yaml").write_text(
        f"target: {{backend: replay, responses: {demo / 'reply_drafts.jsonl'}}}\n"
        f"judge:\n  base_url: {llamacpp_server.base_url}\n  model: {llamacpp_server.model}\n  concurrency: 4\n"
        f"  max_tokens: 120\n  system: Grade the reply.\n  prompt: judge.j2\n  tokenizer: {ROOT / 'models/demo/base'}\n"
        "  extra_body: {lora: [{id: 0, scale: 0.0}]}\n"
        "  criteria:\n    helpful_reply: {instructions: The reply answers the customer politely.}\n"
        f"suites:\n  - {{path: {demo / 'replies.jsonl'}, answer: {{type: judge, criterion: helpful_reply}}}}\n"
        "rubric: rubric.yaml\n")
    code, out, err = cli("check", "-c", tmp_path / "releasegate.yaml", "--run-id", "j", "--limit", LIMIT,
                         "--no-progress", "--json")
    assert "Traceback" not in err and out, err
    report = json.loads(out)
    run = RunDir(tmp_path / "reports" / "j")
    judgments = list(read_judgments(run).values())
    assert len(judgments) == LIMIT
    for j in judgments:  # each one a verdict with its reason, or a judge error with its class, never both
        assert (j.passed is None) == (j.error is not None)
        assert j.error in (None, "judge_unparseable")
        assert j.tokens.input and j.tokens.output and j.latency_ms is not None
    parsed = [j for j in judgments if j.error is None]
    assert len(parsed) >= LIMIT // 2  # the grammar holds the reply to the schema; a cut-off reply is the exception
    assert report["judge"]["judged"] == len(parsed) and report["judge"]["calls"] == LIMIT
    assert report["judge"]["tokens"]["output"] == sum(j.tokens.output for j in judgments)
    assert report["verdict"] != "PASS"  # no reviewer has calibrated this judge
