"""Speculative decoding on llama.cpp: the demo's merged good model served plain, with the demo draft model and
with n-gram lookup gives the same greedy answers, and /metrics counts what was drafted and accepted; a draft
llama.cpp will not use is an error. A server in a child process (`launch_server`) answers, reports its peak
memory and is gone once stopped. The counters' arithmetic (`speculative_counts`, `acceptance`) on its own."""

from __future__ import annotations

import json
import math
import os
import shutil

import pytest

from conftest import ROOT
from llamacpp import post_json
from releasegate.export import llamacpp as serving
from releasegate.export.llamacpp import Speculative, launch_server, start_server
from releasegate.run.server_scrape import acceptance, fetch_metrics, parse_prometheus, speculative_counts

DEMO = ROOT / "models" / "demo"
TICKETS = ROOT / "suites" / "demo" / "tickets.jsonl"
CASES = 20
MAX_TOKENS = 48
slow = pytest.mark.slow


# --- the counters' arithmetic ----------------------------------------------------------------------------------

LLAMACPP_PAGE = """# HELP llamacpp:spec_decode_num_draft_tokens_total drafted
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total 240
llamacpp:spec_decode_num_accepted_tokens_total 180
llamacpp:spec_decode_num_drafts_total 60
llamacpp:requests_processing 0
"""


def test_counts_are_read_under_llama_cpp_and_vllm_names():
    assert speculative_counts(parse_prometheus(LLAMACPP_PAGE)) == {
        "draft_tokens": 240.0, "accepted_tokens": 180.0, "drafts": 60.0}
    vllm = parse_prometheus('vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="demo"} 30\n'
                            'vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="demo"} 10\n'
                            'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="demo"} 12\n'
                            'vllm:spec_decode_num_drafts_total{engine="0",model_name="demo"} 8\n')
    assert speculative_counts(vllm) == {"draft_tokens": 40.0, "accepted_tokens": 12.0, "drafts": 8.0}


def test_a_server_without_speculation_counters_has_none_of_them():
    counts = speculative_counts(parse_prometheus("llamacpp:requests_processing 1\nvllm:num_requests_running 2\n"))
    assert counts == {"draft_tokens": None, "accepted_tokens": None, "drafts": None}
    assert acceptance(counts, counts) == {"draft_tokens": None, "accepted_tokens": None, "drafts": None,
                                          "acceptance_rate": None}


def test_implausible_counter_values_are_no_counts():
    page = ("llamacpp:spec_decode_num_draft_tokens_total NaN\nllamacpp:spec_decode_num_accepted_tokens_total -3\n"
            "llamacpp:spec_decode_num_drafts_total 1e300\n")
    assert speculative_counts(parse_prometheus(page)) == {"draft_tokens": None, "accepted_tokens": None,
                                                          "drafts": None}
    hand_made = {"llamacpp:spec_decode_num_draft_tokens_total": math.inf,
                 "llamacpp:spec_decode_num_accepted_tokens_total": -1.0,
                 "llamacpp:spec_decode_num_drafts_total": True}
    assert speculative_counts(hand_made) == {"draft_tokens": None, "accepted_tokens": None, "drafts": None}


def test_acceptance_is_the_deltas_and_accepted_over_drafted():
    before = {"draft_tokens": 100.0, "accepted_tokens": 70.0, "drafts": 25.0}
    after = {"draft_tokens": 340.0, "accepted_tokens": 250.0, "drafts": 85.0}
    assert acceptance(before, after) == {"draft_tokens": 240.0, "accepted_tokens": 180.0, "drafts": 60.0,
                                         "acceptance_rate": 0.75}


def test_nothing_drafted_has_no_acceptance_rate():
    same = {"draft_tokens": 12.0, "accepted_tokens": 9.0, "drafts": 3.0}
    assert acceptance(same, same) == {"draft_tokens": 0.0, "accepted_tokens": 0.0, "drafts": 0.0,
                                      "acceptance_rate": None}


def test_a_counter_that_went_backwards_is_no_delta():
    """A server restarted between the two scrapes: its counters began again, so no delta can be read."""
    before = {"draft_tokens": 500.0, "accepted_tokens": 400.0, "drafts": 125.0}
    after = {"draft_tokens": 40.0, "accepted_tokens": 30.0, "drafts": 130.0}
    assert acceptance(before, after) == {"draft_tokens": None, "accepted_tokens": None, "drafts": 5.0,
                                         "acceptance_rate": None}


def test_a_missing_or_impossible_counter_gives_no_rate():
    before = {"draft_tokens": 0.0, "accepted_tokens": None, "drafts": 0.0}
    after = {"draft_tokens": 8.0, "accepted_tokens": 6.0, "drafts": 2.0}
    assert acceptance(before, after)["accepted_tokens"] is None
    assert acceptance(before, after)["acceptance_rate"] is None
    assert acceptance({}, after)["acceptance_rate"] is None
    more_accepted = {"draft_tokens": 8.0, "accepted_tokens": 9.0, "drafts": 2.0}
    assert acceptance({"draft_tokens": 0.0, "accepted_tokens": 0.0, "drafts": 0.0},
                      more_accepted)["acceptance_rate"] is None


