"""The client's own lateness (event-loop lag, CPU share, batched stamps), connect times, the one meaning of send lag,
and duration-bounded closed loops that make only the requests they send. Against the stub server."""

from __future__ import annotations

import json
import time

import pytest

from conftest import write_jsonl
from releasegate.backends._attempt import RequestClock as _Clock
from releasegate.backends._attempt import failed as _failed
from releasegate.backends.openai import OpenAIBackend
from releasegate.inputs.load_profile import LoadConfig
from releasegate.record.records import RunDir
from releasegate.scale import traffic as load_module
from releasegate.scale.traffic import plan_load
from releasegate.testing import StubBehaviour, StubServer

CLIENTS = ["lean", "openai"]
BLOCK_S = 0.05
SUMMARY_KEYS = {"client", "event_loop", "window_s", "loop_lag_ms", "tick_ms", "cpu_share", "process_cpu_share",
                "loop_busy_share", "rx_dispatch_ms", "itl_batched_share", "itl_gaps", "connect_ms", "preconnect_ms"}


def project(tmp_path, base_url, *, client="lean", load="", cases=6, concurrency=3):
    tmp_path.mkdir(parents=True, exist_ok=True)
    write_jsonl(tmp_path / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"} for i in range(cases)
    ])
    (tmp_path / "rubric.yaml").write_text(
        "max_client_lag_share: 10\ncriteria:\n  - {metric: error_rate, op: '<=', threshold: 0.0}\n")
    (tmp_path / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  client: {client}\n"
        f"  concurrency: {concurrency}\n  retries: 0\n  timeout_s: 10\n"
        f"generation: {{max_new_tokens: 16}}\n"
        f"suites: [{{path: suite.jsonl, answer: {{type: regex, pattern: tok}}}}]\nrubric: rubric.yaml\n{load}"
    )
    return tmp_path / "releasegate.yaml"


def check(cli, config, run_id="r"):
    code, _, err = cli("check", "-c", config, "--run-id", run_id, "--no-progress", "--json")
    run = RunDir(config.parent / "reports" / run_id)
    return code, run, json.loads((run.path / "run.json").read_text()), err


def block_the_loop(loop):
    """Every 10 ms, a callback that holds the client's event loop for BLOCK_S."""

    def busy():
        time.sleep(BLOCK_S)
        loop.call_later(0.01, busy)

    loop.call_later(0.01, busy)


@pytest.mark.parametrize("client", CLIENTS)
def test_every_run_reports_the_clients_lateness(tmp_path, cli, client):
    with StubServer(StubBehaviour(ttft_ms=10, itl_ms=2, tokens=6)) as stub:
        config = project(tmp_path, stub.base_url, client=client, load="load: {concurrency: 4, requests: 12, warmup: 2}\n")
        code, run, info, err = check(cli, config)
    assert code == 0, err
    for summary in (info["client"], info["load_phase"]["client"]):  # the quality phase's, the load window's
        assert set(summary) == SUMMARY_KEYS and summary["client"] == client
        assert summary["window_s"] > 0 and 0 < summary["cpu_share"] <= 1.5
        lag = summary["loop_lag_ms"]
        assert lag["n"] > 0 and 0 <= lag["p50"] <= lag["p99"] <= lag["max"]
        assert summary["itl_gaps"] > 0 and 0 <= summary["itl_batched_share"] <= 1
        if client == "openai" or summary["event_loop"] == "uvloop":
            assert summary["rx_dispatch_ms"] is None  # not observable there: said, not guessed
        else:
            assert summary["rx_dispatch_ms"]["n"] > 0
        if summary["event_loop"] == "asyncio":
            assert 0 < summary["loop_busy_share"] <= 1
    # the lean client opens the load window's connections before it (4 in flight: the warm-up left 2 open, 2 more
    # are opened), so none is opened inside and no measured request's send lag holds a connect
    load = info["load_phase"]["client"]
    if client == "lean":
        assert load["preconnect_ms"]["n"] == 2 and load["connect_ms"] is None
        assert all(r.timing.connect_ms is None for r in run.read_records("load.jsonl"))
    else:
        assert load["preconnect_ms"] is None


def test_a_blocked_event_loop_shows_as_loop_lag(tmp_path, cli, monkeypatch):
    load = "load: {concurrency: 4, duration_s: 0.8}\n"
    with StubServer(StubBehaviour(ttft_ms=10, itl_ms=2, tokens=6)) as stub:
        _, _, free, _ = check(cli, project(tmp_path / "free", stub.base_url, load=load))
        monkeypatch.setattr(OpenAIBackend, "on_loop", staticmethod(block_the_loop))
        _, _, blocked, _ = check(cli, project(tmp_path / "blocked", stub.base_url, load=load))
    block_ms = BLOCK_S * 1e3
    for phase in ("client", "load_phase"):
        calm = (free[phase] if phase == "client" else free[phase]["client"])["loop_lag_ms"]
        late = (blocked[phase] if phase == "client" else blocked[phase]["client"])["loop_lag_ms"]
        assert late["max"] >= 0.6 * block_ms and late["p99"] >= 0.5 * block_ms, (phase, late)
        assert late["p99"] > calm["p99"] + 0.3 * block_ms and late["p50"] > calm["p50"], (phase, calm, late)


