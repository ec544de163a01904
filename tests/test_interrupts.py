"""Ctrl-C (SIGINT to a real `releasegate` process) never prints a traceback: not while Python still imports the
command line, not mid-run, not when a library's finalizer catches it; a run stopped mid-generation is resumable."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from children import Children
from releasegate.record.records import RunDir
from releasegate.testing.stub_server import StubBehaviour, StubServer

CASES = 200


def _project(root: Path, base_url: str) -> Path:
    ids = [f"c{i:03d}" for i in range(CASES)]
    (root / "suite.jsonl").write_text("".join(json.dumps(
        {"id": i, "messages": [{"role": "user", "content": f"case {i}"}], "expected": {"intent": "billing"}}) + "\n"
        for i in ids))
    (root / "rubric.yaml").write_text('criteria:\n  - {metric: accuracy, op: ">=", threshold: 0.5}\n')
    config = root / "releasegate.yaml"
    config.write_text(f"target:\n  backend: openai\n  base_url: {base_url}\n  model: m\n"
                      "suites:\n  - path: suite.jsonl\n    answer: {type: json_fields, fields: [intent]}\n"
                      "rubric: rubric.yaml\n")
    return config


def _start(children: Children, root: Path, *args: str, flags: tuple[str, ...] = ()) -> tuple[subprocess.Popen, Path]:
    log = root / f"log-{len(list(root.glob('log-*')))}.txt"
    with log.open("w") as out:  # a file, not a pipe: nothing to fill up
        proc = children.start([sys.executable, *flags, "-m", "releasegate", *args, "--no-progress"], cwd=root,
                              stdout=out, stderr=out, env={**os.environ, "COLUMNS": "120"})
    return proc, log


def _wait(condition, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while not condition():
        assert proc.poll() is None, f"ended early: {log.read_text()}"
        assert time.monotonic() < deadline, f"timed out waiting: {log.read_text()}"
        time.sleep(0.01)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _stopped(proc: subprocess.Popen, log: Path) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(60)
    except subprocess.TimeoutExpired:  # the `children` fixture kills and reaps it
        raise AssertionError(f"still running after SIGINT: {log.read_text()}") from None
    text = log.read_text()
    assert code == 130, text
    assert "Traceback" not in text and "Exception ignored" not in text and "KeyboardInterrupt" not in text, text
    return text


@pytest.fixture
def server():
    with StubServer(StubBehaviour(ttft_ms=150, itl_ms=10, tokens=1, reply=lambda body: '{"intent": "billing"}')) as stub:
        yield stub


def test_ctrl_c_while_the_command_line_is_still_importing_prints_no_traceback(tmp_path, server, children):
    config = _project(tmp_path, server.base_url)
    # -X importtime logs each module as its import ends: once releasegate.border.env is in, the process runs
    # releasegate's own code and is still importing the command line (app.py imports it before `main`)
    proc, log = _start(children, tmp_path, "check", "-c", str(config), "--run-id", "early", flags=("-X", "importtime"))
    _wait(lambda: "releasegate.border.env" in log.read_text(), proc, log)
    _stopped(proc, log)


def test_ctrl_c_mid_run_prints_no_traceback_and_the_run_resumes(tmp_path, server, children):
    config = _project(tmp_path, server.base_url)
    run = RunDir(tmp_path / "reports" / "mid")
    proc, log = _start(children, tmp_path, "check", "-c", str(config), "--run-id", "mid")
    _wait(lambda: 0 < _lines(run.records_path), proc, log)
    # every request from now on hangs without a token: however late the signal lands on a busy machine, the run
    # is still generating (the stub reads its behaviour per request)
    server.behaviour = dataclasses.replace(server.behaviour, stall_after=0)
    text = _stopped(proc, log)
    server.behaviour = dataclasses.replace(server.behaviour, stall_after=None)
    assert "interrupted" in text and f"check --resume {run.path}" in text
    assert run.read_info().status == "interrupted" and 0 < _lines(run.records_path) < CASES
    proc, log = _start(children, tmp_path, "check", "--resume", str(run.path))
    assert proc.wait(300) == 0, log.read_text()
    assert run.read_info().status == "complete" and _lines(run.records_path) == CASES


class _CatchesInFinalizer:
    """A library object whose finalizer happens to run when Ctrl-C arrives."""

    def __del__(self) -> None:
        raise KeyboardInterrupt


def test_an_interrupt_a_finalizer_swallowed_still_stops_the_command_unprinted(capsys):
    from releasegate.cli._interrupts import interrupts_stop_the_command

    steps = []
    with pytest.raises(KeyboardInterrupt), interrupts_stop_the_command():
        _CatchesInFinalizer()  # collected at once: its KeyboardInterrupt cannot propagate from __del__
        steps.append("carried on")
        steps.append("and on")
    assert steps == [] or steps == ["carried on"]  # stopped at its next line, not at the end
    assert "Exception ignored" not in capsys.readouterr().err
