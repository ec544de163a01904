"""The openai backend against a stub streaming server: timing, token counts, faults, load phases, secrets."""

from __future__ import annotations

import gc
import json
import logging
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.cli import main
from releasegate.record.records import RunDir
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing.stub_server import _faulty

CLIENTS = ["lean", "openai"]
# the stub answers in 5-20 ms from a thread of the test process (sharing its GIL): a few ms of client loop lag are
# expected here, and must not make the verdict insufficient (client_saturation) in tests about something else
RUBRIC = """\
latency_from: {phase}
max_client_lag_share: 10
criteria:
  - {{metric: error_rate, op: "<=", threshold: 0.0}}
  - {{metric: ttft_ms_p95, op: "<=", threshold: 5000}}
"""


def project(tmp_path: Path, base_url: str, *, client="lean", extra="", load="", phase="auto", cases=6) -> Path:
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"} for i in range(cases)
    ])
    (tmp_path / "rubric.yaml").write_text(RUBRIC.format(phase=phase))
    (tmp_path / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  client: {client}\n  concurrency: 3\n"
        f"  retries: 2\n  timeout_s: 10\n{extra}"
        f"generation: {{max_new_tokens: 16}}\n"
        f"suites: [{{path: suite.jsonl, answer: {{type: regex, pattern: tok}}}}]\nrubric: rubric.yaml\n{load}"
    )
    return tmp_path / "releasegate.yaml"


def check(cli, config: Path, run_id="r"):
    code, out, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json")
    report = json.loads(out) if out.strip() else None
    return code, report, RunDir(config.parent / "reports" / run_id), err


@pytest.mark.parametrize("client", CLIENTS)
def test_streaming_timings_and_usage(tmp_path, cli, client):
    with StubServer(StubBehaviour(ttft_ms=20, itl_ms=3, tokens=8)) as stub:
        code, report, run, _ = check(cli, project(tmp_path, stub.base_url, client=client))
    assert code == 0, report["criteria"]
    records = run.read_records()
    for r in records:
        assert r.output.strip() == " ".join(["tok"] * 8)
        assert r.tokens.output == 8 and r.tokens.input == 7 and r.tokens.source == "usage"
        # the server waits 20 ms after reading the request. From the scheduled send (before any byte is written)
        # that is a floor; the send stamp itself is read after the write returns, as late as the event loop is
        # busy, so TTFT from it may come out a little under the server's 20 ms on a loaded machine
        assert r.timing.ttft_sched_ms >= 20 and 0 < r.timing.ttft_ms <= r.timing.ttft_sched_ms
        assert r.timing.e2e_ms >= r.timing.ttft_ms
        assert len(r.timing.itl_ms) == 7 and r.timing.tpot_ms > 0
    for name in ("ttft_ms_p50", "tpot_ms_p95", "itl_ms_p99", "e2e_ms_p95"):
        assert report["metrics"][name]["value"] is not None and report["metrics"][name]["n"] > 0
    assert report["metrics"]["itl_ms_p50"]["n"] == 6  # requests: one request's gaps are not independent samples


@pytest.mark.parametrize("client", CLIENTS)
def test_500s_are_retried_then_recorded(tmp_path, cli, client):
    with StubServer(StubBehaviour(fail_status=500)) as stub:
        code, report, run, _ = check(cli, project(tmp_path, stub.base_url, client=client))
        sent = stub.requests
    assert code == 4  # every request failed: the target could not be run, so no verdict on the model
    records = run.read_records()
    assert {r.error for r in records} == {"http_5xx"} and all(r.timing.attempts == 3 for r in records)
    assert sent == 6 * 3  # 2 retries each
    error_rate = next(c for c in report["criteria"] if c["metric"] == "error_rate")
    assert error_rate["value"] == 1.0 and error_rate["verdict"] == "fail"
    for r in records:  # how long the user waited for the failure: two backoffs of at least 125 + 250 ms
        t = r.timing
        assert t.ttft_ms is None and t.retry_wait_ms >= 300 and t.e2e_ms >= t.retry_wait_ms
        assert t.e2e_sched_ms == pytest.approx(t.e2e_ms + t.send_lag_ms, abs=1e-6)
    assert report["metrics"]["e2e_ms_p95"]["n"] == 0  # failed requests are never latency samples


