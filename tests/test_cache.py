"""The response cache: reuses outputs across runs, never lies about latency, survives concurrent writers."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import GOOD, HANG_S, as_killed, replay_scaffold, write_jsonl
from releasegate.backends import Generation, Request
from releasegate.backends.response_cache import ResponseCache
from releasegate.record.metrics import compute_metric
from releasegate.record.records import CaseRecord, RunDir, Timing, Tokens
from releasegate.testing import StubBehaviour, StubServer

RUBRIC = """\
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.9}
  - {metric: ttft_ms_p95, op: "<=", threshold: 60000}
"""


def make_project(tmp_path: Path, base_url: str, *, cases: int = 6, cache: str = "cache: {path: cache.sqlite}\n",
                 extra: str = "", generation: str = "max_new_tokens: 8") -> Path:
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"} for i in range(cases)
    ])
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    (tmp_path / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  concurrency: 3\n  retries: 0\n{extra}"
        f"generation: {{{generation}}}\nsuites: [{{path: suite.jsonl, answer: {{type: regex, pattern: tok}}}}]\n"
        f"rubric: rubric.yaml\ncost: {{mode: self_hosted, hourly_usd: 2.0}}\n{cache}"
    )
    return tmp_path / "releasegate.yaml"


def check(cli, config: Path, run_id: str, *extra: str):
    code, out, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json", *extra)
    return code, json.loads(out), RunDir(config.parent / "reports" / run_id), err


def test_warm_cache_reports_latency_only_from_fresh_requests(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=4)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=6)
        code, cold, _, _ = check(cli, config, "cold")
        assert code == 0 and stub.requests == 6 and cold["counts"]["cached"] == 0
        assert cold["metrics"]["ttft_ms_p50"]["n"] == 6 and cold["metrics"]["output_tokens_per_s"]["value"]

        # warm: every response is cached, nothing is sent, nothing is timed
        code, warm, run, err = check(cli, config, "warm")
        assert stub.requests == 6
        assert warm["counts"]["cached"] == 6 and warm["counts"]["succeeded"] == 6
        for name in ("ttft_ms_p50", "ttft_ms_p95", "tpot_ms_p95", "itl_ms_p50", "e2e_ms_p95", "output_tokens_per_s_request_p50"):
            assert warm["metrics"][name]["n"] == 0 and warm["metrics"][name]["value"] is None, name
        assert warm["metrics"]["output_tokens_per_s"]["value"] is None
        assert warm["metrics"]["cost_per_1m_output_tokens"]["value"] is None
        assert warm["metrics"]["accuracy"]["value"] == 1.0  # quality still scored from the cached outputs
        ttft = next(c for c in warm["criteria"] if c["metric"] == "ttft_ms_p95")
        assert ttft["verdict"] == "insufficient"  # no fresh sample: the gate does not pretend it was fast
        assert all(r.cached and r.timing.ttft_ms is None for r in run.read_records())
        assert "6 responses came from the response cache" in err
        assert "from the response cache" in (run.path / "report.md").read_text()

        # two new cases: latency from exactly those two fresh requests
        write_jsonl(tmp_path / "suite.jsonl", [
            {"id": f"c{i}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"} for i in range(8)
        ])
        code, mixed, run, _ = check(cli, config, "mixed")
        assert stub.requests == 8
    assert mixed["counts"]["cached"] == 6 and mixed["metrics"]["ttft_ms_p50"]["n"] == 2
    assert mixed["metrics"]["output_tokens_per_s"]["n"] == 2
    fresh = [r for r in run.read_records() if not r.cached]
    assert [r.case_id for r in fresh] == ["c6", "c7"] and all(r.timing.ttft_ms for r in fresh)
    assert [r.case_id for r in run.read_records()] == [f"c{i}" for i in range(8)]  # case order kept
    assert run.read_info().sessions[-1]["cached"] == 6


def test_changed_rubric_is_rescored_from_the_cache_without_generating(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = make_project(tmp_path, stub.base_url)
        check(cli, config, "a")
        (tmp_path / "rubric.yaml").write_text(
            "criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.9}\n"
            "forbidden: [{category: tokens, phrases: [tok]}]\n"
        )
        code, report, _, _ = check(cli, config, "b")
        assert stub.requests == 6
    assert code == 0 and report["metrics"]["forbidden_rate"]["value"] == 1.0


@pytest.mark.parametrize("change", [
    {"generation": "max_new_tokens: 9"},
    {"generation": "max_new_tokens: 8, temperature: 0.5, seed: 1"},
    {"extra": "  extra_body: {lora: [{id: 0, scale: 0.5}]}\n"},
    {"extra": "  mode: chat\n  client: openai\n"},  # a client change is not an output change: still a hit
])
def test_cache_key_follows_generation_params_and_target(tmp_path, cli, change):
    with StubServer(StubBehaviour(tokens=4)) as stub:
        check(cli, make_project(tmp_path, stub.base_url), "a")
        check(cli, make_project(tmp_path, stub.base_url, **change), "b")
        sent = stub.requests
    assert sent == (6 if "client" in change.get("extra", "") else 12)


def test_failed_requests_are_never_cached(tmp_path, cli):
    with StubServer(StubBehaviour(fail_status=500)) as stub:
        config = make_project(tmp_path, stub.base_url)
        check(cli, config, "a")
        code, report, _, _ = check(cli, config, "b")
        assert stub.requests == 12 and report["counts"]["cached"] == 0


def test_no_cache_flag_and_no_cache_section(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = make_project(tmp_path, stub.base_url)
        check(cli, config, "a")
        check(cli, config, "b", "--no-cache")
        assert stub.requests == 12
        config = make_project(tmp_path, stub.base_url, cache="")
        check(cli, config, "c")
        assert stub.requests == 18


def test_a_resumed_no_cache_run_stays_off_the_cache(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = make_project(tmp_path, stub.base_url)
        check(cli, config, "warm")  # every response is now cached
        code, _, run, _ = check(cli, config, "measured", "--no-cache")
        assert stub.requests == 12
        lines = run.records_path.read_text().splitlines(keepends=True)
        run.records_path.write_text("".join(lines[:2]))  # as if killed after two cases
        as_killed(run.path)
        code, report, _ = cli("check", "--resume", run.path, "--no-progress", "--json")
        assert code == 0 and stub.requests == 16
    assert json.loads(report)["counts"]["cached"] == 0 and not any(r.cached for r in run.read_records())


def test_ttl_expires_entries(tmp_path, monkeypatch):
    import releasegate.backends.response_cache as cache_module

    clock = [1_000_000.0]
    monkeypatch.setattr(cache_module.time, "time", lambda: clock[0])
    req = Request("a", prompt="p")
    cache = ResponseCache(tmp_path / "c.sqlite", fingerprint="f", generation={"max_new_tokens": 8}, ttl_s=60)
    cache.put_many([(req, Generation("out", tokens=Tokens(output=1)))])
    clock[0] += 59
    assert cache.get(req).text == "out"
    clock[0] += 2
    assert cache.get(req) is None  # older than ttl_s: a miss
    cache.put_many([(req, Generation("new"))])  # and the fresh response replaces it
    assert cache.get(req).text == "new" and len(cache) == 1
    forever = ResponseCache(tmp_path / "c.sqlite", fingerprint="f", generation={"max_new_tokens": 8})
    clock[0] += 10**9
    assert forever.get(req).text == "new"


def test_cached_record_never_feeds_latency_even_with_a_timing(tmp_path):
    timing = Timing(ttft_ms=1.0, tpot_ms=1.0, e2e_ms=2.0, itl_ms=[1.0])
    fresh = CaseRecord(case_id="a", suite="s", input={"prompt": "p"}, output="x", timing=Timing(ttft_ms=50.0),
                       tokens=Tokens(output=5))
    cached = CaseRecord(case_id="b", suite="s", input={"prompt": "p"}, output="x", timing=timing,
                        tokens=Tokens(output=500), cached=True)
    run = {"generation_seconds": 1.0, "cost": {"mode": "api", "input_usd_per_1m": 1, "output_usd_per_1m": 1}}
    assert compute_metric("ttft_ms_p50", [fresh, cached], {}, run).value == 50.0  # the fresh sample only
    for name in ("e2e_ms_p50", "itl_ms_p50", "tpot_ms_p50", "output_tokens_per_s_request_p50"):
        assert compute_metric(name, [fresh, cached], {}, run).n == 0, name  # only the cached record had these
    assert compute_metric("output_tokens_per_s", [fresh, cached], {}, run).value == 5.0
    assert compute_metric("cost_usd_total", [fresh, cached], {}, run).n == 1


def test_a_broken_cache_file_is_input_error(tmp_path, cli):
    (tmp_path / "cache.sqlite").write_bytes(b"this is not a database" * 100)
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = make_project(tmp_path, stub.base_url)
        code, _, err = cli("check", "-c", config, "--run-id", "a", "--no-progress")
    assert code == 2 and "cache.sqlite" in err and "--no-cache" in err


WRITER = textwrap.dedent("""
    import sys
    from releasegate.backends import Generation, Request
    from releasegate.backends.response_cache import ResponseCache
    path, who = sys.argv[1], sys.argv[2]
    cache = ResponseCache(path, fingerprint="f", generation={})
    for batch in range(40):
        cache.put_many([(Request(f"{who}-{batch}-{i}", prompt=f"{who} {batch} {i}"), Generation(f"{who}{batch}{i}"))
                        for i in range(10)])
        assert cache.get(Request("x", prompt=f"{who} {batch} 3")).text == f"{who}{batch}3"
    assert cache.error is None, cache.error
