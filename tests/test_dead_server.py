"""A dead or wrong server stops the run: a stub killed mid-run (quality phase, load phase, capacity sweep, a served
variant) ends `check` with exit 4 and one line (what failed, how often, the last error), long before every request
it had left was sent; what was recorded stays and `check --resume` finishes the run. A plain HTTP server is named
not OpenAI-compatible; a `model:` the server does not list is a warning, an error under `target.strict_model`."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from releasegate.record.records import RunDir
from releasegate.testing import StubBehaviour, StubServer
from test_openai_backend import CLIENTS, project

LOAD = "load: {concurrency: 4, requests: 200, warmup: 2}\n"


def run_check(cli, config: Path, *more: str):
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", *more)
    return code, out, err, RunDir(config.parent / "reports" / "r")


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def sent_of(line: str) -> int:
    """The requests the run sent, from the line's 'F of N requests failed'."""
    match = re.search(r"of ([\d,]+) requests failed", line)
    assert match, line
    return int(match.group(1).replace(",", ""))


@pytest.mark.parametrize("client", CLIENTS)
def test_a_server_killed_mid_load_stops_the_run_and_resume_finishes_it(tmp_path, cli, client):
    # 6 quality cases and 2 warm-up requests answered, then 20 load requests; then the server is gone
    with StubServer(StubBehaviour(tokens=4, die_after=28)) as stub:
        config = project(tmp_path, stub.base_url, client=client, load=LOAD)
        code, _, err, run = run_check(cli, config)
        port = stub.port
    line = one_line(err)
    assert code == 4 and line.startswith("error: load phase: the target at http://127.0.0.1:")
    assert "requests in a row could not connect" in line and "(connection_error" in line and "last: connection_error: " in line
    assert f"check --resume {run.path}" in line
    assert sent_of(line) < 100  # of the 200 planned: the run stopped, it did not fail its way through them
    info = run.read_info()
    assert info.status == "failed" and info.load_phase is None
    assert len(run.read_records()) == 6 and not (run.path / "load.jsonl").exists()
    code, out, _ = cli("gate", run.path, "--json")  # judged as it is: not whole, never a pass
    cut = json.loads(out)["counts"]["phases"]["load"]  # the cut phase's requests, kept in the attempts ledger
    assert cut["failed"] > 0 and json.loads(out)["verdict"] in ("INCONCLUSIVE", "TARGET_ERROR") and code in (3, 4)
    # the server is back: the run is finished from where it stopped; the phase is run again whole, and the
    # requests that failed while the server was gone still count: no PASS at error_rate 0
    with StubServer(StubBehaviour(tokens=4), port=port):
        code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json")
    load = json.loads(out)["counts"]["phases"]["load"]
    assert (load["requests"], load["failed"]) == (200 + cut["requests"], cut["failed"])
    assert code == 1 and json.loads(out)["verdict"] == "FAIL", err
    assert len(run.read_records("load.jsonl")) == 200  # latency: the phase run whole


def test_a_server_killed_mid_quality_phase_keeps_what_it_answered(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=4, die_after=5)) as stub:
        config = project(tmp_path, stub.base_url, cases=200)
        config.write_text(config.read_text().replace("retries: 2", "retries: 0"))
        code, _, err, run = run_check(cli, config)
        port = stub.port
    line = one_line(err)
    assert code == 4 and line.startswith("error: quality phase: the target at ")
    records = run.read_records()
    assert 15 <= len(records) < 200 and sent_of(line) == len(records)  # journaled: each case sent, no other
    assert sum(r.error is None for r in records) == 5 and {r.error for r in records} == {None, "connection_error"}
    with StubServer(StubBehaviour(tokens=4), port=port):
        code, out, err = cli("check", "--resume", run.path, "--retry-errors", "--no-progress", "--json")
    assert code == 1 and len({r.case_id for r in run.read_records()}) == 200  # the failed attempts still count


def test_a_server_killed_mid_sweep_stops_the_sweep(tmp_path, cli):
    sweep = "load: {sweep: {start_rps: 40, max_rps: 160, requests_per_step: 60, step_s: 1, slo: {ttft_ms_p95: 5000}}}\n"
    with StubServer(StubBehaviour(tokens=4, die_after=6 + 80)) as stub:  # the first step whole, then dead
        code, _, err, run = run_check(cli, project(tmp_path, stub.base_url, load=sweep))
    line = one_line(err)
    assert code == 4 and line.startswith("error: capacity sweep, step 2 at 80 req/s: the target at ")
    assert run.read_info().load_phase is None  # a sweep is measured whole or not at all: a resume runs it again


