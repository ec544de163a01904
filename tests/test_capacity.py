"""Capacity at a latency objective, judged from hand-built sweeps: the capacity found, the steps that decide it,
and every way a capacity that was not established stays short of a PASS."""

from __future__ import annotations

import json

import pytest

from releasegate.cli import main
from releasegate.gate.capacity import MIN_STEP_SAMPLES, capacity_view
from releasegate.record.records import CaseRecord, RunInfo, Timing, Tokens
from test_false_pass import Run, _healthy, lenient

SLO = {"ttft_ms_p95": 200.0, "tpot_ms_p95": 20.0, "error_rate": 0.01}
QUIET = {"loop_lag_ms": {"p99": 0.5}}


def step_records(step: int, n: int = 60, *, ttft: float = 50.0, failed: int = 0, growth: float = 0.0) -> list[dict]:
    """n load requests of one sweep step: TTFT `ttft` ms from the scheduled send (plus up to `growth` ms, rising
    in schedule order: a backlog; E2E 50 ms more), the first `failed` failed."""
    out = []
    for i in range(n):
        answered = i >= failed
        late = ttft + growth * i / max(1, n - 1)
        out.append(CaseRecord(
            case_id=f"s{step:02d}-{i:05d}:c{i % 10:03d}", suite="load",
            tags={"phase": "load", "prompt_of": f"c{i % 10:03d}", "sweep_step": step}, input={"prompt": "p"},
            output="ok" if answered else None, error=None if answered else "timeout",
            tokens=Tokens(input=5, output=10 if answered else None),
            timing=Timing(ttft_ms=late * 0.9, ttft_sched_ms=late, tpot_ms=5.0, e2e_ms=late + 45, e2e_sched_ms=late + 50)
            if answered else Timing(),
        ).model_dump(mode="json"))
    return out


def sweep_run(steps: list[tuple[float, float]], *, client=QUIET, counts: dict | None = None, failed: dict | None = None,
              rubric: dict | None = None, max_rps: float = 1000.0, growth: dict | None = None) -> Run:
    """A run whose load phase was a sweep: (rate, P95-ish TTFT) per step, in the order they ran; `growth`:
    {step: ms its TTFT rose by from the first request to the last}."""
    load, entries = [], []
    for k, (rate, ttft) in enumerate(steps):
        n = (counts or {}).get(k, 60)
        load += step_records(k, n, ttft=ttft, failed=(failed or {}).get(k, 0), growth=(growth or {}).get(k, 0.0))
        span = n / rate
        entries.append({"step": k, "rate": rate, "span_s": span, "seconds": span + 0.095,
                        "requests": n, "client": client,
                        "signals": {"queue": {"mean": rate / 10, "max": rate / 5, "n": 8},
                                    "running": {"mean": min(4.0, rate / 20), "max": 4.0, "n": 8}}})
    phase = {"profile": "capacity sweep", "seconds": sum(e["seconds"] for e in entries), "requests": len(load),
             "cut_short": None, "client": client,
             "sweep": {"slo": SLO, "max_rps": max_rps, "steps": entries}}
    return Run(_healthy(), load=load, load_phase=phase, rubric=rubric or capacity_rubric())


def capacity_rubric(threshold: float = 20, **extra) -> dict:
    return lenient(criteria=[{"metric": "capacity_rps", "op": ">=", "threshold": threshold}], **extra)


def gate(tmp_path, run: Run, capsys) -> tuple[int, dict]:
    """The run judged as `releasegate gate` judges it, without rendering the reports (test_reports_show_the_sweep
    goes through the command)."""
    from conftest import gate_run
    from releasegate.inputs.rubric import load_rubric
    from releasegate.record.records import RunDir

    path = run.build(tmp_path)
    rundir = RunDir(path)
    report = gate_run(rundir.read_info(), rundir.read_records(), load_rubric(path / "rubric.yaml"), None,
                       rundir.read_records("load.jsonl", required=False))
    return report["exit_code"], report


def criterion(report: dict, metric: str) -> dict:
    return next(c for c in report["criteria"] if c["metric"] == metric)


# rise 10, 20, 40 (broke), then bisect 30 (met), 35 (broke)
RISE_AND_BISECT = [(10, 20.0), (20, 40.0), (40, 900.0), (30, 80.0), (35, 400.0)]