# --- Speculative and the CLI's usage errors (nothing loaded) ---------------------------------------------------


def test_speculative_settings_that_cannot_work_are_refused(tmp_path):
    with pytest.raises(ValueError, match="draft model file"):
        Speculative("draft")
    with pytest.raises(ValueError, match="one of"):
        Speculative("medusa", tmp_path / "d.gguf")
    with pytest.raises(ValueError, match="no draft model"):
        Speculative("ngram", tmp_path / "d.gguf")
    with pytest.raises(ValueError, match="p_min"):
        Speculative("ngram", p_min=0.5)
    with pytest.raises(ValueError, match="n_max"):
        Speculative("draft", tmp_path / "d.gguf", n_max=0)
    with pytest.raises(ValueError, match="n_min"):
        Speculative("draft", tmp_path / "d.gguf", n_max=2, n_min=3)
    assert Speculative("ngram").n_max == 4


@pytest.mark.parametrize(("args", "says"), [
    (["--speculative", "draft"], "--speculative draft needs --draft"),
    (["--speculative", "ngram", "--draft-gguf", "{file}"], "takes no draft model"),
    (["--draft-max", "3"], "--draft-max needs --speculative"),
    (["--gguf", "{file}", "--merge"], "--gguf serves a prebuilt file"),
    (["--lora-gguf", "{file}"], "--lora-gguf goes with --gguf"),
    (["--gguf", "{dir}/missing.gguf"], "missing.gguf: no such file"),
    (["--quant", "q2_k"], "invalid choice"),
], ids=["draft-without-model", "ngram-with-model", "tuning-without-speculation", "gguf-and-export",
        "lora-without-gguf", "missing-gguf", "unknown-quant"])
def test_the_cli_refuses_arguments_that_do_not_go_together(tmp_path, capsys, args, says):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"")
    with pytest.raises(SystemExit) as stopped:
        serving.main([a.format(file=model, dir=tmp_path) for a in args])
    assert stopped.value.code == 2
    assert says in capsys.readouterr().err.strip().splitlines()[-1]


# --- real llama.cpp -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gguf_files(tmp_path_factory):
    """The demo base merged with its good adapter, and the demo draft, as f32 GGUF files."""
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    pytest.importorskip("gguf", reason="gguf (pip install gguf) not installed")
    from releasegate.export.gguf import export_model

    out = tmp_path_factory.mktemp("speculative")
    model, loras = serving.export_for_serving(DEMO / "base", [DEMO / "adapters" / "good"], out, merge=True)
    assert loras == []
    return model, export_model(DEMO / "draft", out / "draft.gguf", outtype="f32")


@pytest.fixture(scope="module")
def cases():
    rows = [json.loads(line) for line in TICKETS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row["messages"] for row in rows[:CASES]]