@pytest.mark.parametrize("client", CLIENTS)
def test_429_then_success(tmp_path, cli, client):
    with StubServer(StubBehaviour(fail_status=429, fail_count=2, retry_after=0.05)) as stub:
        code, report, run, _ = check(cli, project(tmp_path, stub.base_url, client=client))
    records = run.read_records()
    assert all(r.error is None for r in records)
    assert sum(r.timing.attempts for r in records) == 6 + 2
    # every case answered, but 2 of the 8 requests sent were refused: they count (the default guard fails)
    assert sorted(k for r in records for k in r.timing.retried_errors) == ["http_429", "http_429"]
    assert report["counts"]["phases"]["quality"]["errors"] == {"http_429": 2}
    assert code == 1 and report["metrics"]["error_rate"]["value"] == pytest.approx(2 / 8)


@pytest.mark.parametrize("client", CLIENTS)
def test_retried_request_latency_counts_from_the_first_send(tmp_path, cli, client):
    # one at a time, every 2nd request gets a 429 with retry-after 50 ms: cases 2..6 each wait once, then pass
    with StubServer(StubBehaviour(ttft_ms=10, itl_ms=2, tokens=4, fail_status=429, fail_every=2, retry_after=0.05)) as stub:
        config = project(tmp_path, stub.base_url, client=client)
        config.write_text(config.read_text().replace("concurrency: 3", "concurrency: 1"))
        code, report, run, _ = check(cli, config)
        sent = stub.requests
    records = run.read_records()
    assert sent == 6 + 5 and all(r.error is None for r in records)
    assert [r.timing.attempts for r in records] == [1, 2, 2, 2, 2, 2]
    assert code == 1 and report["counts"]["phases"]["quality"]["failed"] == 5  # every refused attempt counts
    for r in records:
        t = r.timing
        assert t.ttft_ms == pytest.approx(t.retry_wait_ms + t.ttft_last_attempt_ms, abs=1e-6)
        assert t.ttft_sched_ms == pytest.approx(t.ttft_ms + t.send_lag_ms, abs=1e-6)
        assert t.e2e_ms >= t.ttft_ms
        if t.attempts == 1:
            assert t.retry_wait_ms == 0 and t.ttft_last_attempt_ms == t.ttft_ms
        else:  # the user waited through the 429 and the 50 ms backoff: TTFT counts it, the last attempt's does not
            assert t.retry_wait_ms >= 40 and t.ttft_ms >= t.retry_wait_ms and t.ttft_last_attempt_ms < t.ttft_ms
            assert t.ttft_ms > max(u.ttft_last_attempt_ms for u in (x.timing for x in records))
    assert report["metrics"]["ttft_ms_p50"]["value"] >= 40


@pytest.mark.parametrize("client", CLIENTS)
def test_server_dying_mid_run_gives_connection_errors(tmp_path, cli, client):
    # the server answers 3 requests, then refuses connections: the other cases are recorded as failures
    with StubServer(StubBehaviour(tokens=4, die_after=3)) as stub:
        config = project(tmp_path, stub.base_url, client=client)
        config.write_text(config.read_text().replace("retries: 2", "retries: 1"))
        code, report, run, err = check(cli, config)
        answered, dead = stub.requests, stub.dead
    records = run.read_records()
    # 3 cases answered; the other 3 were each sent twice and refused: 6 of 9 requests failed, a target error
    assert code == 4 and answered == 3 and dead and "Traceback" not in err
    assert sorted(r.error or "ok" for r in records) == ["connection_error"] * 3 + ["ok"] * 3
    assert report["counts"]["errors"] == {"connection_error": 6}
    for r in records:
        if r.error is not None:  # retried once, after a backoff of at least 125 ms
            t = r.timing
            assert t.attempts == 2 and t.retry_wait_ms >= 100 and t.e2e_ms >= t.retry_wait_ms


@pytest.mark.parametrize("fault, error", [
    ({"fail_status": 503}, "http_5xx"),
    ({"drop_after": 2}, "stream_interrupted"),
    ({"stall_after": 1}, "stall_timeout"),
])
def test_fail_every_interleaves_faults(tmp_path, cli, fault, error):
    # every 2nd request gets the fault, retries off: half the cases fail, whatever order they arrive in
    with StubServer(StubBehaviour(tokens=4, fail_every=2, **fault)) as stub:
        config = project(tmp_path, stub.base_url, extra="  stall_timeout_s: 0.3\n")
        config.write_text(config.read_text().replace("retries: 2", "retries: 0"))
        code, report, run, _ = check(cli, config)
        sent = stub.requests
    assert code == 1 and sent == 6
    assert sorted(r.error or "ok" for r in run.read_records()) == sorted([error] * 3 + ["ok"] * 3)
    assert report["metrics"]["error_rate"]["value"] == pytest.approx(0.5)
    assert report["metrics"]["ttft_ms_p50"]["n"] == 3


