"""SIGTERM and SIGINT stop `check` at any point, promptly, with exit 130 and a run that `check --resume` finishes.

Judging is made slow with the test hook RELEASEGATE_TEST_JUDGE_DELAY_S, which spends the time inside object
finalizers: a KeyboardInterrupt raised there used to be printed as "Exception ignored" and dropped, and the run
carried on to a PASS. Every SIGTERM here lands in a finalizer, so a swallow in one try of five fails the test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from children import Children
from conftest import write_jsonl
from releasegate.record.records import RunDir

CASES = 20


def make_project(tmp_path: Path) -> Path:
    ids = [f"c{i:03d}" for i in range(CASES)]
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": i, "messages": [{"role": "user", "content": f"case {i}"}], "expected": {"intent": "billing"}} for i in ids
    ])
    write_jsonl(tmp_path / "responses.jsonl", [{"id": i, "output": '{"intent": "billing"}'} for i in ids])
    (tmp_path / "rubric.yaml").write_text('criteria:\n  - {metric: accuracy, op: ">=", threshold: 0.5}\n')
    (tmp_path / "releasegate.yaml").write_text(
        "target:\n  backend: replay\n  responses: responses.jsonl\n"
        "suites:\n  - path: suite.jsonl\n    answer: {type: json_fields, fields: [intent]}\nrubric: rubric.yaml\n"
    )
    return tmp_path / "releasegate.yaml"


def start(children: Children, *args, cwd: Path, log: Path, env: dict | None = None) -> subprocess.Popen:
    with log.open("w") as out:  # a file, not a pipe: nothing to fill up or leak
        return children.start([sys.executable, "-m", "releasegate", *map(str, args), "--no-progress"], cwd=cwd,
                              stdout=out, stderr=out, env={**os.environ, "COLUMNS": "200", **(env or {})})


def records(run: RunDir) -> int:
    try:
        return run.records_path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def wait_until(condition, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"check ended early: {log.read_text()}"
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def interrupt_while_judging(children: Children, tmp_path: Path, config: Path, run_id: str, signum: int) -> RunDir:
    """Start `check`, wait until every record is in (judging then runs for a minute), send `signum`."""
    run = RunDir(tmp_path / "reports" / run_id)
    log = tmp_path / f"{run_id}.log"
    proc = start(children, "check", "-c", config, "--run-id", run_id, cwd=tmp_path, log=log,
                 env={"RELEASEGATE_TEST_JUDGE_DELAY_S": "60"})
    wait_until(lambda: records(run) == CASES, proc, log)
    time.sleep(0.5)  # past the last append, into judging
    assert proc.poll() is None
    proc.send_signal(signum)
    try:
        code = proc.wait(20)  # a generous bound on "the process ended"; judging alone would take a minute
    except subprocess.TimeoutExpired:  # the `children` fixture kills and reaps it
        raise AssertionError(f"check still running 20 s after the signal: {log.read_text()}") from None
    err = log.read_text()
    assert code == 130, err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert f"check --resume {run.path}" in err
    info = run.read_info()
    assert info.status == "interrupted" and info.sessions[-1]["status"] == "interrupted"
    assert not (run.path / "report.json").exists()
    assert records(run) == CASES
    return run


def resume(cli, run: RunDir) -> None:
    """`check --resume` in this process: the interrupted process is gone, so nothing of it is shared."""
    code, out, err = cli("check", "--resume", run.path, "--no-progress")
    assert code == 0, out + err
    assert "resume: 0 of 20 cases to run" in out + err
    report = json.loads((run.path / "report.json").read_text())
    assert report["verdict"] == "PASS" and report["incomplete"] is None
    info = run.read_info()
    assert info.status == "complete" and [s["status"] for s in info.sessions] == ["interrupted", "complete"]
    assert records(run) == CASES  # nothing generated again
    assert (run.path / "report.html").exists() and (run.path / "report.junit.xml").exists()


def test_sigterm_while_judging_stops_check_every_time_and_resume_judges_the_run(tmp_path, cli, children):
    config = make_project(tmp_path)
    runs = [interrupt_while_judging(children, tmp_path, config, f"term{i}", signal.SIGTERM) for i in range(5)]
    for run in runs:
        resume(cli, run)


def test_sigint_while_judging_stops_check_and_resume_judges_the_run(tmp_path, cli, children):
    config = make_project(tmp_path)
    resume(cli, interrupt_while_judging(children, tmp_path, config, "int", signal.SIGINT))


# A run whose KeyboardInterrupt never arrives (a library catching BaseException in a loop) still ends: GRACE_S after
# the signal, or at once on a second signal, with run.json written 'interrupted'.
SWALLOWER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from releasegate.run.interruption import INTERRUPTION
    from releasegate.run.interruption import signals_stop as _signals_stop
    from releasegate.record.records import RunDir, RunInfo

    run = RunDir(Path(sys.argv[1]))
    run.create()
    info = RunInfo(run_id="swallow", created_at="now", target="t", backend="replay",
                   sessions=[{"mode": "start", "status": "running"}])
    run.write_info(info)
    with _signals_stop():
        INTERRUPTION.active = (run, info)
        print("ready", flush=True)
        while True:
            try:
                time.sleep(0.01)
            except BaseException:
                pass
""")


def run_swallower(children: Children, tmp_path: Path, signals: int) -> tuple[int, str, RunDir]:
    run = RunDir(tmp_path / f"swallow{signals}")
    log = tmp_path / f"swallow{signals}.log"
    with log.open("w") as out:
        proc = children.start([sys.executable, "-c", SWALLOWER, str(run.path)], stdout=out, stderr=out)
    wait_until(lambda: "ready" in log.read_text(), proc, log)
    for _ in range(signals):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
    try:
        code = proc.wait(20)
    except subprocess.TimeoutExpired:  # the `children` fixture kills and reaps it
        raise AssertionError(f"still running 20 s after the signal: {log.read_text()}") from None
    return code, log.read_text(), run


def test_a_swallowed_interrupt_ends_the_process_after_the_grace_period(tmp_path, children):
    code, err, run = run_swallower(children, tmp_path, signals=1)
    assert code == 130, err
    assert "interrupted (still running" in err and f"check --resume {run.path}" in err
    info = run.read_info()
    assert info.status == "interrupted" and info.sessions[-1]["status"] == "interrupted"


def test_a_second_signal_ends_the_process_at_once(tmp_path, children):
    code, err, run = run_swallower(children, tmp_path, signals=2)
    assert code == 130, err
    assert "interrupted (second signal)" in err and "interrupted (still running" not in err
    assert run.read_info().status == "interrupted"
