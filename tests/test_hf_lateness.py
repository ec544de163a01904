"""Client lateness for every backend: the in-process hf backend measures the time its generating thread waited for a
CPU (`backends._starvation`) and keeps it as a client summary, so a starved machine widens the latency bounds (or
leaves them undecided) instead of failing them; the lean client's send lag counts in its lateness as the openai
client's does. Starvation and send delays are injected: a fake clock and a fake CPU-wait reader, a send scheduled
earlier than it was; no figure here depends on how fast this machine is."""

from __future__ import annotations

import json
import types
from types import SimpleNamespace

import pytest

from conftest import ROOT, write_jsonl
from releasegate.backends._starvation import GenerationLateness, RequestWait, StarvedSteps, waited_ns
from releasegate.decision.latency import widened_latency
from releasegate.gate.health import client_lateness_ms
from releasegate.record.records import CaseRecord
from test_false_pass import ok

STEP_MS = 1000.0
"""Every read of the hf backend's step clock is this much after the last one (the fake clock)."""


class StarvedMachine:
    """A fake clock and CPU-wait reader: each clock read comes STEP_MS after the last, `starved_ms` of which the
    generating thread spent waiting for a CPU."""

    def __init__(self, starved_ms: float) -> None:
        self.starved_ns = int(starved_ms * 1e6)
        self.now_ns = 0
        self.waited = 0

    def now(self, _clock=None) -> int:
        self.now_ns += int(STEP_MS * 1e6)
        self.waited += self.starved_ns
        return self.now_ns

    def waits(self) -> dict[int, int]:
        return {7: self.waited}


# -- the figures ------------------------------------------------------------------------------------------------
def _steps(*reads_ns: int) -> StarvedSteps:
    """Steps whose CPU-wait reads (ns) are the start's, then one after each step."""
    reads = iter({1: ns} for ns in reads_ns)
    steps = StarvedSteps(lambda: next(reads))
    for _ in reads_ns[1:]:
        steps(None, None)
    return steps


def test_a_requests_wait_is_the_most_its_ttft_or_tpot_holds_and_its_e2e_all_of_it():
    # prefill waited 30 ns, the decode 60 ns over the 3 tokens after the first (20 each): the TTFT holds the most
    steps = _steps(0, 30, 40, 50, 90)
    assert steps.request(4, 3) == RequestWait(pytest.approx(30e-6), pytest.approx(90e-6))
    assert steps.request(2, 1) == RequestWait(pytest.approx(30e-6), pytest.approx(40e-6))  # stopped after 2 tokens
    # a decode that waited 300 ns over 3 tokens: each TPOT holds 100
    assert _steps(0, 30, 130, 230, 330).request(4, 3) == RequestWait(pytest.approx(100e-6), pytest.approx(330e-6))


def test_a_thread_made_in_the_window_counts_whole_and_one_gone_is_left_out():
    assert waited_ns({1: 100, 2: 50}, {1: 130, 3: 20}) == 30 + 20


def test_wall_minus_cpu_stands_in_only_where_it_is_sound(monkeypatch):
    """Without the kernel's run-queue figures, one thread on CPU falls back to wall minus CPU time; on CUDA (the
    thread blocks in synchronize) or with several torch threads (they wait in barriers) nothing is measured."""
    from releasegate.backends import _starvation

    monkeypatch.setattr(_starvation, "_schedstat_works", lambda: False)
    assert _starvation.cpu_waits(1, "cpu")[1] == "off_cpu"
    assert _starvation.cpu_waits(1, "cuda") is None and _starvation.cpu_waits(4, "cpu") is None


def test_the_summary_has_the_endpoint_clients_shape():
    from test_client_lateness import SUMMARY_KEYS

    lateness = GenerationLateness("run_queue")
    assert lateness.summary() is None  # nothing generated: no figure, as before
    lateness.add([RequestWait(5.0, 50.0), RequestWait(7.0, 70.0)], window_s=2.0, thread_cpu_s=0.5, process_cpu_s=0.6)
    summary = lateness.summary()
    assert set(summary) == SUMMARY_KEYS | {"e2e_lag_ms", "lag_source", "reads_long_only"} and summary["client"] == "hf"
    assert summary["loop_lag_ms"]["max"] == 7.0 and summary["e2e_lag_ms"]["max"] == 70.0
    assert summary["cpu_share"] == 0.25 and summary["lag_source"] == "run_queue"


