"""What `check` shows and leaves while it runs and ends: progress a CI log can read, the verdict printed only once
the reports are on disk (a signal after it cannot undo the run), where the wall time went (run.json `timing`),
`--limit` bounding the load phase, and the llama.cpp serving CLI outside the checkout."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from rich.console import Console

from conftest import HANG_S, ROOT, write_jsonl
from releasegate.pipeline.check_options import CheckOptions
from releasegate.record.records import RunDir
from releasegate.record.stage_timing import PARTS
from releasegate.run.interruption import HOLD_ENV
from releasegate.run.progress import INTERVAL_ENV, WIDTH, PlainProgress, progress_bar
from releasegate.testing import StubBehaviour, StubServer

REPORTS = ("report.json", "report.md", "report.html", "report.junit.xml", "report.csv")


def stub_project(tmp_path: Path, base_url: str, load: str) -> Path:
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"} for i in range(4)
    ])
    (tmp_path / "rubric.yaml").write_text(
        "max_client_lag_share: 10\ncriteria:\n  - {metric: error_rate, op: '<=', threshold: 0.0}\n")
    (tmp_path / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  concurrency: 2\n  retries: 0\n"
        f"  timeout_s: 10\ngeneration: {{max_new_tokens: 16}}\n"
        f"suites: [{{path: suite.jsonl, answer: {{type: regex, pattern: tok}}}}]\nrubric: rubric.yaml\n{load}")
    return tmp_path / "releasegate.yaml"


def replay_project(tmp_path: Path, right: int, wrong: int) -> Path:
    ids = [f"c{i:02d}" for i in range(right + wrong)]
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": i, "messages": [{"role": "user", "content": i}], "expected": {"intent": "billing"}} for i in ids])
    write_jsonl(tmp_path / "responses.jsonl", [
        {"id": i, "output": '{"intent": "billing"}' if n < right else '{"intent": "refund"}'} for n, i in enumerate(ids)])
    (tmp_path / "rubric.yaml").write_text('criteria:\n  - {metric: accuracy, op: ">=", threshold: 0.9}\n')
    (tmp_path / "releasegate.yaml").write_text(
        "target:\n  backend: replay\n  responses: responses.jsonl\n"
        "suites:\n  - path: suite.jsonl\n    answer: {type: json_fields, fields: [intent]}\nrubric: rubric.yaml\n")
    return tmp_path / "releasegate.yaml"


def releasegate(*args, cwd: Path, env: dict | None = None, **kwargs):
    return subprocess.run([sys.executable, "-m", "releasegate", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "80", **(env or {})}, **kwargs)


# --- progress in a CI log ----------------------------------------------------------------------------------------


def test_a_ci_log_gets_periodic_plain_lines_none_cut_short(tmp_path):
    """stdout a pipe, as in CI: each step starts and ends with a line, a long one (the load phase: 40 requests of
    ~60 ms, 2 in flight, so well over a second) prints its count, rate and ETA every interval; no bar, no line
    past 80 columns, no count cut short."""
    with StubServer(StubBehaviour(ttft_ms=20, itl_ms=5, tokens=8)) as stub:
        config = stub_project(tmp_path, stub.base_url, "load: {concurrency: 2, requests: 40, warmup: 1}\n")
        proc = releasegate("check", "-c", config, "--run-id", "ci", cwd=tmp_path, env={INTERVAL_ENV: "0.1"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("releasegate: PASS", 1)[0].splitlines()  # the progress, up to the verdict's table
    assert all(len(line) <= WIDTH for line in lines), [line for line in lines if len(line) > WIDTH]
    assert not any("━" in line or "…" in line for line in lines if line.startswith(("load", "generating")))
    assert "generating: started, 4 to do" in lines and "generating: done 4/4" in proc.stdout
    assert any(line.startswith("load: closed loop, 2 in flight, 40 requests: started") for line in lines)
    periodic = [line for line in lines if line.startswith("load: ") and "/40 (" in line]
    assert len(periodic) >= 2, proc.stdout  # the load phase lasts over ten intervals
    assert all("/s" in line or line.startswith("load: 0/40") for line in periodic)
    assert any("ETA" in line for line in periodic)
    assert any(line.startswith("load: done 40/40 in ") for line in lines)


def test_plain_lines_count_rate_eta_and_a_stopped_step():
    clock = [0.0]
    out = io.StringIO()
    console = Console(file=out, width=80)
    with pytest.raises(KeyboardInterrupt), PlainProgress(console, 10, clock=lambda: clock[0], ticker=False) as bar:
        task = bar.add_task("load: open loop, 1500 requests over 60.0 s, at most 256 in flight, " * 2, total=1500)
        clock[0] = 30.0
        bar.advance(task, 740)
        bar.tick()
        bar.update(task, description="load: capacity sweep, step 2 at 8 req/s")
        raise KeyboardInterrupt
    lines = out.getvalue().splitlines()
    assert all(len(line) <= WIDTH for line in lines)
    assert lines[0].startswith("load: open loop") and lines[1].startswith("  ")  # wrapped, never cut
    assert "load: 740/1,500 (49%), 24.7/s, ETA 30.8 s, 30.0 s in" in lines
    assert "load: capacity sweep, step 2 at 8 req/s" in lines
    assert lines[-1] == "load: stopped 740/1,500 in 30.0 s, 24.7/s"


def test_a_terminal_keeps_its_bars_and_no_progress_prints_nothing():
    terminal = Console(file=io.StringIO(), force_terminal=True)
    log = Console(file=io.StringIO(), force_terminal=False)
    assert not isinstance(progress_bar(terminal, True), PlainProgress)
    assert isinstance(progress_bar(log, True), PlainProgress)
    with progress_bar(log, False) as bar:
        bar.advance(bar.add_task("generating", total=3), 3)
    assert log.file.getvalue() == ""


# --- --limit bounds the load phase -------------------------------------------------------------------------------


def test_limit_bounds_the_load_phase_and_makes_it_another_load(tmp_path, cli):
    with StubServer(StubBehaviour(ttft_ms=2, itl_ms=1, tokens=4)) as stub:
        config = stub_project(tmp_path, stub.base_url, "load: {concurrency: 2, requests: 30, warmup: 4}\n")
        # a run on 3 cases of the suite speaks for those 3: INCONCLUSIVE
        assert cli("check", "-c", config, "--run-id", "small", "--limit", "3", "--no-progress")[0] == 3
        assert cli("check", "-c", config, "--run-id", "full", "--no-progress")[0] == 0
    small, full = (RunDir(tmp_path / "reports" / name) for name in ("small", "full"))
    info = small.read_info()
    assert len(small.read_records()) == 3 and len(small.read_records("load.jsonl")) == 3
    assert info.load_phase["planned"] == info.load_phase["requests"] == 3 and info.load_phase["limit"] == 3
    assert info.load_phase["warmup"] == 3 and info.load_phase["cut_short"] is None
    assert len(full.read_records("load.jsonl")) == 30 and "limit" not in full.read_info().load_phase
    assert info.comparability["load"] != full.read_info().comparability["load"]  # servers will not pair them


def test_limit_cuts_a_capacity_sweep_to_one_step():
    from releasegate.inputs.load_profile import LoadConfig, SweepConfig
    from releasegate.run.load_phase import limited_load

    load = LoadConfig(warmup=10, sweep=SweepConfig(start_rps=4, max_rps=64, requests_per_step=60, step_s=5))
    cut = limited_load(load, 8)
    assert cut.warmup == 8 and cut.sweep.max_rps == cut.sweep.start_rps == 4 and cut.sweep.refine == 0
    assert max(cut.sweep.requests_per_step, cut.sweep.start_rps * cut.sweep.step_s) == 8
    assert limited_load(load, None) is load


# --- the verdict once the reports are on disk ---------------------------------------------------------------------


def wait_for(path: Path, text: str, proc: subprocess.Popen, timeout: float = HANG_S) -> None:
    deadline = time.monotonic() + timeout
    while text not in (path.read_text() if path.exists() else ""):
        assert proc.poll() is None, f"check ended early: {path.read_text()}"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_after_the_verdict_leaves_the_run_complete_with_its_verdict(tmp_path, signum, children):
    """The verdict line appears only once every report is written and run.json says complete; a signal then (the
    process held there by a test hook) exits with the verdict's code (FAIL: 1), never 130, run.json unchanged."""
    config = replay_project(tmp_path, right=3, wrong=3)
    log = tmp_path / "log.txt"
    with log.open("w") as out:
        proc = children.start([sys.executable, "-m", "releasegate", "check", "-c", str(config), "--run-id", "v"],
                              cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                              env={**os.environ, "COLUMNS": "80", HOLD_ENV: "120"})
    run = tmp_path / "reports" / "v"
    wait_for(log, "verdict: FAIL", proc)
    assert all((run / name).is_file() and (run / name).stat().st_size > 0 for name in REPORTS)
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "complete" and info["timing"]["reports_s"] > 0
    proc.send_signal(signum)
    assert proc.wait(timeout=HANG_S) == 1, log.read_text()
    assert json.loads((run / "run.json").read_text())["status"] == "complete"
    assert "interrupted" not in log.read_text()
    assert json.loads((run / "report.json").read_text())["verdict"] == "FAIL"