def test_fail_every_picks_every_kth_request_within_fail_count():
    picked = lambda b, n=10: [i for i in range(n) if _faulty(b, i)]  # noqa: E731
    assert picked(StubBehaviour(fail_every=2)) == [1, 3, 5, 7, 9]
    assert picked(StubBehaviour(fail_every=3, fail_count=7)) == [2, 5]
    assert len(picked(StubBehaviour(fail_every=2.5))) == 4  # 40%, spread out
    assert picked(StubBehaviour()) == list(range(10)) and picked(StubBehaviour(fail_count=2)) == [0, 1]


def test_stall_timeout_leaves_no_asyncio_noise(tmp_path, capfd, caplog):
    # a stalled stream is abandoned and its connection closed: no future may be left failed and never awaited
    caplog.set_level(logging.DEBUG, logger="asyncio")
    with StubServer(StubBehaviour(tokens=8, stall_after=2)) as stub:
        config = project(tmp_path, stub.base_url, client="lean", extra="  stall_timeout_s: 0.3\n")
        code = main(["check", "-c", str(config), "--run-id", "r", "--no-progress"])
    gc.collect()  # a leaked failed future reports itself when it is collected
    err = capfd.readouterr().err
    assert code != 0
    assert {r.error for r in RunDir(tmp_path / "reports" / "r").read_records()} == {"stall_timeout"}
    assert "never retrieved" not in err and "Exception in callback" not in err and "Traceback" not in err
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("client", CLIENTS)
def test_stream_dropped_half_way_is_not_retried(tmp_path, cli, client):
    with StubServer(StubBehaviour(tokens=8, drop_after=3)) as stub:
        code, report, run, _ = check(cli, project(tmp_path, stub.base_url, client=client))
        sent = stub.requests
    assert code == 4 and sent == 6  # never resent after the first token; every request failed: target error
    assert {r.error for r in run.read_records()} == {"stream_interrupted"}
    assert report["counts"]["errors"] == {"stream_interrupted": 6}


@pytest.mark.parametrize("client", CLIENTS)
def test_stall_past_the_timeout(tmp_path, cli, client):
    with StubServer(StubBehaviour(tokens=8, stall_after=2)) as stub:
        config = project(tmp_path, stub.base_url, client=client, extra="  stall_timeout_s: 0.3\n")
        code, report, run, _ = check(cli, config)
    assert code == 4  # every request failed: target error
    assert {r.error for r in run.read_records()} == {"stall_timeout"}


def test_mixed_faults_give_the_error_rate(tmp_path, cli):
    # the first 4 requests fail with 503 and retries are off: 4 of 6 cases fail
    with StubServer(StubBehaviour(fail_status=503, fail_count=4)) as stub:
        config = project(tmp_path, stub.base_url, extra="  retries: 0\n".replace("  retries: 0\n", ""))
        config.write_text(config.read_text().replace("retries: 2", "retries: 0").replace("concurrency: 3", "concurrency: 1"))
        code, report, run, _ = check(cli, config)
    assert report["metrics"]["error_rate"]["value"] == pytest.approx(4 / 6)
    assert sorted(r.error or "ok" for r in run.read_records()) == ["http_5xx"] * 4 + ["ok"] * 2


def test_unreachable_url_exits_4_with_one_line(tmp_path, cli):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    code, _, err = cli("check", "-c", project(tmp_path, f"http://127.0.0.1:{port}/v1"), "--no-progress")
    assert code == 4 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and f"127.0.0.1:{port}" in err


def test_api_key_never_written(tmp_path, cli, monkeypatch):
    sentinel = "sk-SENTINEL-4f1c2b9e-never-write-me"
    monkeypatch.setenv("RG_TEST_KEY", sentinel)
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = project(tmp_path, stub.base_url, extra="  api_key_env: RG_TEST_KEY\n",
                         load="load: {concurrency: 2, requests: 4}\n")
        code, report, run, _ = check(cli, config)
    assert code == 0
    written = [p for p in (tmp_path / "reports").rglob("*") if p.is_file()]
    assert len(written) >= 6
    for path in written:
        assert sentinel.encode() not in path.read_bytes(), path


def test_missing_key_variable_is_input_error(tmp_path, cli, monkeypatch):
    monkeypatch.delenv("RG_TEST_KEY_MISSING", raising=False)
    with StubServer() as stub:
        config = project(tmp_path, stub.base_url, extra="  api_key_env: RG_TEST_KEY_MISSING\n")
        code, _, err = cli("check", "-c", config, "--no-progress")
    assert code == 2 and "RG_TEST_KEY_MISSING" in err


