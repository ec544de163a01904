"""Hostile runs, third round: a stop or a failure part-way through a stage must leave that stage unrecorded, so
a resume measures it again, never a PASS on part of its evidence."""

from __future__ import annotations

from releasegate.backends.openai import OpenAIBackend
from releasegate.testing import StubBehaviour, StubServer
from test_dead_server import run_check
from test_openai_backend import project

SWEEP = "load: {sweep: {start_rps: 40, max_rps: 160, requests_per_step: 60, step_s: 1, slo: {ttft_ms_p95: 5000}}}\n"


def test_a_sweep_stopped_in_its_second_step_is_run_again_on_resume(tmp_path, cli, monkeypatch):
    """A signal in the sweep's second step (run_interruptibly raises KeyboardInterrupt once the loop is closed)
    left run.json's load_phase holding the first step alone: `check --resume` took the sweep as done and the gate
    judged capacity and latency on one step of it."""
    real, calls = OpenAIBackend.run_load, []

    def stopped_in_step_two(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # what a SIGTERM during the step's event loop raises
        return real(self, *args, **kwargs)

    monkeypatch.setattr(OpenAIBackend, "run_load", stopped_in_step_two)
    with StubServer(StubBehaviour(tokens=4)) as stub:
        config = project(tmp_path, stub.base_url, load=SWEEP)
        code, _, err, run = run_check(cli, config)
        assert code == 130 and run.read_info().status == "interrupted"
        assert run.read_info().load_phase is None  # measured whole or not at all
        monkeypatch.setattr(OpenAIBackend, "run_load", real)
        code, _, err = cli("check", "--resume", run.path, "--no-progress")
    steps = run.read_info().load_phase["sweep"]["steps"]
    assert code in (0, 1) and len(steps) > 1  # the sweep run again, whole
    assert sum(s["requests"] for s in steps) == len(run.read_records("load.jsonl"))
