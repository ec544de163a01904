"""The attempts ledger: every attempt of every session counts in `error_rate`. A load phase cut short and run
again whole by `check --resume` keeps its failed attempts; a cached answer brings the whole tally of the session
that produced it, so reruns through the response cache never wash a failing server's errors away."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from releasegate.record.evidence import attempt_counts
from releasegate.record.gate_report import as_report
from releasegate.record.ledger import read_ledger
from releasegate.record.records import CaseRecord, RunDir
from releasegate.report.terminal import request_summary
from releasegate.testing import StubBehaviour, StubServer
from test_resume import make_project


def _report(run: RunDir) -> dict:
    return json.loads((run.path / "report.json").read_text())


def test_a_load_phase_cut_short_keeps_its_failures_after_the_resume(tmp_path, cli):
    """The target dies during the load phase (its progress said some failed); the resume runs the phase again
    whole on a healthy server. The failed attempts of the cut phase still count: no PASS at error_rate 0."""
    cases, answered_load = 4, 3
    dying = StubBehaviour(ttft_ms=2, itl_ms=1, tokens=3, die_after=cases + answered_load)
    with StubServer(dying) as stub:
        config = make_project(tmp_path, stub.base_url, cases=cases, concurrency=1,
                              extra="  stop_after_errors: 3\n  retries: 0\n",
                              load="load: {concurrency: 1, requests: 12}\n")
        code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
        port = stub.port
    assert code == 4, err
    run = RunDir(tmp_path / "reports" / "r")
    cut = read_ledger(run.path, None)
    failed_before = sum(o is not None for line in cut for o in line.outcomes)
    assert failed_before >= 1 and all(line.phase == "load" for line in cut)
    with StubServer(StubBehaviour(ttft_ms=2, itl_ms=1, tokens=3), port=port):
        code, _, err = cli("check", "--resume", run.path, "--no-progress")
    assert code == 1, err  # `error_rate <= 0.0` of the rubric: the cut phase's failures still count
    report = _report(run)
    load = report["counts"]["phases"]["load"]
    assert load["failed"] == failed_before and load["requests"] == 12 + len(cut)
    assert load["ledger"]["load"]["failed"] == failed_before
    assert report["metrics"]["error_rate_load"]["value"] > 0
    assert len(run.read_records("load.jsonl")) == 12  # the latency window is the phase run whole


def test_cache_reruns_of_a_failing_server_never_wash_its_errors_away(tmp_path, cli):
    """A server failing 30% of requests, run again and again with new run ids through the response cache: each
    rerun sends only what the cache has no answer for, and takes the rest from earlier sessions. Each earlier
    session counts whole, so the error rate stays the server's own and the default guard never passes."""
    from test_attempts import _check, _project

    with StubServer(StubBehaviour(fail_status=500, fail_every=10 / 3, ttft_ms=1, itl_ms=0.5, tokens=3)) as stub:
        config = _project(tmp_path, stub.base_url, cases=40)
        config.write_text(config.read_text() + "cache: {path: cache.sqlite}\n")
        reports = [_check(cli, "-c", config, "--run-id", f"r{k}") for k in range(4)]
        sent = stub.requests
    assert all(report["verdict"] != "PASS" for _, report in reports)
    code, last = reports[-1]
    assert last["counts"]["cached"] > 30  # most answers came from the cache
    # the last run stands on every earlier session: every request the server ever got counts, once
    quality = last["counts"]["phases"]["quality"]
    assert quality["requests"] == sent
    failed_total = sum(report["counts"]["phases"]["quality"]["failed"] - report["counts"]["phases"]["quality"]
                       .get("ledger", {}).get("quality", {}).get("failed", 0) for _, report in reports)
    assert quality["failed"] == failed_total
    assert last["metrics"]["error_rate"]["value"] == pytest.approx(failed_total / sent) and failed_total / sent > 0.25
    assert (code, last["verdict"]) == (1, "FAIL")
    assert "error_rate (default guard)" in {c["name"] for c in last["criteria"] if c["verdict"] == "fail"}
    # the terminal says where the attempts came from: the sessions of r0, r1 and r2
    line = request_summary(as_report(last))
    assert all(f"cache session r{k}/0-" in line for k in range(3)) and "from other sessions" in line


