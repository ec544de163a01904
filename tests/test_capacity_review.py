"""Capacity sweeps and the prefix-cache probe against evidence that is missing or failed: each must stay short
of a PASS."""

from __future__ import annotations

import json

from releasegate.cli import main
from test_capacity import criterion, gate, sweep_run
from test_false_pass import Run, _healthy, lenient


def test_a_step_whose_span_is_unknown_does_not_meet_the_objective(tmp_path, capsys):
    # 100 req/s with a growing backlog breaks the objective (test_capacity); without the step's span in run.json
    # whether the server kept up is unknown, so the step cannot meet it
    run = sweep_run([(10, 20.0), (20, 20.0), (100, 20.0)], growth={2: 100.0})
    del run.load_phase["sweep"]["steps"][2]["span_s"]
    code, report = gate(tmp_path, run, capsys)
    step = report["capacity"]["steps"][2]
    assert step["verdict"] == "undecided" and "kept up" in step["why"], step
    assert report["capacity"]["capacity_rps"] is None
    assert criterion(report, "capacity_rps")["verdict"] == "insufficient" and code == 3


PROBE = {"pairs": 8, "system_chars": 300, "saved_ms_p50": None, "cold_over_warm_p50": None,
         "cached_tokens": "not reported by the server",
         "warm": {"n": 0, "failed": 8, "ttft_ms_p50": None, "ttft_ms_p95": None, "prompt_tokens_mean": None,
                  "cached_tokens_mean": None},
         "cold": {"n": 0, "failed": 8, "ttft_ms_p50": None, "ttft_ms_p95": None, "prompt_tokens_mean": None,
                  "cached_tokens_mean": None}}


def test_a_probe_whose_requests_failed_is_no_pass(tmp_path, capsys):
    # every request of the prefix-cache probe failed: a planned phase measured nothing
    path = Run(_healthy(), rubric=lenient()).build(tmp_path)
    info = json.loads((path / "run.json").read_text())
    (path / "run.json").write_text(json.dumps({**info, "prefix_cache": PROBE, "phases": ["quality", "prefix_cache"]}))
    code = main(["gate", str(path)])
    out = capsys.readouterr().out
    assert code != 0, out
    assert "prefix-cache probe" in out


def test_a_sweep_step_without_its_rate_in_run_json_is_one_line_exit_2(tmp_path, capsys):
    run = sweep_run([(10, 20.0), (20, 20.0)])
    del run.load_phase["sweep"]["steps"][1]["rate"]
    assert main(["gate", str(run.build(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "load_phase.sweep" in err and "Traceback" not in err