# -- one lateness function for every client ------------------------------------------------------------------
def _info(client: dict) -> SimpleNamespace:
    return SimpleNamespace(client=client, sessions=[], load_phase=None)


def _records(send_lag_ms: float | None) -> list[CaseRecord]:
    out = []
    for i in range(20):
        record = CaseRecord.model_validate(ok(i))
        record.timing.send_lag_ms = send_lag_ms
        out.append(record)
    return out


@pytest.mark.parametrize("client", ["lean", "openai"])
def test_both_endpoint_clients_count_their_send_lag(client):
    summary = {"client": client, "loop_lag_ms": {"p50": 1.0, "p99": 3.0, "max": 4.0, "n": 100}}
    assert client_lateness_ms(_info(summary), "quality", _records(40.0)) == pytest.approx(43.0)
    assert client_lateness_ms(_info(summary), "quality", _records(None)) == pytest.approx(3.0)


def test_an_e2e_figure_takes_the_hf_backends_e2e_wait():
    summary = GenerationLateness("run_queue")
    summary.add([RequestWait(5.0, 50.0)], window_s=1.0, thread_cpu_s=1.0, process_cpu_s=1.0)
    info, records = _info(summary.summary()), _records(None)
    assert client_lateness_ms(info, "quality", records) == 5.0
    assert client_lateness_ms(info, "quality", records, "e2e_ms") == 50.0
    endpoint = _info({"client": "lean", "loop_lag_ms": {"p50": 1.0, "p99": 3.0, "max": 4.0, "n": 100}})
    assert client_lateness_ms(endpoint, "quality", records, "e2e_ms") == 3.0  # an event read late: not accrued


def test_a_wait_for_a_cpu_widens_below_only():
    """An endpoint client's late stamp can read short or long; a starved step only reads long."""
    assert widened_latency("<=", 1500, (1000.0, 1000.0), 900.0)[0] == "insufficient"
    assert widened_latency("<=", 1500, (1000.0, 1000.0), 900.0, reads_long=True)[0] == "pass"
    assert widened_latency("<=", 500, (1000.0, 1000.0), 900.0, reads_long=True)[0] == "insufficient"
    assert widened_latency("<=", 50, (1000.0, 1000.0), 900.0, reads_long=True)[0] == "fail"


# -- the hf backend on the real demo model, starved by a fake machine --------------------------------------------
def _hf_project(tmp_path, criteria: list[dict]):
    cases = [json.loads(line) for line in (ROOT / "suites/demo/tickets.jsonl").read_text().splitlines()[:4]]
    write_jsonl(tmp_path / "suite.jsonl", [{k: c[k] for k in ("id", "messages", "expected")} for c in cases])
    (tmp_path / "rubric.yaml").write_text(json.dumps({"criteria": criteria, "review": {"required_domains": []}}))
    (tmp_path / "releasegate.yaml").write_text(
        f"target: {{backend: hf, base: {ROOT / 'models/demo/base'}, adapter: {ROOT / 'models/demo/adapters/good'}, "
        "threads: 1, batch_size: 2}\ngeneration: {max_new_tokens: 4}\n"
        "suites: [{path: suite.jsonl, answer: {type: json_fields, fields: [intent]}}]\nrubric: rubric.yaml\n")
    return tmp_path / "releasegate.yaml"


def _starved_check(tmp_path, cli, monkeypatch, starved_ms: float, criteria: list[dict]):
    from releasegate.backends import hf

    machine = StarvedMachine(starved_ms)
    monkeypatch.setattr(hf._StepClock, "now", machine.now)
    monkeypatch.setattr(hf, "cpu_waits", lambda threads, device: (machine.waits, "fake"))
    config = _hf_project(tmp_path, criteria)
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    run = tmp_path / "reports" / "r"
    report = json.loads((run / "report.json").read_text())
    return code, report, json.loads((run / "run.json").read_text()), err


SLOW_MODEL = [{"metric": "ttft_ms_p95", "op": "<=", "threshold": 500}, {"metric": "tpot_ms_p95", "op": "<=", "threshold": 500},
              {"metric": "e2e_ms_p95", "op": "<=", "threshold": 2000}, {"metric": "ttft_ms_p50", "op": "<=", "threshold": 1500}]
"""Every step takes STEP_MS (1 s) by the fake clock: TTFT and TPOT 1000 ms, E2E 4000 ms (4 tokens); the last
criterion is met as read."""