# --- property: no sequence of runs, interrupts, resumes, retries or cache reruns lowers the failed share ----------

class _Server:
    """Fails a fixed set of the requests it gets: the i-th request fails iff `pattern[i % len(pattern)]`."""

    def __init__(self, pattern: list[bool]) -> None:
        self.pattern, self.sent = pattern, []

    def send(self) -> str | None:
        kind = "http_5xx" if self.pattern[len(self.sent) % len(self.pattern)] else None
        self.sent.append(kind)
        return kind


def _record(case_id: str, kind: str | None, cached_from=None) -> CaseRecord:
    return CaseRecord(case_id=case_id, suite="s", input={"prompt": case_id}, output=None if kind else "tok",
                      error=kind, cached=cached_from is not None,
                      produced_by=cached_from.produced_by if cached_from else None,
                      produced_in=cached_from.produced_in if cached_from else None)


def _session(root, cache_path, server: _Server, run_id: str, cases: list[str], limit: int | None) -> None:
    """One `check` session of run `run_id` as generation.py runs it: the cache looked up for the cases to do,
    the sessions behind the hits written to the ledger, fresh requests sent, each recorded, then cached with the
    session's tally. `limit`: interrupted after that many fresh requests (what was recorded is kept)."""
    from releasegate.backends import Generation, Request
    from releasegate.backends.response_cache import ResponseCache
    from releasegate.record.evidence import attempt_outcomes, failure
    from releasegate.record.records import RunInfo, Timing
    from releasegate.run.generation import _cache_batch, cache_session_name, keep_sources

    run = RunDir(root / run_id)
    if not run.path.exists():
        run.create()
        run.write_info(RunInfo(run_id=run_id, created_at="2026-01-01T00:00:00Z", target="stub", backend="openai"))
    info = run.read_info()
    done = {r.case_id: r for r in run.read_records(required=False)}
    todo = [c for c in cases if c not in done or failure(done[c]) is not None]
    if not todo:
        return
    info.sessions.append({"mode": "resume", "cache_session": cache_session_name(run_id, len(info.sessions))})
    run.write_info(info)
    own = [s["cache_session"] for s in info.sessions]
    cache = ResponseCache(cache_path, fingerprint="f", generation={}, session=own[-1], stood_on=tuple(own[:-1]))
    try:
        hits = {c: g for c in todo if (g := cache.get(Request(c, None, c))) is not None}
        keep_sources(run, info, cache)
        sent = 0
        for case in todo:
            if case in hits:
                run.append([_record(case, None, hits[case])])
                continue
            if limit is not None and sent >= limit:
                continue  # interrupted: never sent
            sent += 1
            kind = server.send()
            record = _record(case, kind)
            run.append([record])
            gen = Generation(None if kind else "tok", timing=Timing(), error=kind)
            _cache_batch(cache, [(SimpleNamespace(id=case, messages=None, prompt=case, tools=None), record)], {case: gen})
        assert attempt_outcomes  # (the tally is the generation code's own, `_cache_batch`)
    finally:
        cache.close()


def _counted(run_path) -> dict:
    from releasegate.scorers import run_ledger

    if not (run_path / "records.jsonl").exists():  # interrupted before anything was recorded
        return {"attempts": 0, "failed": 0}
    records, ledger = run_ledger(RunDir(run_path))
    return attempt_counts([*records, *ledger], cached=False)


_op = st.tuples(st.sampled_from(["new", "resume"]), st.integers(0, 5), st.one_of(st.none(), st.integers(0, 6)))


