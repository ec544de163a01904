"""Never lose a run: the journal survives kill -9 at any point, `check --resume` finishes it with no lost and no
duplicated records, `--retry-errors` re-runs only what failed, and status and generation time stay honest."""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest

from children import Children
from conftest import HANG_S, as_killed, write_jsonl
from releasegate.errors import InputError
from releasegate.record.records import CaseRecord, RunDir, RunInfo
from releasegate.testing import StubBehaviour, StubServer

RUBRIC = """\
criteria:
  - {metric: accuracy, op: ">=", threshold: 0.9}
  - {metric: error_rate, op: "<=", threshold: 0.0}
  - {metric: ttft_ms_p95, op: "<=", threshold: 60000}
"""


def make_project(tmp_path: Path, base_url: str, *, cases: int = 6, concurrency: int = 3, extra: str = "",
                 load: str = "") -> Path:
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": f"c{i:03d}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"}
        for i in range(cases)
    ])
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    (tmp_path / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  concurrency: {concurrency}\n"
        f"  timeout_s: 20\n{extra}generation: {{max_new_tokens: 8}}\n"
        f"suites: [{{path: suite.jsonl, answer: {{type: regex, pattern: tok}}}}]\nrubric: rubric.yaml\n{load}"
    )
    return tmp_path / "releasegate.yaml"


def raw_ids(run: RunDir) -> list[str]:
    return [r.case_id for r in run.read_records(dedup=False, required=False)]


class Check:
    """`releasegate check ...` in its own process, its output kept in a file (no pipe to fill or leak)."""

    count = 0

    def __init__(self, *args, cwd: Path, children: Children) -> None:
        Check.count += 1
        self.log = cwd / f"stderr-{Check.count}.txt"
        with self.log.open("w") as err:
            self.proc = children.start(
                [sys.executable, "-m", "releasegate", "check", *map(str, args), "--no-progress"], cwd=cwd,
                stdout=err, stderr=err, env={**os.environ, "COLUMNS": "200"},
            )

    def poll(self):
        return self.proc.poll()

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    @property
    def stderr(self) -> str:
        return self.log.read_text()


def popen_check(*args, cwd: Path, children: Children) -> Check:
    return Check(*args, cwd=cwd, children=children)


def lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def wait_for(predicate, proc: Check, timeout: float = HANG_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and proc.poll() is None:
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.01)


# -- kill -9 at random points ------------------------------------------------------------------------------

def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_run(tmp_path, children):
    rng = random.Random(1234)
    n = 320  # 5 journal batches (the openai backend appends every 64 cases)
    with StubServer(StubBehaviour(ttft_ms=15, itl_ms=3, tokens=4)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=n, concurrency=8)
        reference = popen_check("-c", config, "--run-id", "reference", cwd=tmp_path, children=children)
        assert reference.wait(120) == 0, reference.stderr

        run = RunDir(tmp_path / "reports" / "killed")
        proc = popen_check("-c", config, "--run-id", "killed", cwd=tmp_path, children=children)
        wait_for(lambda: (run.path / "run.json").exists(), proc)  # resume needs a run directory to exist
        kills, partial = 0, 0
        for round_ in range(4):
            if round_:  # let the previous resume get somewhere first, so the test always ends
                before = lines(run.records_path)
                wait_for(lambda before=before: lines(run.records_path) > before, proc)
            time.sleep(rng.uniform(0.0, 0.4))
            if proc.poll() is None:
                proc.proc.kill()
                kills += 1
                partial += 0 < len(set(raw_ids(run))) < n
            proc.wait(30)
            proc = popen_check("--resume", run.path, cwd=tmp_path, children=children)
        code = proc.wait(120)
        assert code == 0, proc.stderr

    assert kills >= 3 and partial >= 1  # the kills landed while the run was running, with part of it recorded
    ids = [f"c{i:03d}" for i in range(n)]
    assert sorted(raw_ids(run)) == ids  # nothing lost, nothing recorded twice
    ref = RunDir(tmp_path / "reports" / "reference")
    assert sorted(r.case_id for r in run.read_records()) == sorted(r.case_id for r in ref.read_records())
    assert all(r.error is None and r.output for r in run.read_records())
    killed_report = json.loads((run.path / "report.json").read_text())
    ref_report = json.loads((ref.path / "report.json").read_text())
    assert killed_report["verdict"] == ref_report["verdict"] == "PASS"
    assert [c["verdict"] for c in killed_report["criteria"]] == [c["verdict"] for c in ref_report["criteria"]]
    info = run.read_info()
    assert info.status == "complete" and info.cases == n
    assert [s["status"] for s in info.sessions].count("complete") == 1
    assert info.sessions[-1]["status"] == "complete" and {s["status"] for s in info.sessions[:-1]} <= {"killed"}


