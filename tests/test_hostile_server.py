"""A hostile server never ends the run: every mode of `testing.hostile` through `check`, for the target (both
clients), the judge, the load phase and the sweep. Each ends with every request recorded (the hostile ones with
their error kind), a verdict, no exit 70, nothing on stderr but the verdict lines, and no credential at the origin
a redirect points to."""

from __future__ import annotations

import asyncio
import json
import logging
import math
from pathlib import Path

import pytest

from releasegate.backends import Generation, Request
from releasegate.backends._dispatch import Scheduled, gather
from releasegate.backends._events import BadEvent, Usage, read_event, usage_problem
from releasegate.backends._sse_client import _Response
from releasegate.cli import main
from releasegate.decision.verdicts import EXIT_CODES
from releasegate.errors import ErrorKind
from releasegate.record.judge_journal import read_judgments
from releasegate.record.records import RunDir
from releasegate.run.server_scrape import ScrapeError, Scraper, fetch_metrics, normalise, parse_prometheus, samples_line
from releasegate.testing import StubBehaviour, StubServer
from releasegate.testing.hostile import _NONFINITE, HOSTILE_MODES, Catcher
from test_false_pass import Run, err, load_err, load_ok, ok
from test_llm_judge import project as judge_project
from test_llm_judge import scripted, stub_judge
from test_openai_backend import CLIENTS, project

BAD, EMPTY, LARGE = ErrorKind.BAD_RESPONSE, ErrorKind.EMPTY_RESPONSE, ErrorKind.RESPONSE_TOO_LARGE
KIND = {
    "event-list": BAD, "choice-string": BAD, "delta-string": BAD, "content-number": BAD, "usage-huge": BAD,
    "usage-string": BAD, "usage-negative": BAD, "usage-above-cap": BAD,
    "empty-abort": EMPTY, "empty-stop": EMPTY, "length-zero": EMPTY,
    "unbounded": LARGE, "overlong": LARGE, "huge-header": LARGE, "trickle": None,
    "bad-status-line": BAD, "bad-chunk-size": BAD, "bad-content-length": BAD,
    "redirect-307": ErrorKind.REDIRECT, "redirect-302": ErrorKind.REDIRECT,
}
"""What each request a mode hits must be recorded as (None: the answer is valid, only slow to arrive)."""
SECRET = "hdr-secret-4a7c"
TARGET_EXTRA = f"  max_response_bytes: 1048576\n  headers: {{X-Api-Key: {SECRET}}}\n"
NOISE = ("Traceback", "Fatal error", "data_received", "exception was never retrieved", "Task exception", "Error:")


def hostile_check(cli, tmp_path: Path, mode: str, *, client: str = "lean", load: str = "", extra: str = "",
                  every: float | None = 2):
    """`check` against a stub in `mode` (hitting every `every`-th request), with credentials configured; redirects
    point at a Catcher. Returns (exit code, report, run, stderr, the heads that reached the other origin)."""
    with Catcher() as catcher, StubServer(StubBehaviour(tokens=4, hostile=mode, fail_every=every,
                                                        redirect_to=catcher.url)) as stub:
        config = project(tmp_path, stub.base_url, client=client, extra=TARGET_EXTRA + extra, load=load)
        code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    return code, (json.loads(out) if out.strip() else None), RunDir(tmp_path / "reports" / "r"), err, catcher.heads


def assert_quiet(err: str, caplog) -> None:
    """Nothing on stderr but the verdict table and lines; nothing logged by asyncio."""
    assert not [n for n in NOISE if n in err], err
    assert not [r for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.WARNING]


def test_every_mode_has_an_expected_kind():
    assert set(KIND) == {m for m in HOSTILE_MODES if not m.startswith(("metrics-", "embeddings-"))}


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("mode", sorted(KIND))
def test_a_hostile_answer_is_one_recorded_error_and_the_run_goes_on(tmp_path, cli, caplog, mode, client):
    code, report, run, err, caught = hostile_check(cli, tmp_path, mode, client=client)
    records = run.read_records()
    assert len(records) == 6 and report is not None and report["verdict"] in ("PASS", "FAIL")
    errors = [r.error for r in records if r.error]
    if KIND[mode] is None:
        assert code == 0 and errors == [] and all(r.output.startswith("tok") for r in records)
    else:  # every other request hit, each its own error, never retried into an answer
        assert code == 1 and report["verdict"] == "FAIL" and errors == [KIND[mode]] * 3, errors
        assert all(r.timing.attempts == 1 for r in records if r.error)
    assert_quiet(err, caplog)
    assert caught == []  # nothing, credentials or not, went to the origin a redirect named


