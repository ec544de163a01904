"""The response-cache probe on the demo's paraphrase suite (scripts/build_cache_suite.py: 30 ticket groups of
three, answered right by the replay backend), with embeddings from real components: at a loose threshold the
cache serves answers across intents and the criterion fails; at the recommended threshold it passes; exact mode
has no wrong hit on the identical questions."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import llamacpp
from conftest import ROOT

RUBRIC = "criteria:\n  - {metric: cache_wrong_hit_rate, op: '<=', threshold: 0.1}\nreview: {required_domains: []}\n"
THRESHOLDS = [0.5, 0.8, 0.9, 0.95, 0.97, 0.99]


def project(tmp_path, probe: str):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    config = tmp_path / "c.yaml"
    config.write_text(
        f"target: {{backend: replay, responses: {ROOT / 'suites/demo/cache_paraphrases_answers.jsonl'}}}\n"
        f"suites:\n  - {{path: {ROOT / 'suites/demo/cache_paraphrases.jsonl'}, "
        "answer: {type: json_fields, fields: [intent, priority]}}\n"
        f"rubric: rubric.yaml\nresponse_cache_probe: {probe}\n")
    return config


def test_the_suite_is_as_its_script_writes_it():
    done = subprocess.run([sys.executable, str(ROOT / "scripts/build_cache_suite.py"), "--check"], capture_output=True)
    assert done.returncode == 0, done.stdout


def test_exact_mode_has_no_wrong_hit_on_identical_questions(cli, tmp_path):
    config = project(tmp_path, "{mode: exact, group_tag: group}")
    code, out, _ = cli("check", "-c", config, "--run-id", "x", "--no-progress", "--json")
    row = json.loads(out)["response_cache_probe"]["rows"][0]
    # each 'same' variant hits, and either of the two could be the one served: 60 judged, none harmed
    assert row["hits"] == 30 and row["wrong_hits"] == 0 and row["within_group"] == 60 and row["harmful_hits"] == 0
    assert code == 0


def loose_then_recommended(cli, tmp_path, embeddings: str):
    probe = f"{{threshold: 0.5, thresholds: {THRESHOLDS}, group_tag: group, embeddings: {embeddings}}}"
    code, out, _ = cli("check", "-c", project(tmp_path / "loose", probe), "--run-id", "r", "--no-progress", "--json")
    report = json.loads(out)
    section = report["response_cache_probe"]
    loose = next(r for r in section["rows"] if r["threshold"] == 0.5)
    assert code == 1 and report["verdict"] == "FAIL" and loose["wrong_across_group"] > 0
    wrong = loose["wrong"][0]
    assert not wrong["within_group"] and json.loads(wrong["cached_answer"]) != json.loads(wrong["answer"])
    recommended = section["recommended"]["threshold"]
    assert recommended is not None and recommended > 0.5
    chosen = next(r for r in section["rows"] if r["threshold"] == recommended)
    assert chosen["hits"] > 0 and chosen["wrong_hit_upper"] < 0.1
    probe = probe.replace("threshold: 0.5,", f"threshold: {recommended},")
    code, out, _ = cli("check", "-c", project(tmp_path / "chosen", probe), "--run-id", "r", "--no-progress", "--json")
    assert code == 0 and json.loads(out)["verdict"] == "PASS"


@pytest.mark.slow
def test_llamacpp_embeddings(cli, tmp_path):

    pytest.importorskip("xllamacpp")
    if not llamacpp.demo_available():
        pytest.skip("demo model not built")
    model, _ = llamacpp.export_demo(tmp_path / "gguf", adapters=())
    server = llamacpp.start_server(model, n_parallel=1, embeddings=True)
    try:
        loose_then_recommended(cli, tmp_path, f"{{base_url: '{server.base_url}', model: {server.model}}}")
    finally:
        server.stop()


@pytest.mark.slow
def test_local_model_embeddings(cli, tmp_path):
    if not llamacpp.demo_available():
        pytest.skip("demo model not built")
    loose_then_recommended(cli, tmp_path, f"{{local: {llamacpp.DEMO / 'base'}}}")