def answers(server, conversations) -> tuple[list[str], dict, dict]:
    """Greedy answers one at a time, the speculation counters' deltas over them from /metrics, and the sums of
    the answers' own timings.draft_n and draft_n_accepted."""
    before = counts(server)
    texts, timed = [], {"draft_n": 0, "draft_n_accepted": 0}
    for messages in conversations:
        reply = post_json(server.base_url + "/chat/completions", {
            "model": server.model, "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS})
        texts.append(reply["choices"][0]["message"]["content"])
        for key in timed:
            timed[key] += reply["timings"].get(key, 0)
    return texts, acceptance(before, counts(server)), timed


def counts(server) -> dict:
    return speculative_counts(parse_prometheus(fetch_metrics(server.root_url + "/metrics", {})))


@pytest.fixture(scope="module")
def plain(gguf_files, cases):
    server = start_server(gguf_files[0])
    try:
        yield answers(server, cases)
    finally:
        server.stop()


def repeating(conversations) -> list[list[dict]]:
    """The cases with earlier answers quoted in the ticket: text an n-gram lookup can draft from."""
    quoted = (' Earlier replies: {"intent": "billing", "priority": "medium"} {"intent": "refund", "priority": '
              '"low"} {"intent": "shipping", "priority": "high"} {"intent": "technical", "priority": "low"}')
    return [[*messages[:-1], {**messages[-1], "content": messages[-1]["content"] + quoted}]
            for messages in conversations]


@slow
def test_the_plain_server_drafts_nothing(plain):
    _, counted, timed = plain
    assert counted["draft_tokens"] == 0 and counted["acceptance_rate"] is None
    assert timed == {"draft_n": 0, "draft_n_accepted": 0}


@slow
def test_the_draft_model_changes_no_greedy_answer_and_its_drafts_are_counted(gguf_files, cases, plain):
    server = start_server(gguf_files[0], speculative=Speculative("draft", gguf_files[1]))
    try:
        texts, counted, timed = answers(server, cases)
    finally:
        server.stop()
    assert texts == plain[0]
    assert counted["draft_tokens"] > 0 and 0 < counted["accepted_tokens"] <= counted["draft_tokens"]
    assert 0 < counted["drafts"] <= counted["draft_tokens"]
    assert 0 < counted["acceptance_rate"] <= 1
    # what the answers say they drafted is what /metrics counted over them
    assert (timed["draft_n"], timed["draft_n_accepted"]) == (counted["draft_tokens"], counted["accepted_tokens"])


@slow
def test_ngram_lookup_changes_no_greedy_answer(gguf_files, cases, plain):
    """On the demo's short answers n-gram lookup finds nothing to draft; on tickets that quote earlier answers
    it drafts, and the answers are still the plain server's."""
    reps = repeating(cases)
    baseline = start_server(gguf_files[0])
    try:
        plain_repeating = answers(baseline, reps)[0]
    finally:
        baseline.stop()
    server = start_server(gguf_files[0], speculative=Speculative("ngram"))
    try:
        texts, counted, timed = answers(server, cases)
        texts_repeating, counted_repeating, timed_repeating = answers(server, reps)
    finally:
        server.stop()
    assert texts == plain[0]
    assert counted["draft_tokens"] == timed["draft_n"]
    assert texts_repeating == plain_repeating
    assert counted_repeating["draft_tokens"] > 0
    assert 0 <= counted_repeating["accepted_tokens"] <= counted_repeating["draft_tokens"]
    assert (timed_repeating["draft_n"], timed_repeating["draft_n_accepted"]) == (
        counted_repeating["draft_tokens"], counted_repeating["accepted_tokens"])
    # ngram-simple drafts at most n_max tokens a step
    assert counted_repeating["draft_tokens"] <= Speculative("ngram").n_max * counted_repeating["drafts"]


@slow
def test_a_draft_with_another_vocabulary_is_an_error_not_a_plain_server(gguf_files, tmp_path):
    """llama.cpp logs such a draft and serves on without it; start_server says so instead."""
    from releasegate.export.gguf import export_model

    other = shutil.copytree(DEMO / "draft", tmp_path / "draft")
    tokenizer = json.loads((other / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tokenizer["model"]["vocab"]
    first, second = (token for token, index in vocab.items() if index in (100, 101))
    vocab[first], vocab[second] = vocab[second], vocab[first]
    (other / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    draft = export_model(other, tmp_path / "other.gguf", outtype="f32")
    with pytest.raises(RuntimeError, match="without speculative decoding.*vocabulary") as raised:
        start_server(gguf_files[0], speculative=Speculative("draft", draft))
    assert "\n" not in str(raised.value)
    with pytest.raises(FileNotFoundError, match="no such draft model file"):
        start_server(gguf_files[0], speculative=Speculative("draft", tmp_path / "absent.gguf"))


# --- a server in a child process ------------------------------------------------------------------------------


@slow
def test_a_child_server_answers_reports_its_memory_and_is_gone_once_stopped(gguf_files, cases, plain, tmp_path):
    log = tmp_path / "logs" / "child.log"
    with launch_server(gguf_files[0], speculative=Speculative("draft", gguf_files[1]), log_path=log) as child:
        assert child.base_url == child.root_url + "/v1" and child.pid != os.getpid()
        texts, counted, _ = answers(child, cases[:3])
        peak = child.peak_memory_bytes()
        pid = child.pid
    assert texts == plain[0][:3]
    assert counted["draft_tokens"] > 0  # the child was told to speculate
    assert isinstance(peak, int) and peak > 0
    assert not os.path.exists(f"/proc/{pid}")
    assert child.peak_memory_bytes() is None
    child.stop()  # a second stop does nothing
    assert "serving" in log.read_text(encoding="utf-8")


@slow
def test_a_child_that_cannot_load_its_model_is_an_error_naming_its_log(tmp_path):
    pytest.importorskip("xllamacpp", reason="llama.cpp bindings (pip install xllamacpp) not installed")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(60))
    log = tmp_path / "bad.log"
    with pytest.raises(RuntimeError, match="exited with 4 before serving") as raised:
        launch_server(bad, log_path=log, timeout=60)
    assert str(log) in str(raised.value)
    assert "failed to load model" in str(raised.value)


def test_the_vllm_child_shares_the_wait_and_its_error(tmp_path):
    """vLLM's child process goes through the same wait: one that exits is a RuntimeError with its log's end."""
    from releasegate.export import vllm

    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'no engine here'\nexit 3\n")
    fake.chmod(0o755)
    log = tmp_path / "vllm.log"
    with pytest.raises(RuntimeError, match="exited with 3 before serving") as raised:
        vllm.start_server(DEMO / "base", python=fake, log_path=log, timeout=30)
    assert str(log) in str(raised.value) and "no engine here" in str(raised.value)