@pytest.mark.parametrize("client", CLIENTS)
def test_a_redirect_names_the_other_origin_only(tmp_path, cli, client):
    _, _, run, _, caught = hostile_check(cli, tmp_path, "redirect-307", client=client)
    message = next(r.error_message for r in run.read_records() if r.error)
    assert "redirect to http://127.0.0.1:" in message and "moved-token" not in message and "/v1" not in message
    assert caught == []


@pytest.mark.parametrize("client", CLIENTS)
def test_empty_answers_say_their_finish_reason(tmp_path, cli, client):
    _, report, run, _, _ = hostile_check(cli, tmp_path, "empty-abort", client=client)
    assert {r.error_message for r in run.read_records() if r.error} == {"no content (finish_reason: abort)"}


def test_negative_usage_never_becomes_a_cost_or_a_rate(tmp_path, cli):
    _, report, run, _, _ = hostile_check(cli, tmp_path, "usage-negative", every=None)
    records = run.read_records()
    assert {r.error for r in records} == {BAD}
    assert all(r.tokens.input is None and r.tokens.output is None for r in records)


@pytest.mark.parametrize("mode", ["event-list", "usage-huge", "redirect-307", "bad-chunk-size", "unbounded"])
def test_the_load_phase_records_each_hostile_request(tmp_path, cli, caplog, mode):
    code, report, run, err, caught = hostile_check(cli, tmp_path, mode, load="load: {concurrency: 2, requests: 6}\n")
    load = run.read_records("load.jsonl")
    assert code == 1 and len(load) == 6 and [r.error for r in load].count(KIND[mode]) == 3
    assert_quiet(err, caplog)
    assert caught == []  # /metrics scrapes were redirected too: nothing followed


JUDGE_KIND = {"event-list": "judge_bad_response", "usage-huge": "judge_bad_response",
              "empty-abort": "judge_empty_response", "redirect-307": "judge_redirect",
              "bad-chunk-size": "judge_bad_response", "unbounded": "judge_response_too_large"}


@pytest.mark.parametrize("mode", sorted(JUDGE_KIND))
def test_a_hostile_judge_is_a_judge_error_per_case(tmp_path, cli, caplog, mode):
    with Catcher() as catcher, StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=6, reply=scripted, hostile=mode,
                                                        fail_every=2, redirect_to=catcher.url)) as stub:
        config = judge_project(tmp_path, stub_judge(stub.base_url, f"  max_response_bytes: 1048576\n"
                                                                   f"  headers: {{X-Api-Key: {SECRET}}}\n"), cases=8)
        code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
        again, _, err2 = cli("check", "--resume", tmp_path / "reports" / "r", "--no-progress", "--json")
    judgments = read_judgments(RunDir(tmp_path / "reports" / "r"))
    errors = [j.error for j in judgments.values() if j.error]
    assert code not in (70, 0) and again not in (70, 0) and json.loads(out)["verdict"] != "PASS"
    assert len({j.case_id for j in judgments.values()}) == 8 and errors and set(errors) <= {JUDGE_KIND[mode], "judge_unparseable"}
    assert_quiet(err + err2, caplog)
    assert catcher.heads == []


@pytest.mark.parametrize("mode", ["metrics-nonfinite", "metrics-trickle"])
def test_hostile_metrics_never_end_the_load_phase_or_the_reports(tmp_path, cli, caplog, mode):
    code, report, run, err, _ = hostile_check(cli, tmp_path, mode, load="load: {concurrency: 2, requests: 6}\n")
    assert code == 0 and len(run.read_records("load.jsonl")) == 6
    text = (run.path / "server_metrics.jsonl").read_text() if (run.path / "server_metrics.jsonl").exists() else ""
    assert "NaN" not in text and "Infinity" not in text
    for line in filter(None, text.splitlines()):
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-finite {c} written"))
    server = report["load_phase"]["server_metrics"]
    if mode == "metrics-trickle":  # one byte a second: the scrape's deadline ended it, not a per-read timeout
        assert "/metrics not read within 2 s" in server["error"]
    else:
        assert server["samples"] >= 2 and "queue" not in server  # NaN queue, +Inf running: dropped
    for fmt in ("md", "html"):
        got, _, report_err = cli("report", run.path, "--format", fmt)
        assert got == 0, report_err
    assert_quiet(err, caplog)


