"""The attempts ledger: every attempt of every session counts in `error_rate`. A load phase cut short and run
again whole by `check --resume` keeps its failed attempts; a cached answer brings the whole tally of the session
that produced it, so reruns through the response cache never wash a failing server's errors away."""

from __future__ import annotations

import json

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from releasegate.record.evidence import attempt_counts
from releasegate.record.ledger import LedgerLine, covered, read_ledger
from releasegate.record.records import CaseRecord, RunDir
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