def test_capacity_is_the_highest_rate_met_below_the_first_that_broke(tmp_path, capsys):
    code, report = gate(tmp_path, sweep_run(RISE_AND_BISECT), capsys)
    cap = report["capacity"]
    assert cap["capacity_rps"] == 30 and cap["capacity_step"] == 3 and cap["break_step"] == 4
    assert [s["rate"] for s in cap["steps"]] == [10, 20, 30, 35, 40]  # in rate order
    assert [s["verdict"] for s in cap["steps"]] == ["meets", "meets", "meets", "breaks", "breaks"]
    assert code == 0 and criterion(report, "capacity_rps")["verdict"] == "pass"
    # latency, throughput and cost come from the capacity step alone
    assert report["metrics"]["ttft_ms_p50"]["n"] == 60 and report["metrics"]["ttft_ms_p50"]["value"] == pytest.approx(72)
    assert cap["cost_per_1m_output_tokens"] is None  # the corpus run has no cost config
    # signals rose with the rate: the scale-out threshold is their mean at the capacity
    assert cap["thresholds"]["queue"]["scale_out_above"] == pytest.approx(3.0)
    assert cap["thresholds"]["queue"]["at_break"] == pytest.approx(3.5)


def test_steps_above_the_capacity_do_not_count_against_the_error_rate(tmp_path, capsys):
    # the overloaded step failed 30 of 60 requests: that is what overload looks like, not a broken model
    code, report = gate(tmp_path, sweep_run(RISE_AND_BISECT, failed={2: 30}), capsys)
    assert report["capacity"]["capacity_rps"] == 30 and code == 0
    assert report["counts"]["phases"]["load"]["failed"] == 30  # still reported
    # ... while a failure at or below the capacity counts (here it breaks that step's objective too)
    code, report = gate(tmp_path / "b", sweep_run(RISE_AND_BISECT, failed={1: 2}), capsys)
    assert report["capacity"]["capacity_rps"] == 10 and criterion(report, "capacity_rps")["verdict"] == "fail"


def test_a_step_the_server_fell_behind_on_breaks_the_objective_within_its_latency_limits(tmp_path, capsys):
    # 100 req/s met the latency limits on a 0.6 s step, but its TTFT rose by 100 ms from first to last request:
    # a backlog growing by 75 ms between the first and last quarter, an eighth of the step
    steps = [(10, 20.0), (20, 20.0), (100, 20.0)]
    _, report = gate(tmp_path, sweep_run(steps, growth={2: 100.0}), capsys)
    step = report["capacity"]["steps"][2]
    assert step["ttft_sched_ms_p95"] < SLO["ttft_ms_p95"]
    assert step["verdict"] == "breaks" and "fell behind" in step["why"] and step["kept_up"] < 0.9
    assert report["capacity"]["capacity_rps"] == 20
    # within the tolerance (growth up to 1/KEEP_UP - 1 of the span), a step keeps its verdict
    _, report = gate(tmp_path / "b", sweep_run(steps, growth={2: 40.0}), capsys)
    assert report["capacity"]["capacity_rps"] == 100 and report["capacity"]["at_least"]


def test_one_slow_request_at_the_end_of_a_step_is_no_backlog(tmp_path, capsys):
    run = sweep_run([(10, 20.0), (20, 20.0), (100, 20.0)])
    run.load[-1]["timing"]["ttft_sched_ms"] = 190.0  # a stall at the end: not a backlog (the medians do not move)
    _, report = gate(tmp_path, run, capsys)
    assert report["capacity"]["steps"][2]["kept_up"] == pytest.approx(1.0) and report["capacity"]["capacity_rps"] == 100


def test_failures_at_the_lowest_rate_count_even_when_no_capacity_was_found(tmp_path, capsys):
    # the server failed 30 of 60 requests at 10 req/s: no capacity, and the run's error rate says why
    code, report = gate(tmp_path, sweep_run([(10, 20.0)], failed={0: 30}, rubric=lenient()), capsys)
    assert report["capacity"]["capacity_rps"] is None and "error rate" in report["capacity"]["why"]
    assert report["verdict"] == "FAIL" and code == 1
    assert criterion(report, "error_rate")["n"] == 100 + 60


def test_a_lower_step_that_broke_caps_the_capacity_below_a_higher_one_that_met(tmp_path, capsys):
    # noise: 20 broke, 30 met; every step at or below the capacity must have met the objective
    _, report = gate(tmp_path, sweep_run([(10, 20.0), (20, 300.0), (30, 80.0), (40, 900.0)]), capsys)
    assert report["capacity"]["capacity_rps"] == 10


