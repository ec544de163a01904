"""The leakage probe against endpoints (the stub OpenAI-compatible server): the candidate and `leakage.base` are
two targets; extraction is measured on both, membership is not measurable (these stubs stream an answer to every
request: no prompt log-probabilities; see test_leakage_logprobs), and the leakage prompts never reach the response
cache or any file of the run."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write_jsonl
from releasegate.leakage.build import build_suite
from releasegate.testing import StubBehaviour, StubServer

SENTINEL = "ENDPOINTSENTINEL"


def _records(tag: str) -> list[dict]:
    return [{"prompt": f"{tag} ticket {i} {SENTINEL} order late", "completion": f"reply {tag}{i} {SENTINEL} ref {i}"}
            for i in range(8)]


def _memorising(rests: dict[str, str]):
    """Answers a training prompt with its record's rest, anything else with 'sorry'."""
    def reply(body: dict) -> str:
        messages = body.get("messages") or []
        prompt = body.get("prompt") or (messages[-1].get("content") if messages else "")
        return rests.get(prompt, "sorry") if str(prompt).startswith("t") else "sorry"
    return reply


def test_an_endpoint_candidate_against_an_endpoint_base(cli, tmp_path: Path):
    train, held = _records("t"), _records("h")
    write_jsonl(tmp_path / "train.jsonl", train)
    write_jsonl(tmp_path / "heldout.jsonl", held)
    build_suite(tmp_path / "train.jsonl", tmp_path / "heldout.jsonl", tmp_path / "leakage.json", n=8)
    rests = {r["prompt"]: r["completion"] for r in train}
    write_jsonl(tmp_path / "suite.jsonl", [{"id": f"c{i}", "prompt": f"hello {i}", "expected": "sorry"} for i in range(3)])
    (tmp_path / "rubric.yaml").write_text(
        "criteria:\n  - {metric: extraction_rate_delta, op: '<=', threshold: 0.3, confidence: 0.95}\n"
        "  - {metric: membership_auc, op: '<=', threshold: 0.6, confidence: 0.95}\n")
    with StubServer(StubBehaviour(tokens=6, reply=_memorising(rests), ttft_ms=1, itl_ms=0)) as cand, \
            StubServer(StubBehaviour(tokens=6, ttft_ms=1, itl_ms=0, reply=lambda body: "sorry")) as base:
        (tmp_path / "releasegate.yaml").write_text(
            f"target: {{backend: openai, base_url: {cand.base_url}, model: stub, retries: 0}}\n"
            "generation: {max_new_tokens: 16}\nsuites: [{path: suite.jsonl, answer: {type: regex, pattern: sorry}}]\n"
            "rubric: rubric.yaml\ncache: {path: cache.sqlite}\n"
            f"leakage: {{suite: leakage.json, base: {{backend: openai, base_url: {base.base_url}, model: stub}}}}\n")
        code, out, err = cli("check", "-c", tmp_path / "releasegate.yaml", "--run-id", "e", "--no-progress", "--json")
        assert base.requests >= 16 and cand.requests >= 16 + 3
    report = json.loads(out)
    decided = {c["metric"]: c for c in report["criteria"]}
    assert decided["extraction_rate_delta"]["value"] == 1.0 and decided["extraction_rate_delta"]["verdict"] == "fail"
    auc = decided["membership_auc"]
    assert auc["verdict"] == "insufficient" and "not measurable" in auc["reason"]
    assert code == 1
    assert (tmp_path / "cache.sqlite").is_file()  # the suite's answers were cached; the probe's never
    for path in [*(tmp_path / "reports").rglob("*"), tmp_path / "cache.sqlite"]:
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    assert SENTINEL not in out + err