@settings(max_examples=40, deadline=None)
@given(pattern=st.lists(st.booleans(), min_size=1, max_size=12), cases=st.integers(1, 8),
       ops=st.lists(_op, min_size=1, max_size=8))
def test_no_sequence_of_sessions_lowers_the_failed_share(tmp_path_factory, pattern, cases, ops):
    """Runs with new run ids through one response cache, interrupted (`limit`) and resumed with the failed cases
    sent again, against a server failing a fixed set of requests: the run whose session came last counts every
    request the server got, each once, so its failed share is the server's own; every run counts at least its own
    failed requests."""
    root = tmp_path_factory.mktemp("ledger")
    server, names, last = _Server(pattern), [f"c{i}" for i in range(cases)], None
    own_failed: dict[str, int] = {}
    for kind, which, limit in ops:
        known = sorted(own_failed)
        run_id = f"r{len(known)}" if kind == "new" or not known else known[which % len(known)]
        before = len(server.sent)
        _session(root, root / "cache.sqlite", server, run_id, names, limit)
        own_failed[run_id] = own_failed.get(run_id, 0) + sum(k is not None for k in server.sent[before:])
        if len(server.sent) > before:
            last = run_id
    for run_id, failed in own_failed.items():
        assert _counted(root / run_id)["failed"] >= failed
    if last is not None:
        counted = _counted(root / last)
        assert (counted["attempts"], counted["failed"]) == (len(server.sent), sum(k is not None for k in server.sent))


def _gen(kind: str | None, retried: list[str]):
    from releasegate.backends import Generation
    from releasegate.record.records import Timing

    return Generation(None if kind else "tok", timing=Timing(attempts=len(retried) + 1, retried_errors=retried),
                      error=kind)


@settings(max_examples=40, deadline=None)
@given(pattern=st.lists(st.booleans(), min_size=1, max_size=10), planned=st.integers(1, 12),
       cuts=st.lists(st.tuples(st.integers(0, 11), st.booleans()), max_size=4), retries=st.integers(0, 2))
def test_a_load_phase_cut_and_resumed_counts_every_attempt_and_times_only_the_whole_one(
        tmp_path_factory, pattern, planned, cuts, retries):
    """Load phases cut after any number of completed requests (by a kill that may tear the line being written),
    each resumed by one that runs the phase again, then one that finishes: the error count holds every request of
    every session, in-run retries too; load.jsonl, the latency window, holds only the finished phase's."""
    from releasegate.backends import Request
    from releasegate.record.ledger import LEDGER, LoadLedger
    from releasegate.scale.traffic import load_record

    run = RunDir(tmp_path_factory.mktemp("load"))
    server = _Server(pattern)

    def send(ledger: LoadLedger):  # one load request, retried in-run up to `retries` times while it fails
        retried: list[str] = []
        while (kind := server.send()) is not None and len(retried) < retries:
            retried.append(kind)
        gen = _gen(kind, retried)
        ledger.add(gen)
        return gen

    for session, (done, torn) in enumerate(cuts):
        ledger = LoadLedger(run.path, session)
        for _ in range(min(done, planned)):
            send(ledger)
        ledger.close()
        if torn:  # killed while writing a line
            with (run.path / LEDGER).open("ab") as fh:
                fh.write(b'{"phase": "load", "sess')
    final = LoadLedger(run.path, len(cuts))
    gens = [send(final) for _ in range(planned)]
    final.close()
    run.append([load_record(Request(f"l{i}", None, "x"), g) for i, g in enumerate(gens)], "load.jsonl")
    load = run.read_records("load.jsonl", required=False)
    ledger = read_ledger(run.path, load_session=len(cuts))
    counted = attempt_counts([*load, *ledger], cached=False)
    assert (counted["attempts"], counted["failed"]) == (len(server.sent), sum(k is not None for k in server.sent))
    assert len(load) == planned and all(line.session != len(cuts) for line in ledger)