""")


def test_two_processes_write_the_cache_at_once(tmp_path):
    path = tmp_path / "shared.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), who], stderr=subprocess.PIPE, text=True)
             for who in ("a", "b")]
    for proc in procs:
        _, err = proc.communicate(timeout=HANG_S)
        assert proc.returncode == 0, err
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 800
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _replay_project(root: Path) -> Path:

    config = replay_scaffold(root)
    config.write_text(config.read_text() + "cache: {path: shared/cache.sqlite}\n")
    rows = [{"id": f"e{i}", "messages": [{"role": "user", "content": f"m {i}"}], "expected": {"intent": "billing", "priority": "high"}}
            for i in range(300)]
    write_jsonl(root / "suites" / "example.jsonl", rows)
    write_jsonl(root / "responses.jsonl", [{"id": r["id"], "output": GOOD} for r in rows])
    return config


def test_two_checks_at_once_keep_their_run_dirs_and_the_shared_cache_intact(tmp_path):
    config = _replay_project(tmp_path)
    env = {**os.environ, "COLUMNS": "200"}

    def start(run_id: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "releasegate", "check", "-c", str(config), "--run-id", run_id,
                                 "--no-progress"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env=env)

    procs = [start("one"), start("two"), start("one")]  # "one" twice: only one may get the directory
    results = [(p.wait(120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stderr.close()
    codes = sorted(code for code, _ in results)
    assert codes.count(2) == 1, results  # the second "one" was refused, nothing else failed
    refused = next(err for code, err in results if code == 2)
    assert "already exists" in refused and len(refused.strip().splitlines()) == 1
    for name in ("one", "two"):
        run = RunDir(tmp_path / "reports" / name)
        assert [r.case_id for r in run.read_records(dedup=False)] == [f"e{i}" for i in range(300)]
        assert run.read_info().status == "complete"
    with sqlite3.connect(tmp_path / "shared" / "cache.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 300
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