# --- where the time went ------------------------------------------------------------------------------------------


def test_run_json_and_json_output_say_where_the_time_went(tmp_path, cli):
    config = replay_project(tmp_path, right=5, wrong=0)
    code, out, _ = cli("check", "-c", config, "--run-id", "t", "--no-progress", "--json")
    assert code == 0
    info = RunDir(tmp_path / "reports" / "t").read_info()
    timing = info.timing
    assert set(timing) == set(PARTS) | {"other_s", "total_s"} and json.loads(out)["timing"] == timing
    assert timing["import_s"] is None  # called in-process: check did not start this process
    parts = [v for k, v in timing.items() if k not in ("import_s", "total_s")]
    assert all(v >= 0 for v in parts) and sum(parts) == pytest.approx(timing["total_s"], abs=0.01)
    assert timing["inputs_s"] > 0 and timing["judging_s"] > 0 and timing["reports_s"] > 0
    assert info.sessions[-1]["timing"] == timing


def test_a_process_started_for_check_counts_its_imports(tmp_path):
    config = replay_project(tmp_path, right=5, wrong=0)
    proc = releasegate("check", "-c", config, "--run-id", "p", "--no-progress", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    timing = json.loads(proc.stdout)["timing"]
    assert timing["import_s"] > 0
    rest = sum(v for k, v in timing.items() if k != "total_s")
    assert rest == pytest.approx(timing["total_s"], abs=0.01)


def test_an_unloadable_local_metric_fails_before_the_run_exists(tmp_path, cli):
    config = replay_project(tmp_path, right=5, wrong=0)
    (tmp_path / "metric.py").write_text("def broken(:\n")
    (tmp_path / "rubric.yaml").write_text(
        'criteria:\n  - {metric: m, op: ">=", threshold: 0.5}\nevaluate:\n  - {name: m, module: metric.py}\n')
    code, _, err = cli("check", "-c", config, "--run-id", "m", "--no-progress")
    assert code == 2 and "metric.py" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "reports" / "m").exists()