def test_a_run_whose_ledger_was_removed_or_damaged_never_passes(tmp_path, cli):
    """attempts.jsonl is sealed evidence: removing it (and with it the failures it holds) is an edit the gate
    names, never a PASS; a line no run writes is refused naming the file and line (exit 2, no traceback)."""
    from test_attempts import _check, _project

    with StubServer(StubBehaviour(fail_status=500, fail_every=4, ttft_ms=1, itl_ms=0.5, tokens=3)) as stub:
        config = _project(tmp_path, stub.base_url, cases=8)
        config.write_text(config.read_text() + "cache: {path: cache.sqlite}\n")
        (tmp_path / "rubric.yaml").write_text((tmp_path / "rubric.yaml").read_text() + "  - {metric: error_rate, "
                                              "op: '<=', threshold: 0.1}\n")
        _check(cli, "-c", config, "--run-id", "a")
        code, report = _check(cli, "-c", config, "--run-id", "b")
    run = RunDir(tmp_path / "reports" / "b")
    # b sent again only what a failed: 2 requests, none failed; a's 8 with its 2 failures count too
    assert report["counts"]["phases"]["quality"]["ledger"]["quality"]["failed"] == 2 and code == 1
    ledger = (run.path / "attempts.jsonl").read_bytes()
    (run.path / "attempts.jsonl").write_bytes(ledger + b'{"phase": "quality", "session": "x"}\n')
    code, _, err = cli("gate", run.path)
    assert code == 2 and "attempts.jsonl" in err and ":" in err and "Traceback" not in err
    (run.path / "attempts.jsonl").unlink()
    code, out, err = cli("gate", run.path, "--json")
    assert code != 0 and json.loads(out)["verdict"] != "PASS", err


def test_ctrl_c_in_the_load_phase_keeps_its_failed_requests_for_the_resume(tmp_path, children):
    """Ctrl-C to a real `check` process while its load phase runs (its progress has counted failures): the resume
    runs the phase again whole on a server that no longer fails, and the error rate still holds the failures."""
    from test_interrupts import _lines, _start, _stopped, _wait

    cases, early = 4, 10  # the stub fails every other one of its first `early` requests, then none
    stub = StubBehaviour(ttft_ms=20, itl_ms=1, tokens=3, fail_status=500, fail_every=2, fail_count=cases + early)
    with StubServer(stub) as server:
        config = make_project(tmp_path, server.base_url, cases=cases, concurrency=1, extra="  retries: 0\n",
                              load="load: {concurrency: 1, requests: 400}\n")
        (tmp_path / "rubric.yaml").write_text(  # the load phase alone decides: its failures are all before the cut
            'criteria:\n  - {metric: accuracy, op: ">=", threshold: 0.5}\n'
            '  - {metric: error_rate_quality, op: "<=", threshold: 0.6}\n'
            '  - {metric: error_rate_load, op: "<=", threshold: 0.0}\n')
        run = RunDir(tmp_path / "reports" / "r")
        proc, log = _start(children, tmp_path, "check", "-c", str(config), "--run-id", "r")
        _wait(lambda: _lines(run.path / "attempts.jsonl") > early, proc, log)
        _stopped(proc, log)
        cut = read_ledger(run.path, None)
        failed_before = sum(o is not None for line in cut for o in line.outcomes)
        assert failed_before >= 2 and not (run.path / "load.jsonl").exists()
        proc, log = _start(children, tmp_path, "check", "--resume", str(run.path))
        assert proc.wait(300) == 1, log.read_text()  # `error_rate_load <= 0.0`: the cut phase's failures count
    report = _report(run)
    load = report["counts"]["phases"]["load"]
    assert (load["requests"], load["failed"]) == (400 + len(cut), failed_before)
    assert len(run.read_records("load.jsonl")) == 400 and report["metrics"]["error_rate_load"]["value"] > 0
