"""A faulty endpoint, end to end: `releasegate check` against the stub server with injected faults. None of these
runs may end PASS; a target that fails most requests ends TARGET_ERROR, exit 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.record.records import RunDir
from releasegate.testing import StubBehaviour, StubServer

NO_ERROR_CRITERION = """\
latency_from: {phase}
review: {{required_domains: []}}
criteria:
  - {{metric: accuracy, op: ">=", threshold: 0.5}}
  - {{metric: ttft_ms_p50, op: "<=", threshold: 5000}}
"""


def project(root: Path, base_url: str, *, rubric: str = NO_ERROR_CRITERION, phase: str = "auto", load: str = "",
            cases: int = 6, retries: int = 2) -> Path:
    write_jsonl(root / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"} for i in range(cases)
    ])
    (root / "rubric.yaml").write_text(rubric.format(phase=phase))
    (root / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  concurrency: 3\n"
        f"  retries: {retries}\n  timeout_s: 10\n  stall_timeout_s: 0.5\n"
        f"generation: {{max_new_tokens: 16}}\n"
        f"suites: [{{path: suite.jsonl, answer: {{type: regex, pattern: tok}}}}]\nrubric: rubric.yaml\n{load}"
    )
    return root / "releasegate.yaml"


def check(cli, config: Path):
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert "Traceback" not in err
    report = json.loads(out)
    assert report["exit_code"] == code
    return code, report, RunDir(config.parent / "reports" / "r")


def test_load_phase_failures_reach_the_gate(tmp_path, cli):
    """40% of the load phase's streams dropped: the rubric has no error criterion, the default guard fails."""
    behaviour = StubBehaviour(tokens=4, drop_after=2, fail_every=2.5, fail_count=-1)
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, load="load: {concurrency: 4, requests: 20}\n", retries=0)
        code, report, run = check(cli, config)
    load = report["counts"]["phases"]["load"]
    assert load["requests"] == 20 and load["failed"] >= 6 and "stream_interrupted" in load["errors"]
    assert report["verdict"] == "FAIL" and code == 1
    guard = next(c for c in report["criteria"] if c.get("origin") == "guard")
    assert guard["verdict"] == "fail" and guard["value"] > 0.2
    assert report["latency_excluded"]["requests"] - report["latency_excluded"]["measured"] == load["failed"]


@pytest.mark.parametrize(("behaviour", "kind"), [
    (StubBehaviour(fail_status=500), "http_5xx"),
    (StubBehaviour(fail_status=429, retry_after=0.01), "http_429"),
])
def test_every_request_failing_is_a_target_error(tmp_path, cli, behaviour, kind):
    with StubServer(behaviour) as stub:
        code, report, _ = check(cli, project(tmp_path, stub.base_url, rubric=NO_ERROR_CRITERION.replace(
            "review:", "allow_insufficient: true\nreview:"), retries=1))
    assert report["verdict"] == "TARGET_ERROR" and code == 4
    # 6 cases, each sent twice (retries: 1): every attempt is a failed request
    all_phases = report["counts"]["phases"]["all"]
    assert kind in report["target_error"] and (all_phases["failed"], all_phases["failed_cases"]) == (12, 6)
    assert "12 of 12 requests" in report["target_error"]


def test_a_server_dying_mid_run_is_a_target_error(tmp_path, cli):
    with StubServer(StubBehaviour(die_after=2)) as stub:
        code, report, run = check(cli, project(tmp_path, stub.base_url, retries=0))
    assert code == 4 and report["verdict"] == "TARGET_ERROR"
    assert len(run.read_records()) == 6  # every case recorded, the failures with their error class


def test_retries_count_in_the_latency_the_user_saw(tmp_path, cli):
    """The first 3 of 6 requests get a 429 with retry-after 0.3 s (their retries come later, so they succeed):
    TTFT runs from the first attempt's send."""
    rubric = NO_ERROR_CRITERION.replace("ttft_ms_p50, op: \"<=\", threshold: 5000",
                                        "ttft_ms_p95, op: \"<=\", threshold: 200")
    with StubServer(StubBehaviour(fail_status=429, retry_after=0.3, fail_count=3)) as stub:
        code, report, run = check(cli, project(tmp_path, stub.base_url, rubric=rubric, retries=2))
    records = run.read_records()
    retried = [r for r in records if r.timing.attempts > 1]
    assert len(retried) == 3 and all(r.output is not None for r in records)
    for r in retried:
        assert r.timing.ttft_ms >= 300 > r.timing.ttft_last_attempt_ms
    assert report["verdict"] == "FAIL" and code == 1  # p95 TTFT includes the 300 ms waits


def test_partial_failures_without_an_error_criterion_fail(tmp_path, cli):
    """A third of the requests fail for good: no error criterion in the rubric, still not a PASS."""
    with StubServer(StubBehaviour(fail_status=503, fail_every=3)) as stub:
        code, report, _ = check(cli, project(tmp_path, stub.base_url, retries=0))
    assert report["counts"]["phases"]["quality"]["failed"] == 2
    assert report["verdict"] == "FAIL" and code == 1