# --- the llama.cpp serving CLI outside the checkout ----------------------------------------------------------------


def serve(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "releasegate.export.llamacpp", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "80"})


def test_the_llamacpp_cli_outside_the_checkout_says_what_each_flag_means(tmp_path):
    helped = serve("--help", cwd=tmp_path)
    assert helped.returncode == 0
    assert str(ROOT / "models" / "demo" / "base") in helped.stdout.replace("\n", "").replace(" ", "")
    for flag in ("--base", "--adapter", "--out", "--port", "--parallel", "--threads", "--http-threads", "--merge"):
        assert flag in helped.stdout
    assert "(default: 8080)" in helped.stdout
    missing = serve("--base", tmp_path / "nowhere", cwd=tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip().splitlines()[-1].endswith("nowhere: no such directory")


def test_help_paragraphs_wrap_at_the_screen_not_at_the_source_line():
    from releasegate.cli.app import help_paragraphs

    assert help_paragraphs("First line.\n\n    One sentence\n    over two lines.\n    - an item\n    - another\n") \
        == "First line.\n\nOne sentence over two lines.\n- an item\n- another"
    proc = subprocess.run([sys.executable, "-m", "releasegate", "check", "--help"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "80"}, timeout=HANG_S)
    assert "signals_stop" not in proc.stdout
    prose = proc.stdout.split("╭", 1)[0].splitlines()
    # a line inside a paragraph is filled to the width: a short one is where a sentence broke in the source
    broken = [line for line, after in zip(prose, prose[1:]) if line.strip() and after.strip() and len(line.rstrip()) < 40]
    assert broken == []


SERVING = """
import signal
from releasegate.export._serve import run_cli, serve_until_interrupted

signal.signal(signal.SIGINT, signal.SIG_IGN)  # as under nohup or in a background job: no Ctrl-C reaches it


class Server:
    def stop(self):
        print("server stopped", flush=True)


run_cli("serve", lambda argv: serve_until_interrupted(Server(), "serving at http://127.0.0.1:1/v1  Ctrl-C stops"))
"""


def test_sigterm_stops_a_serving_clis_server_where_ctrl_c_cannot_reach_it(tmp_path, children):
    """A serving CLI (llama.cpp, vLLM) started under nohup has SIGINT ignored: `kill` (SIGTERM) stops its server
    as Ctrl-C would, and the CLI ends without a traceback."""
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = children.start([sys.executable, "-c", SERVING], stdout=out, stderr=subprocess.STDOUT)
    wait_for(log, "Ctrl-C stops", proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=HANG_S) == 0, log.read_text()
    assert log.read_text().endswith("Ctrl-C stops\nserver stopped\n")


@pytest.mark.slow
def test_the_llamacpp_cli_serves_the_demo_from_anywhere(tmp_path, children):
    """From a directory that is not the checkout, the defaults still find the demo model: it is exported, served
    and answers /health; Ctrl-C stops it without a traceback."""
    pytest.importorskip("xllamacpp")
    pytest.importorskip("gguf")
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = children.start([sys.executable, "-m", "releasegate.export.llamacpp", "--port", "0", "--out", "gguf"],
                              cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "80"})
    wait_for(log, "Ctrl-C stops", proc)
    url = log.read_text().split(" at ", 1)[1].split()[0].removesuffix("/v1")
    with urllib.request.urlopen(url + "/health", timeout=10) as health:  # noqa: S310 - loopback
        assert health.status == 200
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=HANG_S) in (0, 130)
    assert "Traceback" not in log.read_text()
    assert (tmp_path / "gguf" / "base.gguf").is_file()


