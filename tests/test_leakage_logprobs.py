"""Membership behind an endpoint that gives the prompt's log-probabilities the way vLLM does (`prompt_logprobs`),
against the stub server: the figures equal a hand count, a server without them says membership is not measurable,
and a hostile reply is no score (unknown, never a pass), in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.backends.openai import OpenAIBackend
from releasegate.inputs.target import TargetConfig
from releasegate.leakage.build import build_suite
from releasegate.leakage.prompt_logprobs import endpoint_log_likelihoods
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing.logprob_stub import scored_text, vllm_prompt_logprobs

SENTINEL = "LOGPROBSENTINEL"


def _records(tag: str) -> list[dict]:
    return [{"prompt": f"{tag} ticket {i} {SENTINEL} late", "completion": f" reply {tag}{i} {SENTINEL} ref {i}"}
            for i in range(8)]


def _scorer(logprob):
    """A stub answering scoring requests with vLLM's prompt_logprobs: `logprob(text)` at every position."""
    return StubBehaviour(tokens=4, ttft_ms=1, itl_ms=0,
                         prompt_logprobs=lambda body: vllm_prompt_logprobs(scored_text(body), logprob))


def _number(text: str) -> int:
    return int(text.split(" ticket ")[1].split()[0])


def _check(cli, tmp_path: Path, cand: StubBehaviour, base: StubBehaviour, mode: str = "completion") -> dict:
    write_jsonl(tmp_path / "train.jsonl", _records("t"))
    write_jsonl(tmp_path / "heldout.jsonl", _records("h"))
    build_suite(tmp_path / "train.jsonl", tmp_path / "heldout.jsonl", tmp_path / "leakage.json", n=8)
    write_jsonl(tmp_path / "suite.jsonl", [{"id": f"c{i}", "prompt": f"hello {i}", "expected": "tok"} for i in range(2)])
    (tmp_path / "rubric.yaml").write_text(
        "criteria:\n  - {metric: membership_auc, op: '<=', threshold: 0.6, confidence: 0.95}\n")
    with StubServer(cand) as c, StubServer(base) as b:
        (tmp_path / "releasegate.yaml").write_text(
            f"target: {{backend: openai, base_url: {c.base_url}, model: stub, retries: 0, mode: {mode}}}\n"
            "generation: {max_new_tokens: 8}\nsuites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\n"
            "rubric: rubric.yaml\ncache: {path: cache.sqlite}\n"
            f"leakage: {{suite: leakage.json, templates: false, base: {{backend: openai, base_url: {b.base_url}, "
            f"model: stub, mode: {mode}}}}}\n")
        code, out, err = cli("check", "-c", tmp_path / "releasegate.yaml", "--run-id", "m", "--no-progress", "--json")
    assert "Traceback" not in out + err and SENTINEL not in out + err
    for path in [*(tmp_path / "reports").rglob("*"), tmp_path / "cache.sqlite"]:
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    report = json.loads(out)
    return {"code": code, **{c["metric"]: c for c in report["criteria"]}}


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_a_memorising_candidate_against_a_plain_base(cli, tmp_path: Path, mode: str):
    memorised = _scorer(lambda text: -0.1 if text.startswith("t ticket") else -2.0)
    auc = _check(cli, tmp_path, memorised, _scorer(-2.0), mode)["membership_auc"]
    assert auc["value"] == 1.0 and auc["verdict"] == "fail", auc


def test_a_candidate_that_memorised_nothing_is_no_signal(cli, tmp_path: Path):
    found = _check(cli, tmp_path, _scorer(-1.5), _scorer(-2.0))
    auc = found["membership_auc"]
    assert auc["value"] == 0.5 and auc["verdict"] != "fail", auc


def test_the_auc_equals_a_hand_count(cli, tmp_path: Path):
    """Scores by record number: training record i scores -2 + i/10, held-out j scores -1.65 + j/10 (the base is
    flat): a training record above a held-out one where i - j >= 4, 10 of the 64 pairs, no tie."""
    def logprob(text: str) -> float:
        return (-2 + _number(text) / 10) if text.startswith("t") else (-1.65 + _number(text) / 10)
    pairs = [(i, j) for i in range(8) for j in range(8)]
    above = sum(1 for i, j in pairs if -2 + i / 10 > -1.65 + j / 10)
    assert above == 10  # i - j >= 4: (4,0) (5,0) (5,1) (6,0) (6,1) (6,2) (7,0) (7,1) (7,2) (7,3)
    auc = _check(cli, tmp_path, _scorer(logprob), _scorer(-2.0))["membership_auc"]
    assert auc["value"] == pytest.approx(10 / 64), auc


