"""The prefix-cache probe: warm vs cold TTFT for requests sharing a long system prompt, on the real llama.cpp
server (its slot prompt cache, `cache_prompt`), and how the gate treats a probe that did not run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import llamacpp
from conftest import ROOT
from releasegate.cli import main
from test_false_pass import Run, _healthy, lenient

# about 110 prompt tokens with the demo's tokenizer: with the chat template, a ticket and 32 new tokens it fits a
# 256-token slot; prefilling it cold takes the 1-thread server some 15 ms, warm it is all but skipped
SYSTEM = " ".join(f"Rule {i}: classify the ticket carefully." for i in range(6))


def project(tmp: Path, target: str, extra: str) -> Path:
    (tmp / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0}\n"
                                     "review: {required_domains: []}\n")
    suite = tmp / "tickets8.jsonl"  # a suite of 8 run whole (a suite's limit: is a cut: never a PASS)
    suite.write_text("".join((ROOT / "suites/demo/tickets.jsonl").read_text().splitlines(keepends=True)[:8]))
    config = tmp / "c.yaml"
    config.write_text(f"target:\n{target}generation: {{max_new_tokens: 32}}\n"
                      f"suites:\n  - {{path: {suite}, "
                      "answer: {type: json_fields, fields: [intent]}}\n"
                      f"rubric: rubric.yaml\n{extra}")
    return config


@pytest.mark.slow
def test_warm_prefix_is_served_from_the_cache_and_sooner(llamacpp_server, cli, tmp_path):
    target = f"  backend: openai\n  base_url: {llamacpp_server.base_url}\n  model: {llamacpp_server.model}\n"
    config = project(tmp_path, target, f"prefix_cache: {{system: {json.dumps(SYSTEM)}, requests: 8}}\n")
    code, out, _ = cli("check", "-c", config, "--run-id", "pc", "--no-progress", "--json")
    report = json.loads(out)
    probe = report["prefix_cache"]
    warm, cold = probe["warm"], probe["cold"]
    assert code == 0 and probe["pairs"] == 8 and warm["n"] == cold["n"] == 8
    # the server says which requests took the shared prompt from its cache: not a timing, a count
    system_tokens = len(llamacpp.post_json(llamacpp_server.root_url + "/tokenize", {"content": SYSTEM})["tokens"])
    assert system_tokens > 80
    assert warm["cached_tokens_mean"] >= system_tokens and cold["cached_tokens_mean"] < 10
    # ... and it shows in TTFT (medians of 8 alternating pairs, some 10x apart: an ordering, not a threshold)
    assert warm["ttft_ms_p50"] < cold["ttft_ms_p50"] and probe["saved_ms_p50"] > 0
    run = tmp_path / "reports" / "pc"
    records = [json.loads(line) for line in (run / "prefix_cache.jsonl").read_text().splitlines()]
    assert sorted(r["tags"]["cache"] for r in records) == ["cold"] * 8 + ["warm"] * 8
    assert json.loads((run / "run.json").read_text())["prefix_cache"] == probe
    assert "## Prefix cache" in (run / "report.md").read_text()
    assert "Prefix cache: warm vs cold" in (run / "report.html").read_text()
    # the probe's requests are no quality cases and no load phase
    assert report["counts"]["cases"] == 8 and "load" not in report["counts"]["phases"]


@pytest.mark.slow
def test_the_response_cache_never_answers_the_probe(llamacpp_server, cli, tmp_path):
    # the response cache (cache:, outputs reused across runs) and the server's prompt cache are two things: a
    # rerun takes its quality answers from the first, and still sends every probe request to the server
    target = f"  backend: openai\n  base_url: {llamacpp_server.base_url}\n  model: {llamacpp_server.model}\n"
    config = project(tmp_path, target, f"prefix_cache: {{system: {json.dumps(SYSTEM)}, requests: 4}}\n"
                                       "cache: {path: cache.sqlite, ttl_s: 3600}\n")
    reports = []
    for run_id in ("first", "second"):
        code, out, _ = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json")
        reports.append(json.loads(out))
    assert [r["counts"]["cached"] for r in reports] == [0, 8]
    assert all(r["prefix_cache"]["warm"]["n"] == r["prefix_cache"]["cold"]["n"] == 4 for r in reports)
    assert reports[1]["prefix_cache"]["warm"]["cached_tokens_mean"] > 80  # measured on the server, again


def test_a_planned_probe_that_did_not_run_is_inconclusive(tmp_path, capsys):
    path = Run(_healthy(), phases=["quality", "prefix_cache"]).build(tmp_path)
    assert main(["gate", str(path)]) == 3
    assert "prefix-cache probe did not run" in capsys.readouterr().out


def test_reports_show_the_probe(tmp_path, capsys):
    probe = {"pairs": 8, "system_chars": 300, "saved_ms_p50": 20.0, "cold_over_warm_p50": 11.0,
             "cached_tokens": "server /metrics",
             "warm": {"n": 8, "failed": 0, "ttft_ms_p50": 2.0, "ttft_ms_p95": 3.0, "prompt_tokens_mean": 150.0,
                      "cached_tokens_mean": 149.0},
             "cold": {"n": 8, "failed": 0, "ttft_ms_p50": 22.0, "ttft_ms_p95": 25.0, "prompt_tokens_mean": 152.0,
                      "cached_tokens_mean": 3.0}}
    run = Run(_healthy(), rubric=lenient())
    path = run.build(tmp_path)
    info = json.loads((path / "run.json").read_text())
    (path / "run.json").write_text(json.dumps({**info, "prefix_cache": probe, "phases": ["quality", "prefix_cache"]}))
    assert main(["gate", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # lines wrapped at 80 columns, joined again
    assert "TTFT P50 warm 2 ms, cold 22 ms (saves 20 ms, cold 11x warm)" in out
    assert "cached prompt tokens per request (server): warm 149 of 150, cold 3 of 152" in out


@pytest.mark.parametrize("target, extra, message", [
    ("  backend: replay\n  responses: r.jsonl\n", "prefix_cache: {system: x}\n", "needs the openai backend"),
    ("  backend: openai\n  base_url: http://127.0.0.1:9/v1\n  model: m\n", "prefix_cache: {requests: 8}\n",
     "one of system"),
    ("  backend: openai\n  base_url: http://127.0.0.1:9/v1\n  model: m\n", "prefix_cache: {system_file: nope.txt}\n",
     "field 'prefix_cache.system_file': system prompt "),
])
def test_config_refuses_a_probe_that_cannot_run(tmp_path, cli, target, extra, message):
    (tmp_path / "r.jsonl").write_text("")
    code, _, err = cli("validate", "-c", project(tmp_path, target, extra))
    assert code == 2 and message in err and "Traceback" not in err, err