def test_sigterm_marks_the_run_interrupted_and_resume_finishes_it(tmp_path, children):
    # 13 rounds of 0.6 s: a signal a busy machine delivers seconds late still lands before the last case
    with StubServer(StubBehaviour(ttft_ms=600, itl_ms=2, tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=200, concurrency=16)
        run = RunDir(tmp_path / "reports" / "t")
        proc = popen_check("-c", config, "--run-id", "t", cwd=tmp_path, children=children)
        wait_for(lambda: lines(run.records_path) > 0, proc)
        assert proc.poll() is None
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 130
        info = run.read_info()
        assert info.status == "interrupted" and info.sessions[-1]["status"] == "interrupted"
        assert "check --resume" in proc.stderr
        done = len(raw_ids(run))
        assert 0 < done < 200
        proc = popen_check("--resume", run.path, cwd=tmp_path, children=children)
        assert proc.wait(60) == 0, proc.stderr
    assert sorted(raw_ids(run)) == [f"c{i:03d}" for i in range(200)]
    assert [s["cases"] for s in run.read_info().sessions] == [200, 200 - done]


# -- resume and retry in-process ------------------------------------------------------------------------------

def interrupt_after(run: RunDir, keep: int) -> None:
    """Make a finished run look killed after `keep` records, the last one torn half-way."""
    data = run.records_path.read_bytes().splitlines(keepends=True)
    run.records_path.write_bytes(b"".join(data[:keep]) + data[keep][: len(data[keep]) // 2])
    info = run.read_info()
    info.status, info.finished_at, info.sessions[-1]["status"] = "running", None, "running"
    run.write_info(info)
    for name in ("report.json", "report.md"):
        (run.path / name).unlink()
    as_killed(run.path)


def test_resume_skips_recorded_cases_and_repairs_a_torn_line(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=6)
        code, _, _ = cli("check", "-c", config, "--run-id", "r", "--no-progress")
        run = RunDir(tmp_path / "reports" / "r")
        interrupt_after(run, keep=2)
        sent = stub.requests
        code, out, err = cli("check", "--resume", run.path, "--no-progress")
        resent = stub.requests - sent
    assert code == 0, err
    assert resent == 4  # the torn case and the three after it, nothing else
    assert raw_ids(run) == [f"c{i:03d}" for i in range(6)]
    assert "resume: 4 of 6 cases to run" in out
    info = run.read_info()
    assert info.status == "complete" and [s["status"] for s in info.sessions] == ["killed", "complete"]
    # generation time of a resumed run is the sum of its sessions' generation segments
    assert info.generation_seconds == pytest.approx(sum(s["generation_seconds"] for s in info.sessions))
    assert (run.path / "report.json").is_file()


def test_resume_of_a_complete_run_only_rejudges(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=4)
        cli("check", "-c", config, "--run-id", "r", "--no-progress")
        sent = stub.requests
        code, out, _ = cli("check", "--resume", tmp_path / "reports" / "r", "--no-progress")
        assert code == 0 and stub.requests == sent and "0 of 4 cases" in out


def test_retry_errors_reruns_only_the_failed_cases(tmp_path, cli):
    # the first 3 requests fail and retries are off: 3 error records
    with StubServer(StubBehaviour(fail_status=500, fail_count=3, tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=6, concurrency=1, extra="  retries: 0\n")
        code, _, _ = cli("check", "-c", config, "--run-id", "r", "--no-progress")
        run = RunDir(tmp_path / "reports" / "r")
        failed = [r.case_id for r in run.read_records() if r.error]
        assert code == 1 and len(failed) == 3
        code, _, _ = cli("check", "--resume", run.path, "--no-progress")
        assert code == 1 and stub.requests == 6  # a plain resume leaves recorded errors alone
        code, out, err = cli("check", "--resume", run.path, "--retry-errors", "--no-progress", "--json")
        assert stub.requests == 9
    assert raw_ids(run) == [f"c{i:03d}" for i in range(6)] + failed  # appended, superseding
    records = run.read_records()
    assert [r.case_id for r in records] == [f"c{i:03d}" for i in range(6)]  # the retry took the old place
    assert all(r.error is None for r in records)
    assert [len(r.earlier_attempts) for r in records if r.case_id in failed] == [1, 1, 1]
    # every case answered, but 3 of the 9 requests sent failed: they still count (error_rate <= 0 fails)
    report = json.loads(out)
    assert code == 1, err
    assert report["metrics"]["error_rate"]["value"] == pytest.approx(3 / 9)
    assert report["counts"]["phases"]["quality"]["retried_cases"] == 3
    assert run.read_info().sessions[-1]["mode"] == "retry_errors"


def test_resume_reruns_an_unfinished_load_phase_whole(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=2, itl_ms=1, tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=4, load="load: {concurrency: 2, requests: 6}\n")
        cli("check", "-c", config, "--run-id", "r", "--no-progress")
        run = RunDir(tmp_path / "reports" / "r")
        info = run.read_info()
        info.load_phase, info.status = None, "running"  # killed during the load phase, half of it written
        run.write_info(info)
        data = (run.path / "load.jsonl").read_text().splitlines(keepends=True)
        (run.path / "load.jsonl").write_text("".join(data[:3]))
        as_killed(run.path)
        sent = stub.requests
        code, _, err = cli("check", "--resume", run.path, "--no-progress")
        assert code == 0, err
        assert stub.requests - sent == 6  # only the load phase: every quality case was recorded
    assert len(run.read_records("load.jsonl")) == 6 and run.read_info().load_phase["requests"] == 6


def test_resume_refuses_when_a_suite_changed(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=4)
        cli("check", "-c", config, "--run-id", "r", "--no-progress")
        run = RunDir(tmp_path / "reports" / "r")
        interrupt_after(run, keep=1)
        with (tmp_path / "suite.jsonl").open("a") as fh:
            fh.write(json.dumps({"id": "new", "prompt": "x", "expected": "tok"}) + "\n")
        code, _, err = cli("check", "--resume", run.path, "--no-progress")
    assert code == 2 and "suite" in err and "verify" in err
    assert len(raw_ids(run)) == 1  # nothing appended


def test_resume_refuses_when_the_target_differs_from_the_one_that_ran(tmp_path, cli):
    # e.g. a matrix variant whose snapshot is the base config: same files, other settings
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=3)
        cli("check", "-c", config, "--run-id", "r", "--no-progress")
        run = RunDir(tmp_path / "reports" / "r")
        interrupt_after(run, keep=1)
        snapshot = run.path / "config.yaml"
        snapshot.write_text(snapshot.read_text().replace("model: stub", "model: another"))
        code, _, err = cli("check", "--resume", run.path, "--no-progress")
    assert code == 2 and "target" in err


def test_resume_refuses_a_run_in_use(tmp_path, cli):
    with StubServer(StubBehaviour(tokens=3)) as stub:
        config = make_project(tmp_path, stub.base_url, cases=2)
        cli("check", "-c", config, "--run-id", "r", "--no-progress")
    run = RunDir(tmp_path / "reports" / "r")
    with run.lock():
        assert run.is_locked()
        code, _, err = cli("check", "--resume", run.path, "--no-progress")
    assert code == 2 and "in use" in err
    assert not run.is_locked()


@pytest.mark.parametrize("args, message", [
    (["--retry-errors"], "--retry-errors needs --resume"),
    (["--resume", "{run}", "--run-id", "x"], "drop --run-id"),
    (["--resume", "{run}", "--limit", "1"], "drop --limit"),
    (["--resume", "{tmp}"], "not a run directory"),
])
def test_resume_usage_errors(project, cli, args, message):
    cli("check", "-c", project / "releasegate.yaml", "--run-id", "r", "--no-progress")
    args = [a.format(run=project / "reports" / "r", tmp=project) for a in args]
    code, _, err = cli("check", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_resume_keeps_the_limit_and_resolves_paths_next_to_the_original_config(project, cli, monkeypatch):
    write_jsonl(project / "suites" / "example.jsonl", [
        {"id": f"e{i}", "messages": [{"role": "user", "content": "x"}], "expected": {"intent": "a", "priority": "b"}}
        for i in range(5)
    ])
    code, _, _ = cli("check", "-c", project / "releasegate.yaml", "--run-id", "r", "--limit", "3", "--no-progress")
    run = RunDir(project / "reports" / "r")
    interrupt_after(run, keep=1)
    monkeypatch.chdir(project / "suites")  # relative paths must not depend on where resume runs
    code, out, err = cli("check", "--resume", run.path, "--no-progress")
    # the replay file has no response for e0..e2: every request failed, so the target could not be run (exit 4)
    assert code == 4 and "TARGET_ERROR" in out + err, err
    assert raw_ids(run) == ["e0", "e1", "e2"]


# -- the journal itself ------------------------------------------------------------------------------------

def record(case_id: str, **kw) -> CaseRecord:
    return CaseRecord(case_id=case_id, suite="s", input={"prompt": "p"}, **kw)


def test_dedup_on_read_last_record_wins_at_the_first_place(tmp_path):
    run = RunDir(tmp_path / "r")
    run.create()
    run.append([record("a", error="http_5xx"), record("b", output="ok")])
    run.append([record("a", output="retried")])
    assert [(r.case_id, r.output) for r in run.read_records()] == [("a", "retried"), ("b", "ok")]
    assert [r.case_id for r in run.read_records(dedup=False)] == ["a", "b", "a"]


def test_repair_cuts_a_torn_line_or_completes_a_whole_one(tmp_path):
    run = RunDir(tmp_path / "r")
    run.create()
    run.append([record("a", output="x")])
    whole = record("b", output="y").model_dump_json()
    with run.records_path.open("a") as fh:
        fh.write(whole[:20])  # torn mid-record
    assert [r.case_id for r in run.read_records()] == ["a"]
    run.repair()
    run.append([record("c", output="z")])
    assert [r.case_id for r in run.read_records()] == ["a", "c"]
    with run.records_path.open("a") as fh:
        fh.write(whole)  # whole record, newline missing: it was written, keep it
    run.repair()
    run.append([record("d", output="w")])
    assert [r.case_id for r in run.read_records()] == ["a", "c", "b", "d"]
    run.repair()  # nothing to do on a clean journal
    assert run.records_path.read_bytes().endswith(b"\n")


def test_a_line_torn_inside_a_multibyte_character(tmp_path):
    run = RunDir(tmp_path / "r")
    run.create()
    run.append([record("a", output="ü")])
    whole = record("b", output="日本語").model_dump_json().encode()
    with run.records_path.open("ab") as fh:
        fh.write(whole[: whole.index("本".encode()) + 1])
    assert [r.case_id for r in run.read_records()] == ["a"]
    run.repair()
    assert run.records_path.read_bytes().decode("utf-8").count("\n") == 1


def test_a_corrupt_committed_line_is_input_error(tmp_path):
    run = RunDir(tmp_path / "r")
    run.create()
    run.append([record("a", output="x")])
    with run.records_path.open("ab") as fh:
        fh.write(b"{not json\n")
    run.append([record("b", output="y")])
    with pytest.raises(InputError, match=r"records.jsonl:2: corrupt record"):
        run.read_records()


def test_run_info_round_trips_with_sessions(tmp_path):
    run = RunDir(tmp_path / "r")
    run.create()
    info = RunInfo(run_id="r", created_at="t", target="x", backend="replay", config_path="/a/b.yaml", limit=3,
                   sessions=[{"mode": "start", "status": "killed"}])
    run.write_info(info)
    assert run.read_info() == info