def test_a_server_without_prompt_logprobs_says_not_measurable(cli, tmp_path: Path):
    llamacpp = StubBehaviour(tokens=4, ttft_ms=1, itl_ms=0, prompt_logprobs=lambda body: None)  # the key left out
    found = _check(cli, tmp_path, llamacpp, _scorer(-2.0))
    auc = found["membership_auc"]
    assert auc["verdict"] == "insufficient" and "gave no prompt_logprobs" in auc["reason"], auc
    assert "llama.cpp" in auc["reason"] and found["code"] == 3


def test_a_server_that_streams_anyway_is_no_score(cli, tmp_path: Path):
    """A server that ignores `stream: false` answers an event stream: no record has a score, said in one line."""
    auc = _check(cli, tmp_path, StubBehaviour(tokens=4, ttft_ms=1, itl_ms=0), _scorer(-2.0))["membership_auc"]
    assert auc["verdict"] == "insufficient" and "16 of 16 record(s)" in auc["reason"], auc


HOSTILE = {
    "a dict, not a list": {"0": {"logprob": -1.0}},
    "NaN": "nan",
    "too short": "short",
    "two entries a position": "two",
    "a positive logprob": "positive",
    "a logprob as text": "text",
}


def _hostile(kind: str):
    def value(body: dict):
        text = scored_text(body)
        good = vllm_prompt_logprobs(text, -1.0)
        if kind == "nan":
            return [None] + [{"1": {"logprob": float("nan")}} for _ in text[1:]]
        if kind == "short":
            return good[:3]
        if kind == "two":
            return [None] + [{"1": {"logprob": -1.0}, "2": {"logprob": -3.0}} for _ in text[1:]]
        if kind == "positive":
            return [None] + [{"1": {"logprob": 5.0}} for _ in text[1:]]
        if kind == "text":
            return [None] + [{"1": {"logprob": "-1"}} for _ in text[1:]]
        return kind
    return value


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_reply_is_no_score(name: str):
    kind = HOSTILE[name]
    behaviour = StubBehaviour(prompt_logprobs=(lambda body: kind) if isinstance(kind, dict) else _hostile(kind))
    with StubServer(behaviour) as stub:
        target = TargetConfig(backend="openai", base_url=stub.base_url, model="stub", mode="completion", retries=0)
        values, why = endpoint_log_likelihoods(OpenAIBackend(target), [(None, "t ticket 1")], [" reply"])
    assert values == [None] and why is not None and why.startswith("not measurable: 1 of 1 record"), why
    assert "\n" not in why and len(why) < 400


def test_a_huge_reply_is_no_score():
    with StubServer(StubBehaviour(prompt_logprobs=lambda body: "x" * (100 << 20))) as stub:
        target = TargetConfig(backend="openai", base_url=stub.base_url, model="stub", mode="completion", retries=0)
        values, why = endpoint_log_likelihoods(OpenAIBackend(target), [(None, "t ticket 1")], [" reply"])
    assert values == [None] and why is not None and "not measurable" in why and "\n" not in why, why


def test_the_score_is_the_mean_over_the_rest_only():
    """The prefix's positions do not count: a prefix at -5 per token and a rest at -1 give -1."""
    def logprob(body: dict):
        text = scored_text(body)
        return [None] + [{"1": {"logprob": -5.0 if i < len("prefix") else -1.0}} for i in range(1, len(text))]
    with StubServer(StubBehaviour(prompt_logprobs=logprob)) as stub:
        target = TargetConfig(backend="openai", base_url=stub.base_url, model="stub", mode="completion", retries=0)
        values, why = endpoint_log_likelihoods(OpenAIBackend(target), [(None, "prefix")], [" the rest"])
        total, _ = endpoint_log_likelihoods(OpenAIBackend(target), [(None, "prefix")], [" the rest"], total=True)
    assert why is None and values == [-1.0] and total == [-9.0]
    assert all(b.get("prompt_logprobs") == 0 and b.get("max_tokens") == 1 for b in stub.bodies)