@pytest.mark.slow
def test_a_starved_generation_widens_the_latency_bounds_instead_of_failing(tmp_path, cli, monkeypatch):
    """900 of every 1000 ms waited for a CPU: TTFT and TPOT [100, 1000] straddle 500, E2E [400, 4000] (its
    wait accrues over every step) straddles 2000: undecided by the client, never FAIL. A wait only lengthens a
    figure: TTFT p50 1000 ms meets 1500 as read, so it passes however late the thread was."""
    code, report, info, err = _starved_check(tmp_path, cli, monkeypatch, 900.0, SLOW_MODEL)
    assert info["client"]["client"] == "hf" and info["client"]["lag_source"] == "fake"
    assert info["client"]["loop_lag_ms"]["p99"] == pytest.approx(900.0)
    assert info["client"]["e2e_lag_ms"]["p99"] == pytest.approx(3600.0)
    criteria = {c["metric"]: c for c in report["criteria"]}
    assert criteria["ttft_ms_p95"]["value"] == pytest.approx(STEP_MS) and criteria["e2e_ms_p95"]["value"] == pytest.approx(4 * STEP_MS)
    for metric in ("ttft_ms_p95", "tpot_ms_p95", "e2e_ms_p95"):
        assert criteria[metric]["verdict"] == "insufficient" and criteria[metric]["undecided_cause"] == "client", criteria[metric]
    assert criteria["ttft_ms_p50"]["verdict"] == "pass" and "[100, 1000]" in criteria["ttft_ms_p50"]["reason"]
    assert code == 3, err
    assert "generating thread waited 900.0 ms for a CPU" in report["client_saturated"]
    assert "machine is busy" in report["client_saturated"] and "lower concurrency" not in report["client_saturated"]


@pytest.mark.slow
def test_a_slow_model_on_a_quiet_machine_still_fails(tmp_path, cli, monkeypatch):
    """The same 1000 ms steps with no wait for a CPU: the model is slow, the latency criteria FAIL as before."""
    code, report, info, _ = _starved_check(tmp_path, cli, monkeypatch, 0.0, SLOW_MODEL)
    assert info["client"]["loop_lag_ms"]["max"] == 0.0 and not report["client_saturated"]
    verdicts = {c["metric"]: c["verdict"] for c in report["criteria"] if c["metric"] != "error_rate"}
    assert verdicts == {"ttft_ms_p95": "fail", "tpot_ms_p95": "fail", "e2e_ms_p95": "fail", "ttft_ms_p50": "pass"}
    assert code == 1


# -- the lean client's send lag --------------------------------------------------------------------------------
def test_the_lean_clients_lateness_holds_its_send_lag(tmp_path, cli, monkeypatch):
    """Each request scheduled 50 ms before the client sent it (its scheduled stamp moved back, deterministic): the
    send lag holds the 50 ms, and the lateness the gate widens by is the loop lag plus the send lag p99."""
    import time

    from releasegate.backends import openai as backend
    from releasegate.testing import StubBehaviour, StubServer
    from test_client_lateness import check, project

    early = types.SimpleNamespace(**{name: getattr(time, name) for name in ("perf_counter", "sleep", "monotonic")},
                                  perf_counter_ns=lambda: time.perf_counter_ns() - 50_000_000)
    monkeypatch.setattr(backend, "time", early)  # the request's scheduled send (the attempt's start) only
    with StubServer(StubBehaviour(ttft_ms=10, itl_ms=2, tokens=6)) as stub:
        config = project(tmp_path, stub.base_url, client="lean")
        (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: ttft_ms_p95, op: '<=', threshold: 10000}\n"
                                              "review: {required_domains: []}\n")
        code, run, info, err = check(cli, config)
    report = json.loads((run.path / "report.json").read_text())
    send = report["metrics"]["send_lag_ms_p99"]["value"]
    assert code == 0, err
    assert send >= 50.0 and all(r.timing.send_lag_ms >= 50.0 for r in run.read_records())
    assert report["client_lateness_ms"] == pytest.approx(info["client"]["loop_lag_ms"]["p99"] + send)
    ttft = next(c for c in report["criteria"] if c["metric"] == "ttft_ms_p95")
    assert f"client's lateness ({report['client_lateness_ms']:.1f} ms)" in ttft["reason"]