@pytest.mark.parametrize("name, run, why", [
    ("the lowest rate already broke", sweep_run([(10, 900.0)]), "broke already at the lowest rate"),
    ("too few answered requests in a step", sweep_run([(10, 20.0), (20, 40.0)], counts={1: MIN_STEP_SAMPLES - 1}),
     "decided nothing"),
    ("a saturated client", sweep_run(RISE_AND_BISECT, client={"loop_lag_ms": {"p99": 30.0}}), "client saturated"),
    ("no step recorded", sweep_run([]), "ran no step"),
])
def test_a_capacity_not_established_is_insufficient_never_a_pass(tmp_path, capsys, name, run, why):
    code, report = gate(tmp_path, run, capsys)
    c = criterion(report, "capacity_rps")
    assert c["verdict"] == "insufficient" and c["value"] is None and why in c["reason"], c
    assert report["verdict"] != "PASS" and code == 3
    assert report["capacity"]["capacity_rps"] is None


def test_a_late_client_that_could_not_have_made_the_verdicts_leaves_them_standing(tmp_path, capsys):
    # lag p99 12 ms: saturated (TTFT p50 18-36 ms), but TPOT 5 ms + 12 still meets 20 ms, the breaking steps
    # break by far more than 12 ms, and TTFT from the scheduled send is only ever made longer by a late client
    code, report = gate(tmp_path, sweep_run(RISE_AND_BISECT, client={"loop_lag_ms": {"p99": 12.0}}), capsys)
    assert report["capacity"]["capacity_rps"] == 30 and code == 0
    # ... while a lag of 16 ms could have hidden a TPOT over 20 ms
    code, report = gate(tmp_path / "b", sweep_run(RISE_AND_BISECT, client={"loop_lag_ms": {"p99": 16.0}}), capsys)
    assert report["capacity"]["capacity_rps"] is None and "client saturated" in report["capacity"]["why"]


def test_the_rubric_lag_share_decides_whether_a_step_was_saturated(tmp_path, capsys):
    # lag p99 15 ms against TTFT p50 18 ms and more: saturated at the default 10%, not at a share of 1
    code, report = gate(tmp_path, sweep_run(RISE_AND_BISECT, client={"loop_lag_ms": {"p99": 15.0}},
                                            rubric=capacity_rubric(max_client_lag_share=1.0)), capsys)
    assert report["capacity"]["capacity_rps"] == 30 and code == 0


def test_met_up_to_max_rps_is_a_floor(tmp_path, capsys):
    code, report = gate(tmp_path, sweep_run([(10, 20.0), (20, 30.0)], max_rps=20), capsys)
    cap = report["capacity"]
    assert cap["capacity_rps"] == 20 and cap["at_least"] and "at least" in cap["why"] and code == 0


def test_no_sweep_gives_no_capacity(tmp_path, capsys):
    code, report = gate(tmp_path, Run(_healthy(), rubric=capacity_rubric()), capsys)
    assert criterion(report, "capacity_rps")["verdict"] == "insufficient" and code == 3
    assert "load.sweep" in criterion(report, "capacity_rps")["reason"]


