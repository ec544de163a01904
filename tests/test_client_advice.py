"""Honest client-lateness advice: a client that runs late on a busy machine (late at one request in flight, or its
loop using little CPU while it ran late) is told to find a quieter machine, pin itself or raise
`max_client_lag_share` knowingly, never to lower a concurrency it does not have; a client busy with its own
requests is told to lower concurrency. Every report names `max_client_lag_share` and shows the lag beside TTFT."""

from __future__ import annotations

import json

from releasegate.gate.health import client_saturation
from test_false_pass import Run, lenient, ok

LATE = {"p50": 2.0, "p99": 30.0, "max": 40.0, "n": 500}
"""30 ms late against a TTFT p50 of 50 ms: 60%, over the default max_client_lag_share of 0.1."""


def test_late_at_one_request_in_flight_is_a_busy_machine():
    text = client_saturation(30.0, 50.0, 0.1, cpu_share=0.9, in_flight=1.0)
    assert "machine is busy" in text and "1.0 request(s) in flight" in text
    assert "quieter machine" in text and "taskset" in text and "max_client_lag_share" in text
    assert "lower concurrency" not in text
    assert "30.0 ms late (p99) beside a TTFT p50 of 50.0 ms" in text


def test_late_with_little_cpu_is_a_busy_machine():
    text = client_saturation(30.0, 50.0, 0.1, cpu_share=0.08, in_flight=8.0)
    assert "machine is busy" in text and "8% of a CPU" in text and "lower concurrency" not in text


def test_a_client_busy_with_its_own_requests_is_told_to_lower_concurrency():
    text = client_saturation(30.0, 50.0, 0.1, cpu_share=0.97, in_flight=64.0)
    assert "lower concurrency or add workers" in text and "64.0 requests in flight" in text
    assert "machine is busy" not in text and "max_client_lag_share above 0.1 knowingly" in text


def test_without_figures_both_ways_out_are_named():
    text = client_saturation(30.0, 50.0, 0.1)
    assert "lower concurrency" in text and "quieter machine" in text and "max_client_lag_share" in text
    assert client_saturation(4.0, 50.0, 0.1) is None  # 8% of TTFT: within the share


def _gate(tmp_path, cli, client: dict, tpot_limit: float = 20) -> tuple[dict, str, int]:
    """20 cases one after another (each 95 ms from send to end, TPOT 5 ms), judged with the quality client's
    figures."""
    run = Run([ok(i) for i in range(20)], client=client,
              rubric=lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.8},
                                       {"metric": "tpot_ms_p95", "op": "<=", "threshold": tpot_limit}])).build(tmp_path)
    code, out, _ = cli("gate", run)
    return json.loads((run / "report.json").read_text()), out, code


def test_lateness_widens_a_latency_bound_instead_of_blocking_it(tmp_path, cli):
    """TPOT 5 ms read by a client 30 ms late: [-25, 35] clears a 50 ms limit (PASS) and straddles a 20 ms one."""
    client = {"client": "lean", "window_s": 1.9, "loop_lag_ms": LATE, "cpu_share": 0.9}
    report, _, code = _gate(tmp_path / "clear", cli, client, tpot_limit=50)
    tpot = next(c for c in report["criteria"] if c["metric"] == "tpot_ms_p95")
    assert code == 0 and tpot["verdict"] == "pass" and "client's lateness (30.0 ms)" in tpot["reason"]
    report, _, code = _gate(tmp_path / "straddle", cli, client)
    tpot = next(c for c in report["criteria"] if c["metric"] == "tpot_ms_p95")
    assert code == 3 and tpot["verdict"] == "insufficient" and tpot["undecided_cause"] == "client"
    assert "straddles 20" in tpot["reason"]


def test_the_reports_say_a_sequential_run_on_a_busy_machine_is_the_machine(tmp_path, cli):
    # 20 x 95 ms over a 1.9 s window: one request in flight at a time, as llama.cpp at concurrency 1
    report, terminal, code = _gate(tmp_path, cli, {"client": "lean", "window_s": 1.9, "loop_lag_ms": LATE, "cpu_share": 0.9})
    why = report["client_saturated"]
    assert "machine is busy" in why and "1.0 request(s) in flight" in why and "lower concurrency" not in why
    tpot = next(c for c in report["criteria"] if c["metric"] == "tpot_ms_p95")
    assert code == 3 and tpot["verdict"] == "insufficient" and tpot["undecided_cause"] == "client"
    run = tmp_path / "run"  # Markdown escapes '_': the text read without its backslashes
    for text in (" ".join(terminal.split()), (run / "report.md").read_text().replace("\\", ""), (run / "report.html").read_text()):
        assert "max_client_lag_share" in text and "quieter machine" in text
        assert "30.0 ms late (p99) beside a TTFT p50 of 50.0 ms" in text


def test_the_reports_tell_a_crowded_client_to_lower_concurrency(tmp_path, cli):
    # the same 1.9 s of requests in a 0.19 s window: ten in flight, the loop on a CPU all the time
    report, _, _ = _gate(tmp_path, cli, {"client": "lean", "window_s": 0.19, "loop_lag_ms": LATE, "cpu_share": 0.98})
    assert "lower concurrency" in report["client_saturated"] and "10.0 requests in flight" in report["client_saturated"]


def test_a_real_run_at_one_in_flight_on_a_starved_loop_is_told_the_machine_is_busy(tmp_path, cli, monkeypatch):
    """The lean client against the stub, one request at a time, its loop held by a sleeping callback (as a CPU
    other processes hold): the loop uses little CPU and there is no concurrency to lower."""
    from releasegate.backends.openai import OpenAIBackend
    from releasegate.testing import StubBehaviour, StubServer
    from test_client_lateness import block_the_loop, check, project

    monkeypatch.setattr(OpenAIBackend, "on_loop", staticmethod(block_the_loop))
    with StubServer(StubBehaviour(ttft_ms=10, itl_ms=2, tokens=6)) as stub:
        config = project(tmp_path, stub.base_url, cases=6, concurrency=1)
        (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: tpot_ms_p95, op: '<=', threshold: 1000}\n"
                                              "review: {required_domains: []}\n")
        code, run, info, _ = check(cli, config)
    report = json.loads((run.path / "report.json").read_text())
    why = report["client_saturated"]
    assert code == 3 and why and "machine is busy" in why and "lower concurrency" not in why, why
    assert "max_client_lag_share" in why and "beside a TTFT p50 of" in why
