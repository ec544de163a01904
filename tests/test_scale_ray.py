"""`scale: {engine: ray}` on a real local Ray cluster (2 CPUs, no dashboard, started once for this module).

- hf: the demo's 100 cases sharded over 2 actors give the records of a run in one process, and a driver killed
  mid-run is finished by `check --resume` with nothing lost and nothing recorded twice.
- openai: a load phase's schedule split across 2 workers against the stub server comes back as one load record
  in the plan's order, with each worker's send lag."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from children import Children
from conftest import HANG_S, ROOT, write_jsonl
from releasegate.record.records import RunDir
from releasegate.testing import StubBehaviour, StubServer

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray")

DEMO = ROOT / "releasegate.yaml"


@pytest.fixture(scope="module")
def cluster():
    """A real local Ray cluster; its GCS address lets `releasegate check` processes join it."""
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR", address="local")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def demo_config(tmp_path: Path, name: str, *, scale: str = "", batch_size: int = 16) -> Path:
    """The demo config with absolute paths, written into tmp_path, optionally with a scale: section."""
    text = DEMO.read_text()
    for rel in ("models/demo/base", "models/demo/adapters/good", "suites/demo/", "rubrics/demo.yaml"):
        text = text.replace(f" {rel}", f" {ROOT}/{rel}")
    text = text.replace("batch_size: 16", f"batch_size: {batch_size}").replace("  dir: reports", f"  dir: {tmp_path}")
    path = tmp_path / f"{name}.yaml"
    path.write_text(text + (f"scale: {scale}\n" if scale else ""))
    return path


def check(*args, children: Children | None = None) -> subprocess.Popen:
    """`releasegate check ARGS` in its own process; through `children` for one the test signals."""
    command = [sys.executable, "-m", "releasegate", "check", *map(str, args), "--no-progress", "--allow-pending"]
    popen = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True, "env": {**os.environ, "COLUMNS": "200"}}
    return children.start(command, **popen) if children is not None else subprocess.Popen(command, **popen)


def finished(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def same_generation(record) -> tuple:
    """What must not depend on where a case ran: outputs, token counts, the batch it was in, its scores."""
    return (record.case_id, record.output, record.error, record.tokens, record.timing.batch_size, record.scores)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> RunDir:
    tmp = tmp_path_factory.mktemp("one-process")
    code, out = finished(check("-c", demo_config(tmp, "one"), "--run-id", "one"))
    assert code == 0, out
    return RunDir(tmp / "one")


def test_sharded_demo_gives_the_records_of_one_process(cluster, reference, tmp_path):
    config = demo_config(tmp_path, "ray", scale=f"{{engine: ray, workers: 2, address: '{cluster}'}}")
    code, out = finished(check("-c", config, "--run-id", "ray"))
    assert code == 0, out
    run = RunDir(tmp_path / "ray")
    sharded, single = run.read_records(), reference.read_records()
    assert len(sharded) == len(single) == 100
    assert [same_generation(r) for r in sharded] == [same_generation(r) for r in single]
    assert all(r.timing.ttft_ms and r.timing.e2e_ms for r in sharded)  # measured on the actors
    ids = [r.case_id for r in run.read_records(dedup=False)]
    assert ids == [r.case_id for r in single]  # journal back in case order, each case once
    one, ray_ = (json.loads((d.path / "report.json").read_text()) for d in (reference, run))
    assert one["verdict"] == ray_["verdict"] == "PASS"
    assert [c["verdict"] for c in one["criteria"]] == [c["verdict"] for c in ray_["criteria"]]
    info = run.read_info()
    assert info.status == "complete" and info.generation_seconds > 0
    # where each was computed: a Ray run's record is told from a local one, in run.json and in every report
    assert info.computed == {"where": "ray", "address": cluster, "workers": 2, "spreads": "quality cases"}
    assert reference.read_info().computed == {"where": "local"} and one["computed"] == {"where": "local"}
    assert ray_["computed"] == info.computed
    assert f"- computed: on the Ray cluster at {cluster}, 2 workers (quality cases)" in (run.path / "report.md").read_text()
    assert "- computed: locally" in (reference.path / "report.md").read_text()


def test_a_killed_sharded_run_resumes_with_nothing_lost_or_doubled(cluster, reference, tmp_path, children):
    # small batches: 25 journal appends, so the kill lands with part of the run recorded (batch size does not
    # change the demo's greedy outputs: tests/test_hf_backend.py)
    scale = f"{{engine: ray, workers: 2, address: '{cluster}'}}"
    run = RunDir(tmp_path / "killed")
    proc = check("-c", demo_config(tmp_path, "ray", scale=scale, batch_size=4), "--run-id", "killed", children=children)
    deadline = time.monotonic() + 300
    while not (run.records_path.exists() and run.records_path.read_bytes().count(b"\n") >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "no progress"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=HANG_S)
    recorded = [r.case_id for r in run.read_records(dedup=False, required=False)]
    assert 0 < len(recorded) < 100  # killed mid-run
    assert run.read_info().status == "running"  # killed: nothing had the chance to say otherwise

    code, out = finished(check("--resume", run.path))
    assert code == 0, out
    assert f"resume: {100 - len(set(recorded))} of 100 cases to run" in out
    ids = [r.case_id for r in run.read_records(dedup=False)]
    single = reference.read_records()
    assert ids == [r.case_id for r in single]  # every case once, in case order
    resumed = {r.case_id: r for r in run.read_records()}
    # outputs and token counts as in one process (a resumed run batches its rest anew, as it does in one process)
    assert [(r.output, r.tokens) for r in single] == [(resumed[r.case_id].output, resumed[r.case_id].tokens) for r in single]
    info = run.read_info()
    assert info.status == "complete" and [s["status"] for s in info.sessions] == ["killed", "complete"]


def test_sigterm_stops_a_sharded_run_cleanly(cluster, tmp_path, children):
    """Ray's core installs a crash handler for SIGTERM (a stack, then abort): the run keeps `check`'s own."""
    scale = f"{{engine: ray, workers: 2, address: '{cluster}'}}"
    run = RunDir(tmp_path / "stopped")
    proc = check("-c", demo_config(tmp_path, "ray", scale=scale, batch_size=4), "--run-id", "stopped",
                 children=children)
    deadline = time.monotonic() + 300
    while not (run.records_path.exists() and run.records_path.read_bytes().count(b"\n") >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "no progress"
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    code, out = finished(proc, timeout=120)
    assert code == 130, out
    assert "SIGTERM received" not in out and "Traceback" not in out
    assert f"finish it with: releasegate check --resume {run.path}" in out
    assert run.read_info().status == "interrupted"
    assert 0 < len(run.read_records()) < 100


def test_more_workers_than_the_cluster_holds_is_refused_not_awaited(cluster, cli, tmp_path):
    config = demo_config(tmp_path, "big", scale=f"{{engine: ray, workers: 3, address: '{cluster}'}}")
    code, _, err = cli("check", "-c", config, "--run-id", "big", "--no-progress", "--allow-pending")
    assert code == 4 and len(err.strip().splitlines()) == 1, err
    assert "3 workers x 1 CPU but the Ray cluster has 2 CPU" in err and "Traceback" not in err


def test_a_model_a_worker_cannot_load_is_exit_4_in_one_line(cluster, cli, tmp_path):
    (tmp_path / "empty").mkdir()
    config = demo_config(tmp_path, "bad", scale=f"{{engine: ray, workers: 2, address: '{cluster}'}}")
    config.write_text(config.read_text().replace(f"base: {ROOT}/models/demo/base", f"base: {tmp_path / 'empty'}"))
    code, _, err = cli("check", "-c", config, "--run-id", "bad", "--no-progress", "--allow-pending")
    assert code == 4 and len(err.strip().splitlines()) == 1, err
    assert "cannot load" in err and "Traceback" not in err and "RayTaskError" not in err


# -- the load phase from two workers -------------------------------------------------------------------------

def endpoint_project(tmp_path: Path, base_url: str, load: str) -> Path:
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"} for i in range(4)
    ])
    (tmp_path / "rubric.yaml").write_text("latency_from: load\ncriteria:\n  - {metric: error_rate, op: \"<=\", threshold: 0}\n")
    (tmp_path / "releasegate.yaml").write_text(
        f"target: {{backend: openai, base_url: '{base_url}', model: stub, concurrency: 2, timeout_s: 20}}\n"
        "generation: {max_new_tokens: 8}\nsuites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\n"
        f"rubric: rubric.yaml\nload: {load}\nscale: {{engine: ray, workers: 2, cpus_per_worker: 1}}\n"
    )
    return tmp_path / "releasegate.yaml"


@pytest.mark.parametrize("load, planned", [
    ("{concurrency: 4, requests: 20, warmup: 2}", 20),
    ("{rate: 50, arrival: poisson, requests: 24, concurrency: 8, seed: 1}", 24),
])
def test_a_load_split_across_workers_is_one_load_record(cluster, cli, tmp_path, load, planned):
    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=4)) as stub:
        config = endpoint_project(tmp_path, stub.base_url, load)
        code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
        sent = stub.requests
    assert code == 0, err
    run = RunDir(tmp_path / "reports" / "r")
    load_records = run.read_records("load.jsonl")
    warmup = 2 if "warmup" in load else 0
    assert sent == 4 + warmup + planned  # quality, warm-up, measured: each request sent once
    assert [r.case_id.split(":")[0] for r in load_records] == [f"load-{i:05d}" for i in range(planned)]  # plan order
    assert all(r.error is None and r.timing.ttft_ms and r.timing.send_lag_ms is not None for r in load_records)
    phase = json.loads((run.path / "run.json").read_text())["load_phase"]
    assert phase["requests"] == planned and phase["seconds"] > 0
    workers = phase["client"]["workers"]
    assert [w["requests"] for w in workers] == [planned // 2, planned // 2]  # request i went to worker i mod 2
    assert all(w["send_lag_ms"]["n"] == planned // 2 and w["client"]["loop_lag_ms"] for w in workers)
    worst = max(w["client"]["loop_lag_ms"]["p99"] for w in workers)
    assert phase["client"]["loop_lag_ms"]["p99"] == worst  # the gate sees the worst worker's lag
    assert json.loads(out)["verdict"] == "PASS"
    summary = (run.path / "report.md").read_text()
    assert "| load workers | 2 Ray workers; send lag p99 " in summary


def test_a_duration_bound_closed_loop_makes_unique_requests_on_every_worker(cluster, cli, tmp_path):
    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=4)) as stub:
        config = endpoint_project(tmp_path, stub.base_url, "{concurrency: 2, duration_s: 0.5}")
        code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
        sent = stub.requests
    assert code == 0, err
    load_records = RunDir(tmp_path / "reports" / "r").read_records("load.jsonl")
    ids = [r.case_id for r in load_records]
    assert len(ids) == len(set(ids)) == sent - 4 > 2
    workers = json.loads((tmp_path / "reports" / "r" / "run.json").read_text())["load_phase"]["client"]["workers"]
    assert len(workers) == 2 and sum(w["requests"] for w in workers) == len(ids)