# --- one read, one scoring --------------------------------------------------------------------------------------


def _count_reads_and_scorings(monkeypatch) -> tuple[list[str], list[int]]:
    """Every RunDir.read_records call (by file name) and every scoring of a run's records (by record count)."""
    import releasegate.scorers.score as score_module

    reads: list[str] = []
    scorings: list[int] = []
    read, score = RunDir.read_records, score_module.score_records

    def counted_read(self, name="records.jsonl", **kwargs):
        reads.append(name)
        return read(self, name, **kwargs)

    def counted_score(records, *args, **kwargs):
        scorings.append(len(records))
        return score(records, *args, **kwargs)

    monkeypatch.setattr(RunDir, "read_records", counted_read)
    monkeypatch.setattr(score_module, "score_records", counted_score)
    return reads, scorings


def test_check_reads_the_records_once_and_scores_them_once(tmp_path, monkeypatch):
    """The gate and every report format share one read of records.jsonl and load.jsonl and one scoring of the
    records (`scorers.scored_run`), and the report is what a separate `gate` of the saved run gives."""
    from releasegate.pipeline.check import run_check_file
    from releasegate.pipeline.regate import regate

    config = replay_project(tmp_path, right=9, wrong=1)
    reads, scorings = _count_reads_and_scorings(monkeypatch)
    run, report = run_check_file(config, CheckOptions(Console(quiet=True), progress=False, run_id="once"))
    assert reads.count("records.jsonl") == 1 and reads.count("load.jsonl") == 1, reads
    assert scorings == [10]
    assert {f for f in REPORTS if (run.path / f).is_file()} == set(REPORTS)

    reads.clear(), scorings.clear()
    again = regate(run.path)
    assert reads.count("records.jsonl") == 1 and scorings == [10], (reads, scorings)
    assert again.report.verdict == report["verdict"] == "PASS"
    assert again.report.metrics["accuracy"].value == report["metrics"]["accuracy"]["value"] == 0.9