def test_the_progress_lines_count_the_failures_as_they_happen(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("RELEASEGATE_PROGRESS_INTERVAL_S", "0.05")
    with StubServer(StubBehaviour(tokens=4, fail_status=503, fail_every=2, itl_ms=5)) as stub:
        config = project(tmp_path, stub.base_url, load="load: {concurrency: 2, requests: 200}\n")
        config.write_text(config.read_text().replace("retries: 2", "retries: 0"))
        code, out, err = cli("check", "-c", config, "--run-id", "r")
    assert code == 1
    counted = re.findall(r"^load: ([\d,]+)/200 \(\d+%\), ([\d,]+) failed, ", out, re.MULTILINE)
    assert counted and all(0 < int(f) <= int(d) for d, f in counted)
    assert re.search(r"^load: done 200/200 in .*, 100 failed, ", out, re.MULTILINE)
    assert all(len(line) <= 80 for line in out.splitlines() if line.startswith("load:"))


def test_a_served_variant_whose_server_dies_is_a_row_of_its_own(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=4)) as ref, StubServer(StubBehaviour(tokens=4, die_after=8)) as dying:
        config = project(tmp_path, ref.base_url, load="load: {concurrency: 2, requests: 200}\n")
        config.write_text(config.read_text() + (
            "variants:\n"
            f"  - {{name: ref, server: endpoint, base_url: '{ref.base_url}', model: stub}}\n"
            f"  - {{name: dying, server: endpoint, base_url: '{dying.base_url}', model: stub}}\n"))
        code, out, err = cli("matrix", "-c", config, "--run-id", "plan", "--no-progress", "--allow-pending", "--json")
    rows = {r["variant"]: r for r in json.loads(out)["variants"]}
    assert rows["dying"]["verdict"] == "TARGET_ERROR" and not rows["dying"]["eligible"]
    why = rows["dying"]["why_not"]
    assert "load phase: the target at" in why and "requests in a row could not connect" in why
    kept = RunDir(tmp_path / "reports" / "plan" / "dying")
    assert len(kept.read_records()) == 6 and kept.read_info().status == "failed"  # resumable as it is
    assert rows["ref"]["verdict"] != "TARGET_ERROR"


class _NotOpenAI(BaseHTTPRequestHandler):
    """A plain web server: 404 HTML for every path, or (`post_status` 200) an HTML page for every POST."""

    post_status = 404

    def _page(self, status: int) -> None:
        body = b"<!DOCTYPE html><html><body><h1>Not Found</h1></body></html>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._page(404)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._page(self.post_status)

    def log_message(self, *args) -> None:
        pass