def test_closed_loop_load_phase(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=4)) as stub:
        config = project(tmp_path, stub.base_url, load="load: {concurrency: 4, requests: 20, warmup: 3}\n")
        code, report, run, _ = check(cli, config)
        sent = stub.requests
    assert code == 0
    load = run.read_records("load.jsonl")
    assert len(load) == 20 and sent == 6 + 3 + 20  # quality + warm-up + measured
    assert report["latency_from"] == "load"
    assert report["metrics"]["ttft_ms_p50"]["n"] == 20  # warm-up and quality cases left out
    info = json.loads((run.path / "run.json").read_text())["load_phase"]
    assert info["requests"] == 20 and info["warmup"] == 3 and "closed loop" in info["profile"]


def test_open_loop_reports_send_lag_and_scheduled_latency(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=4)) as stub:
        config = project(tmp_path, stub.base_url, phase="both",
                         load="load: {rate: 40, arrival: gamma, burstiness: 0.5, requests: 30, concurrency: 8, seed: 3}\n")
        code, report, run, _ = check(cli, config)
    load = run.read_records("load.jsonl")
    assert len(load) == 30 and report["latency_from"] == "both"
    for r in load:
        assert r.timing.send_lag_ms is not None and r.timing.send_lag_ms >= 0
        assert r.timing.ttft_sched_ms == pytest.approx(r.timing.ttft_ms + r.timing.send_lag_ms, abs=1e-6)
    assert report["metrics"]["ttft_ms_p50"]["n"] == 36  # both phases
    assert report["metrics"]["send_lag_ms_p99"]["value"] is not None


def test_replayed_traffic(tmp_path, cli):
    write_jsonl(tmp_path / "traffic.jsonl", [
        {"t": 0.0, "prompt": "a"}, {"t": 0.05, "messages": [{"role": "user", "content": "b"}]}, {"t": 0.1, "prompt": "c"},
    ])
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = project(tmp_path, stub.base_url, load="load: {replay: traffic.jsonl}\n")
        code, report, run, _ = check(cli, config)
        bodies = stub.bodies
    assert code == 0 and len(run.read_records("load.jsonl")) == 3
    assert [b["messages"][-1]["content"] for b in bodies[-3:]] == ["a", "b", "c"]


def test_extra_body_and_params_reach_the_server(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=2)) as stub:
        config = project(tmp_path, stub.base_url, extra="  extra_body: {lora: [{id: 0, scale: 0.0}], repeat_penalty: 1.0}\n")
        cli("check", "-c", config, "--no-progress")
        body = stub.bodies[0]
    assert body["lora"] == [{"id": 0, "scale": 0.0}] and body["repeat_penalty"] == 1.0
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.0 and body["max_tokens"] == 16


def test_no_usage_counts_tokens_with_the_tokenizer(tmp_path, cli):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"tok": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    with StubServer(StubBehaviour(tokens=6, tokens_per_chunk=3, send_usage=False)) as stub:
        config = project(tmp_path, stub.base_url, extra="  tokenizer: tokenizer.json\n")
        code, report, run, _ = check(cli, config)
    for r in run.read_records():
        assert r.tokens.source == "tokenizer" and r.tokens.output == 6
        assert len(r.timing.itl_ms) == 3  # 2 chunks of 3 tokens: one gap split 3 ways


def test_completion_mode_refuses_chat_cases_before_sending(tmp_path, cli):
    with StubServer() as stub:
        config = project(tmp_path, stub.base_url)
        config.write_text(config.read_text().replace("client: lean", "client: lean\n  mode: completion"))
        code, _, err = cli("check", "-c", config, "--no-progress")
        sent = stub.requests
    assert code == 2 and "target.mode is completion" in err and "suite.jsonl" in err
    assert sent == 0 and not (tmp_path / "reports").exists()


def test_keep_alive_closed_by_the_server_is_not_an_error(tmp_path, cli):
    # the server drops each connection after one response, unannounced, and splits the chunked terminator:
    # the lean client re-sends on a new connection a request whose reused connection turned out closed,
    # without counting a failure or a retry (the openai client's httpx pool reports these as connection errors,
    # which `retries` then absorbs)
    with StubServer(StubBehaviour(tokens=4, keepalive_max=1, split_terminator=True)) as stub:
        config = project(tmp_path, stub.base_url, cases=12)
        config.write_text(config.read_text().replace("retries: 2", "retries: 0").replace("concurrency: 3", "concurrency: 2"))
        code, report, run, _ = check(cli, config)
    records = run.read_records()
    assert code == 0 and report["counts"]["errors"] == {}
    assert all(r.timing.attempts == 1 and r.output.strip() == "tok tok tok tok" for r in records)