@pytest.mark.parametrize("mode", ["metrics-nonfinite", "usage-negative"])
def test_a_sweep_survives_a_hostile_server(tmp_path, cli, caplog, mode):
    sweep = "load: {sweep: {start_rps: 40, max_rps: 40, requests_per_step: 60, step_s: 1, slo: {ttft_ms_p95: 5000}}}\n"
    code, report, run, err, _ = hostile_check(cli, tmp_path, mode, load=sweep)
    assert code != 70 and report["verdict"] in ("PASS", "FAIL", "INCONCLUSIVE")
    load = run.read_records("load.jsonl")
    assert len(load) >= 60 and (mode != "usage-negative" or {r.error for r in load} == {None, BAD})
    assert "NaN" not in (run.path / "server_metrics.jsonl").read_text()
    for fmt in ("md", "html"):
        assert cli("report", run.path, "--format", fmt)[0] == 0
    assert_quiet(err, caplog)


# -- the typed shapes, one by one ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("event", "says"), [
    ([1, 2, 3], "must be a JSON object"),
    ({"choices": ["x"]}, "a choice must be an object"),
    ({"choices": {"0": {}}}, "choices must be a list"),
    ({"choices": [{"delta": "x"}]}, "delta must be an object"),
    ({"choices": [{"delta": {"content": 5}}]}, "delta.content must be a string"),
    ({"choices": [{"delta": {}, "finish_reason": 1}]}, "finish_reason must be a string"),
    ({"usage": [7]}, "usage must be an object"),
    ({"usage": {"completion_tokens": 1e18}}, "whole number"),
    ({"usage": {"completion_tokens": 3.0}}, "whole number"),
    ({"usage": {"prompt_tokens": "12abc"}}, "whole number"),
    ({"usage": {"prompt_tokens": True}}, "whole number"),
    ({"usage": {"completion_tokens": -1000}}, "not a token count"),
    ({"usage": {"completion_tokens": 10**18}}, "not a token count"),
    ({"error": {"message": "engine died", "code": 500}}, "error event"),
])
def test_an_event_of_another_shape_is_refused(event, says):
    with pytest.raises(BadEvent, match=says):
        read_event(event, "chat")


def test_the_shapes_servers_send_are_read():
    event = read_event({"id": "x", "choices": [{"index": 0, "delta": {"content": "hi", "reasoning_content": "hmm"},
                                                 "finish_reason": None, "logprobs": None}], "usage": None}, "chat")
    assert event.choices[0].content == "hi" and event.choices[0].seen == 5 and event.usage is None
    assert read_event({"choices": [{"text": "a", "finish_reason": "stop"}]}, "completion").choices[0].finish_reason == "stop"
    usage = read_event({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 300,
                                                 "completion_tokens_details": {"reasoning_tokens": 280}}}, "chat").usage
    assert usage == Usage(7, 300, 280)


def test_usage_out_of_proportion_with_its_answer():
    assert usage_problem(Usage(7, 5), chunks=4, seen=16, cap=96) is None
    assert "token cap" in usage_problem(Usage(7, 97), chunks=4, seen=400, cap=96)
    assert "far above the answer" in usage_problem(Usage(7, 60), chunks=2, seen=8, cap=96)
    assert usage_problem(Usage(7, 60, reasoning_tokens=50), chunks=2, seen=8, cap=96) is None  # not streamed


class _Transport:
    closed = False

    def close(self):
        self.closed = True

    abort = close  # a failed exchange drops the connection: nothing it still had to send is worth waiting for