def plain_server(post_status: int) -> ThreadingHTTPServer:
    handler = type("Handler", (_NotOpenAI,), {"post_status": post_status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize(("post_status", "kind"), [(404, "http_404"), (200, "bad_response")])
@pytest.mark.parametrize("client", CLIENTS)
def test_a_server_that_is_not_openai_compatible_is_named_as_such(tmp_path, cli, post_status, kind, client):
    server = plain_server(post_status)
    try:
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        code, _, err, run = run_check(cli, project(tmp_path, base_url, client=client, cases=100))
    finally:
        server.shutdown()
        server.server_close()
    line = one_line(err)
    assert code == 4 and f"the server at {base_url} is not OpenAI-compatible (GET /models: HTTP 404" in line
    sent = sent_of(line)  # the first 10, and those in flight when the 10th came back (concurrency 3)
    assert f"the first 10 requests all failed; {sent} of {sent} requests failed ({kind} {sent})" in line
    if kind == "bad_response":
        assert "not an event stream (no data: line): '<!DOCTYPE html>" in line
    assert 10 <= len(run.read_records()) == sent < 13  # the cases left were never sent


def test_a_model_the_server_does_not_list_is_a_warning_and_an_error_when_strict(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = project(tmp_path, stub.base_url)
        config.write_text(config.read_text().replace("model: stub", "model: stubb"))
        code, out, err, _ = run_check(cli, config)
        assert code == 0
        warning = f"warning: target.model 'stubb' is not among the models {stub.base_url}/models lists ('stub')"
        assert warning in out
        code, out, err = cli("validate", "-c", config, "--probe")
        assert code == 0 and warning in out and f"reached target: stubb at {stub.base_url}" in out
        for command in (("check", "--run-id", "strict", "--no-progress"), ("validate", "--probe")):
            code, out, err = cli(*command, "-c", config, "--set", "target.strict_model=true")
            line = one_line(err)
            assert code == 2 and f"{config}: field 'target.model': target.model 'stubb' is not among" in line
            assert "set target.strict_model: false" in line
    assert not (tmp_path / "reports" / "strict").exists()


def test_a_server_that_answers_some_requests_never_stops_the_run(tmp_path, cli):
    # every other request refused with 503 and no retry: a struggling server, measured to the end
    with StubServer(StubBehaviour(tokens=4, fail_status=503, fail_every=2)) as stub:
        config = project(tmp_path, stub.base_url, cases=60)
        config.write_text(config.read_text().replace("retries: 2", "retries: 0"))
        code, _, _, run = run_check(cli, config)
    records = run.read_records()
    assert code == 1 and len(records) == 60 and sum(r.error == "http_5xx" for r in records) == 30


def test_stop_after_errors_0_never_stops(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=4, die_after=2)) as stub:
        config = project(tmp_path, stub.base_url, cases=40, extra="  stop_after_errors: 0\n")
        config.write_text(config.read_text().replace("retries: 2", "retries: 0"))
        code, out, err, run = run_check(cli, config, "--json")
    assert code == 4 and json.loads(out)["verdict"] == "TARGET_ERROR" and len(run.read_records()) == 40


def test_what_a_hostile_server_says_reaches_the_line_as_one_short_line():
    from releasegate.backends import Generation
    from releasegate.backends._reach import ModelList, unlisted_model
    from releasegate.backends._target_watch import TargetWatch
    from releasegate.border.http import server_said

    watch = TargetWatch(3)
    for _ in range(3):
        watch.saw(Generation(None, error="http_404", error_message="HTTP 404: \x1b[2J\r\nforged line\u202e" + "x" * 9999))
    line = watch.stop_line("http://h/v1", ModelList(None, "HTTP 404"))
    assert line is not None and "not OpenAI-compatible" in line and len(line) < 400
    assert not re.search(r"[\x00-\x1f\x7f\u202e]", line) and "forged line" in line
    names = ModelList(("\x1b[31mred\n" + "n" * 10**6,) * 20)
    warning = unlisted_model("m", names, "http://h/v1")
    assert warning is not None and len(warning) < 1000 and "\n" not in warning and "\x1b" not in warning
    assert unlisted_model("m", ModelList(()), "http://h/v1").endswith("lists (none)")
    assert unlisted_model("m", ModelList(None, "HTTP 404"), "http://h/v1") is None  # no list: nothing to check
    said = server_said(b'{"error": {"message": "\\u001b[2J' + b"y" * 5000 + b'"}}')
    assert said.startswith(": ␛[2J") and len(said) <= 162
    assert server_said(b"<html>\n<body>Bad\tGateway</body>") == ": <html> <body>Bad Gateway</body>"
    assert server_said(b"") == ""


@pytest.mark.parametrize("value", ["-1", "1.5", "ten"])
def test_stop_after_errors_must_be_a_count(tmp_path, cli, value):
    config = project(tmp_path, "http://127.0.0.1:9/v1")
    code, _, err = cli("validate", "-c", config, "--set", f"target.stop_after_errors={value}")
    assert code == 2 and "stop_after_errors" in one_line(err)


def test_a_terminal_bar_counts_the_failures_too():
    import io

    from rich.console import Console

    from releasegate.run.progress import count_done, progress_bar

    screen = io.StringIO()
    with progress_bar(Console(file=screen, force_terminal=True, width=100), True) as bar:
        task = bar.add_task("load: closed loop", total=2000)
        for i in range(1197):
            count_done(bar, task, failed=i >= 7)
    assert "1197/2000" in screen.getvalue() and "1,190 failed" in screen.getvalue()