@pytest.mark.parametrize("client", CLIENTS)
def test_batched_stamps_are_flagged(tmp_path, cli, client):
    shares = {}
    for itl in (0.0, 20.0):  # all chunks written back to back (read together), or 20 ms apart (a loaded machine
        # can read chunks 4 ms apart together)
        with StubServer(StubBehaviour(ttft_ms=5, itl_ms=itl, tokens=6)) as stub:
            code, _, info, err = check(cli, project(tmp_path / str(itl), stub.base_url, client=client))
        assert code == 0, err
        shares[itl] = info["client"]["itl_batched_share"]
    assert shares[0.0] > 0.5 > shares[20.0], shares


def test_duration_bounded_closed_loop_makes_only_the_requests_it_sends(tmp_path, cli, monkeypatch):
    made = []
    nth = load_module.nth_request

    def counting(pool, i, prefix):
        made.append(prefix)
        return nth(pool, i, prefix)

    monkeypatch.setattr(load_module, "nth_request", counting)
    concurrency = 4
    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=4)) as stub:
        config = project(tmp_path, stub.base_url, load=f"load: {{concurrency: {concurrency}, duration_s: 0.5, warmup: 2}}\n")
        code, run, info, err = check(cli, config)
    assert code == 0, err
    records = run.read_records("load.jsonl")
    created = made.count("load")
    assert len(records) > concurrency  # the loop ran for its duration, not one round
    assert created <= len(records) + concurrency and created == len(records)
    assert [r.case_id for r in records] == [f"load-{i:05d}:c{i % 6}" for i in range(len(records))]  # in order
    phase = info["load_phase"]
    assert phase["planned"] == phase["requests"] == len(records) and phase["cut_short"] is None
    assert "for 0.5 s" in phase["profile"]


def test_plan_of_a_duration_bounded_loop_is_lazy():
    from releasegate.inputs.suites import Case

    cases = [Case(id=f"c{i}", suite="s", expected=None, messages=({"role": "user", "content": "x"},)) for i in range(2)]
    plan = plan_load(LoadConfig(concurrency=2, duration_s=60.0), cases)
    assert plan.requests is None
    it = plan.iter_requests()
    assert [next(it).case_id for _ in range(3)] == ["load-00000:c0", "load-00001:c1", "load-00002:c0"]
    fixed = plan_load(LoadConfig(concurrency=2, requests=3, duration_s=60.0), cases)
    assert [r.case_id for r in fixed.iter_requests()] == ["load-00000:c0", "load-00001:c1", "load-00002:c0"]


@pytest.mark.parametrize("client", CLIENTS)
def test_connect_time_for_new_connections_none_for_reused(tmp_path, cli, client):
    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=4)) as stub:
        code, run, info, err = check(cli, project(tmp_path, stub.base_url, client=client, cases=9, concurrency=3))
    assert code == 0, err
    timings = [r.timing for r in run.read_records()]
    opened = [t for t in timings if t.connect_ms is not None]
    assert 1 <= len(opened) <= 3 < len(timings)  # 3 at a time on keep-alive connections: later ones reuse
    for t in timings:
        assert t.send_lag_ms is not None and t.send_lag_ms >= 0  # measured for both clients: last byte written
        assert t.ttft_sched_ms == pytest.approx(t.ttft_ms + t.send_lag_ms, abs=1e-6)
    for t in opened:
        assert 0 < t.connect_ms <= t.send_lag_ms  # the connect is part of the send lag
    assert info["client"]["connect_ms"]["n"] == len(opened)


def test_every_request_on_a_new_connection_has_a_connect_time(tmp_path, cli):
    # the server closes each connection after one answer: no request reuses one
    with StubServer(StubBehaviour(tokens=4, keepalive_max=1)) as stub:
        code, run, _, err = check(cli, project(tmp_path, stub.base_url, cases=6, concurrency=2))
    assert code == 0, err
    assert all(r.timing.connect_ms is not None and r.timing.connect_ms > 0 for r in run.read_records())


def test_send_lag_is_unknown_when_the_write_was_not_seen():
    ms = 1_000_000
    unseen = _failed("connection_error", "refused", _Clock(0, 2 * ms, 2 * ms, 9 * ms, written=False), 1)
    seen = _failed("http_5xx", "500", _Clock(0, 2 * ms, 2 * ms, 9 * ms, written=True, connect=ms), 1)
    assert unseen.timing.send_lag_ms is None and unseen.timing.e2e_ms == 7.0 and unseen.timing.connect_ms is None
    assert seen.timing.send_lag_ms == 2.0 and seen.timing.connect_ms == 1.0


def test_open_loop_makes_a_request_task_only_when_it_is_due(tmp_path):
    """20 arrivals 40 ms apart: when the first answer is in, only the requests already due have a task."""
    import asyncio

    from releasegate.backends import Request
    from releasegate.inputs.config import load_config

    in_flight_at_first_answer = []

    def on_done(_gen):
        if not in_flight_at_first_answer:
            in_flight_at_first_answer.append(len(asyncio.all_tasks()))

    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=2)) as stub:
        config = load_config(project(tmp_path, stub.base_url))
        backend = OpenAIBackend(config.target, config.generation)
        backend.load()
        requests = [Request(f"r{i}", [{"role": "user", "content": "hi"}], None) for i in range(20)]
        run = backend.run_load(requests, offsets=[0.04 * i for i in range(20)], concurrency=4, max_new_tokens=4,
                               on_done=on_done)
        backend.close()
    assert len(run.results) == 20 and all(gen.error is None for _, gen in run.results)
    # the main task, the lateness probe and the few requests due by then; an eager loop would hold all 20
    assert in_flight_at_first_answer[0] < 10