def test_reports_show_the_sweep(tmp_path, capsys):
    path = sweep_run(RISE_AND_BISECT).build(tmp_path)
    assert main(["gate", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # lines wrapped at 80 columns, joined again
    assert "capacity at P95 TTFT <= 200 ms, P95 TPOT <= 20 ms, errors <= 1%: 30 req/s" in out
    assert "scale out when queue length (waiting) averages above 3" in out
    md = (path / "report.md").read_text()
    assert "## Capacity" in md and "meets (capacity)" in md
    html = (path / "report.html").read_text()
    assert "Capacity at the latency objective" in html and html.count("<svg") >= 2


def test_capacity_view_is_none_without_a_sweep():
    info = RunInfo(run_id="r", created_at="2026-12-01T00:00:00Z", target="t", backend="openai",
                   load_phase={"profile": "closed loop"})
    assert capacity_view(info, []) is None


@pytest.mark.parametrize("criteria, message", [
    ([{"metric": "capacity_rps", "op": "<=", "threshold": 20}], "use op '>=' or '>'"),
    ([{"metric": "capacity_rps", "op": ">=", "threshold": 20, "slice": {"task": "t"}}], "no slice"),
    ([{"metric": "capacity_rps", "op": ">=", "threshold": 20, "confidence": 0.95}], "has no confidence bound"),
])
def test_rubric_refuses_capacity_criteria_that_cannot_mean_anything(tmp_path, capsys, criteria, message):
    import yaml

    (tmp_path / "r.yaml").write_text(yaml.safe_dump({"criteria": criteria}))
    from releasegate.errors import InputError
    from releasegate.inputs.rubric import load_rubric

    with pytest.raises(InputError, match=message):
        load_rubric(tmp_path / "r.yaml")


def endpoint_project(tmp_path, load: str):
    from conftest import ROOT

    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: capacity_rps, op: '>=', threshold: 5}\n")
    config = tmp_path / "c.yaml"
    config.write_text(
        "target: {backend: openai, base_url: 'http://127.0.0.1:9/v1', model: m}\n"
        f"suites:\n  - {{path: {ROOT / 'suites/demo/tickets.jsonl'}}}\nrubric: rubric.yaml\n{load}")
    return config


@pytest.mark.parametrize("load, message", [
    ("load: {rate: 5, sweep: {start_rps: 1, max_rps: 9, slo: {ttft_ms_p95: 100}}}", "drop load.rate"),
    ("load: {requests: 50, sweep: {start_rps: 1, max_rps: 9, slo: {ttft_ms_p95: 100}}}", "drop load.requests"),
    ("load: {sweep: {start_rps: 10, max_rps: 5, slo: {ttft_ms_p95: 100}}}", "max_rps is below start_rps"),
    ("load: {sweep: {start_rps: 1, max_rps: 9, slo: {error_rate: 0.1}}}", "sweep.slo"),
    ("load: {sweep: {start_rps: 1, max_rps: 9, requests_per_step: 5, slo: {ttft_ms_p95: 100}}}", "requests_per_step"),
])
def test_config_refuses_a_sweep_that_cannot_run(tmp_path, cli, load, message):
    code, _, err = cli("validate", "-c", endpoint_project(tmp_path, load + "\n"))
    assert code == 2 and message in err and "Traceback" not in err, err


def test_a_valid_sweep_config_loads(tmp_path):
    from releasegate.inputs.config import load_config

    config = load_config(endpoint_project(tmp_path, "load: {warmup: 2, sweep: {start_rps: 2, max_rps: 64, "
                                                    "step_s: 3, slo: {ttft_ms_p95: 500, tpot_ms_p95: 50}}}\n"))
    sweep = config.load.sweep
    assert (sweep.start_rps, sweep.max_rps, sweep.factor, sweep.requests_per_step, sweep.step_s, sweep.refine) == (2, 64, 2.0, 60, 3, 3)
    assert sweep.slo == {"error_rate": 0.01, "ttft_ms_p95": 500, "tpot_ms_p95": 50}


def test_capacity_command_prints_the_steps_and_exits_by_whether_a_capacity_is_known(tmp_path, cli):
    known = sweep_run(RISE_AND_BISECT).build(tmp_path / "known")
    unknown = sweep_run([(10, 900.0)]).build(tmp_path / "unknown")
    plain = Run(_healthy()).build(tmp_path / "plain")
    for path in (known, unknown, plain):
        cli("gate", path)  # writes report.json
    code, out, _ = cli("capacity", known)
    rows = [line.split() for line in out.splitlines() if line.strip()[:2].isdigit()]
    assert code == 0 and [r[0] for r in rows] == ["10", "20", "30", "35", "40"] and rows[2][-1] == "*"
    assert "30 req/s" in out and max(len(line) for line in out.splitlines()) <= 80
    code, out, _ = cli("capacity", unknown, "--json")
    assert code == 3 and json.loads(out)["capacity_rps"] is None
    code, _, err = cli("capacity", plain)
    assert code == 2 and "no capacity sweep" in err


def test_the_reports_plot_the_requests_the_gate_judged(tmp_path, capsys):
    """A sweep's latency and cost come from its capacity step: the HTML report's plots and token counts use that
    step's requests too, not every step's (those above the capacity were meant to break the objective)."""
    from releasegate.record.records import RunDir
    from releasegate.report.view import RunView

    path = sweep_run(RISE_AND_BISECT).build(tmp_path)
    assert main(["gate", str(path)]) == 0
    view = RunView.load(RunDir(path))
    timed = view.timed_records()
    assert view.report["latency_from"] == "load" and view.report["capacity"]["capacity_step"] == 3
    assert timed and {r.tags["sweep_step"] for r in timed} == {3}
    assert max(view.latency_samples()["ttft_ms"]) < 80  # step 3's; the broken steps ran to 900 ms