def _fed(pieces: list[bytes]) -> _Response:
    loop = asyncio.new_event_loop()
    conn = _Response()
    conn.transport, conn.done = _Transport(), loop.create_future()
    for piece in pieces:
        conn.data_received(piece)
    loop.close()  # the future keeps its result
    return conn


def test_a_body_one_byte_per_read_is_framed_whole():
    body = b"data: " + b"x" * 20_000 + b"\n\n"
    conn = _fed([f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\n\r\n".encode()] + [body[i:i + 1] for i in range(len(body))])
    assert conn.done.result() is True and b"".join(d for _, d in conn.body()) == body


@pytest.mark.parametrize(("raw", "kind"), [
    (b"HTTP/1.1\r\n\r\n", "not an HTTP status line"),
    (b"HTTP/1.1 200 OK\r\ncontent-length: abc\r\n\r\n", "Content-Length is not a number"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "not hexadecimal"),
    (b"HTTP/1.1 200 OK\r\n" + b"x-a: " + b"a" * 70_000, "head over"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + b"1" * 9000, "chunk line over"),
])
def test_unreadable_framing_fails_the_exchange_not_the_callback(raw, kind):
    conn = _fed([raw[i:i + 997] for i in range(0, len(raw), 997)])
    with pytest.raises(Exception, match=kind):
        conn.done.result()
    assert conn.transport.closed


# -- /metrics ---------------------------------------------------------------------------------------------------
def test_nonfinite_and_absurd_samples_are_dropped():
    raw = parse_prometheus(_NONFINITE + "ok_total 3\nbig 1e16\n")
    assert raw == {"ok_total": 3.0}  # NaN, Inf, 1e308 + 1e308, 1e400, a negative counter, 1e16: all gone
    assert normalise(parse_prometheus("vllm:num_requests_waiting -2\nvllm:num_requests_running 1\n")) == {
        "running": 1.0, "server": "vllm"}
    assert samples_line({"t": 0.1, "queue": math.nan, "running": math.inf, "phase": "during"}) == '{"t": 0.1, "phase": "during"}\n'


def test_a_trickled_metrics_page_ends_at_the_deadline():
    with StubServer(StubBehaviour(hostile="metrics-trickle")) as stub:
        with pytest.raises(ScrapeError, match="^/metrics not read within 0.5 s$"):
            fetch_metrics(stub.base_url[:-3] + "/metrics", {}, deadline_s=0.5)


def test_a_metrics_redirect_is_refused_and_sends_nothing_on():
    with Catcher() as catcher, StubServer(StubBehaviour(hostile="redirect-302", redirect_to=catcher.url)) as stub:
        scraper = Scraper(stub.base_url, query={"sig": "query-secret"}, headers={"X-Api-Key": SECRET})
        scraper.scrape("before")
    assert scraper.samples == [] and f"redirect to {catcher.url}: not followed" in scraper.error
    assert "query-secret" not in scraper.error and "moved-token" not in scraper.error
    assert catcher.heads == []


# -- the false-PASS corpus: a hostile server's recorded errors count like every other failure -----------------------
SERVER_KINDS = [BAD, EMPTY, LARGE, ErrorKind.REDIRECT]


@pytest.mark.parametrize("kind", SERVER_KINDS)
@pytest.mark.parametrize("where", ["quality", "load"])
def test_hostile_errors_never_pass(kind, where, tmp_path, capsys):
    if where == "quality":
        run = Run([ok(i) for i in range(80)] + [err(i, kind) for i in range(80, 100)])
    else:
        run = Run([ok(i) for i in range(100)], load=[load_ok(i) for i in range(40)] + [load_err(i, kind) for i in range(40, 60)])
    code = main(["gate", str(run.build(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "FAIL" and code == EXIT_CODES["FAIL"], report.get("verdict_reason")


def test_a_send_that_raises_fails_its_own_request_only():
    async def send(item):
        if item.request.case_id == "c1":
            raise AttributeError("'list' object has no attribute 'get'")
        return Generation("ok")

    gens = asyncio.run(gather(send, [Scheduled(Request(f"c{i}", prompt="p")) for i in range(3)], 2))
    assert [g.error for g in gens] == [None, ErrorKind.CLIENT_ERROR, None] and "AttributeError" in gens[1].error_message