def test_garbage_for_the_training_records_only_is_never_a_pass(cli, tmp_path: Path):
    """A candidate whose server scores the held-out records well and garbles the training records': leaving those
    out would compare held-out with nothing and could pass; membership is unknown instead."""
    def value(body: dict):
        text = scored_text(body)
        return [None, {"1": {"logprob": "?"}}] if text.startswith("t ticket") and " reply" in text \
            else vllm_prompt_logprobs(text, -2.0)
    found = _check(cli, tmp_path, StubBehaviour(tokens=4, ttft_ms=1, itl_ms=0, prompt_logprobs=value),
                   _scorer(-2.0))
    auc = found["membership_auc"]
    assert auc["verdict"] == "insufficient" and "8 of 16 record(s)" in auc["reason"], auc
    assert found["code"] != 0


@pytest.mark.slow
def test_a_real_llamacpp_server_says_membership_is_not_measurable(llamacpp_server):
    """llama.cpp answers the scoring request (its n_probs covers generated tokens only) without prompt_logprobs."""
    target = TargetConfig(backend="openai", base_url=llamacpp_server.base_url, model=llamacpp_server.model,
                          mode="completion", retries=0)
    values, why = endpoint_log_likelihoods(OpenAIBackend(target), [(None, "My order is late")] * 2,
                                           [" and I want a refund"] * 2)
    assert values == [None, None] and why is not None and "gave no prompt_logprobs" in why, why


def test_a_chat_target_continues_the_assistant_message():
    """On a chat target the rest is the assistant message continued, the prefix asked with its generation prompt;
    the rest's positions (after the generation prompt's) alone are scored."""
    def logprob(body: dict):
        text = scored_text(body)
        return [None] + [{"1": {"logprob": -4.0 if i <= len("hi there") else -0.5}} for i in range(1, len(text))]
    with StubServer(StubBehaviour(prompt_logprobs=logprob)) as stub:
        target = TargetConfig(backend="openai", base_url=stub.base_url, model="stub", mode="chat", retries=0)
        values, why = endpoint_log_likelihoods(OpenAIBackend(target), [([{"role": "user", "content": "hi there"}],
                                                                         None)], ["my answer"])
    assert why is None and values == [-0.5]
    head, full = stub.bodies
    assert head["add_generation_prompt"] is True and head["messages"] == [{"role": "user", "content": "hi there"}]
    assert full["continue_final_message"] is True and full["add_generation_prompt"] is False
    assert full["messages"][-1] == {"role": "assistant", "content": "my answer"}


def test_a_server_refusing_the_parameter_says_not_measurable():
    """An API that refuses unknown parameters (HTTP 400) gives none: said once, one record asked."""
    with StubServer(StubBehaviour(fail_status=400)) as stub:
        target = TargetConfig(backend="openai", base_url=stub.base_url, model="stub", mode="completion", retries=0)
        values, why = endpoint_log_likelihoods(OpenAIBackend(target), [(None, "a")] * 5, [" b"] * 5)
    assert values == [None] * 5 and why is not None and "refused a request with prompt_logprobs (HTTP 400" in why, why
    assert stub.requests == 1 and "\n" not in why


def test_a_later_record_refused_is_that_record_alone():
    """A server that scores the first record and refuses a later one (past its context, say): that record has no
    score, and membership is not measurable, naming it, not the server."""
    with StubServer(StubBehaviour(prompt_logprobs=lambda body: vllm_prompt_logprobs(scored_text(body), -1.0),
                                  fail_status=400, fail_every=3, fail_count=6)) as stub:
        target = TargetConfig(backend="openai", base_url=stub.base_url, model="stub", mode="completion", retries=0)
        values, why = endpoint_log_likelihoods(OpenAIBackend(target), [(None, "a")] * 3, [" b"] * 3)
    assert values[0] == -1.0 and None in values[1:] and why is not None and "record(s) got no usable" in why, why
