"""Capacity means the server completed what was offered: hand-built sweeps judged by `releasegate gate --json`
with the verdict and exit code each must get, and the same reproductions end to end through `check` against
the stub server. Each of these once said PASS (or FAIL where the evidence could not decide it)."""

from __future__ import annotations

import http.client
import itertools
import json
import math
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import write_jsonl
from releasegate.cli import main
from releasegate.decision.verdicts import EXIT_CODES
from releasegate.inputs.config import load_config
from releasegate.record.records import CaseRecord, Timing, Tokens
from releasegate.testing import StubBehaviour, StubServer
from test_capacity import QUIET, endpoint_project, gate, sweep_run
from test_false_pass import Run, _healthy, lenient

TTFT_ONLY = {"ttft_ms_p95": 200.0, "error_rate": 0.01}


def paced_step(step: int, rate: float, n: int = 60, *, served_rps: float | None = None, ttft: float = 20.0,
               e2e: float = 60.0, first_token_free: bool = True, empty: float = 0.0, empty_kind: str | None = None) -> list[dict]:
    """n requests of one step, due every 1/rate s, answered first come first served by a server that completes
    at most `served_rps` (None: as fast as asked) and takes `e2e` ms unloaded. With `first_token_free` the first
    token comes `ttft` ms after the due time whatever the queue (a prefill-first scheduler), else it waits in the
    queue too. A share `empty` of the requests, spread evenly, are HTTP-200 answers with no content
    (`empty_kind`: the error the backend gave them, None when it did not classify them)."""
    out, free_at = [], 0.0
    for i in range(n):
        due = i / rate
        done = max(due + e2e / 1000, free_at + 1 / served_rps) if served_rps else due + e2e / 1000
        free_at = done
        e2e_sched = (done - due) * 1000
        first = ttft if first_token_free else e2e_sched - (e2e - ttft)
        blank = math.floor((i + 1) * empty) > math.floor(i * empty)
        out.append(CaseRecord(
            case_id=f"s{step:02d}-{i:05d}:c{i % 10:03d}", suite="load",
            tags={"phase": "load", "prompt_of": f"c{i % 10:03d}", "sweep_step": step},
            input={"prompt": "p"}, output="" if blank else "ok", error=empty_kind if blank else None,
            tokens=Tokens(input=5, output=0 if blank else 10),
            timing=Timing(ttft_sched_ms=None if blank else first, ttft_ms=None if blank else first * 0.9,
                          tpot_ms=None if blank else 4.0, e2e_ms=e2e_sched - 1, e2e_sched_ms=e2e_sched),
        ).model_dump(mode="json"))
    return out


def paced_sweep(steps: list[tuple[float, dict]], *, slo: dict = TTFT_ONLY, max_rps: float = 64.0,
                threshold: float = 64.0) -> Run:
    """A sweep run from (rate, paced_step options) per step, in the order they ran, with the criterion
    `capacity_rps >= threshold`."""
    load, entries = [], []
    for k, (rate, options) in enumerate(steps):
        records = paced_step(k, rate, **options)
        load += records
        span = (len(records) - 1) / rate
        last = max(i / rate + r["timing"]["e2e_sched_ms"] / 1000 for i, r in enumerate(records))
        entries.append({"step": k, "rate": rate, "span_s": span, "seconds": last + 0.05, "requests": len(records),
                        "client": QUIET, "signals": {}})
    phase = {"profile": "capacity sweep", "seconds": sum(e["seconds"] for e in entries), "requests": len(load),
             "cut_short": None, "client": QUIET, "sweep": {"slo": slo, "max_rps": max_rps, "steps": entries}}
    rubric = lenient(criteria=[{"metric": "capacity_rps", "op": ">=", "threshold": threshold}])
    return Run(_healthy(), load=load, load_phase=phase, rubric=rubric)


def floor_run(threshold: float, op: str = ">=") -> Run:
    """A sweep that met the objective at 16, 32 and 64 req/s, 64 being max_rps: a floor, at least 64."""
    run = sweep_run([(16, 20.0), (32, 20.0), (64, 20.0)], max_rps=64)
    run.rubric = lenient(criteria=[{"metric": "capacity_rps", "op": op, "threshold": threshold}])
    return run


def bracket_run(threshold: float) -> Run:
    """30 req/s met the objective, 35 broke it."""
    run = sweep_run([(10, 20.0), (20, 40.0), (40, 900.0), (30, 80.0), (35, 400.0)])
    run.rubric = lenient(criteria=[{"metric": "capacity_rps", "op": ">=", "threshold": threshold}])
    return run


OVERLOADED = {"served_rps": 10.4, "e2e": 60.0}
"""A server that completes 10.4 req/s whatever it is offered, first token at once (the issue's reproduction)."""

SHEDDING = {"n": 220, "empty": 0.72}

CORPUS: dict[str, tuple[Run, str]] = {
    # the control: a server that keeps pace meets a TTFT-only objective up to max_rps: at least 64 >= 64
    "keeps pace up to max_rps": (paced_sweep([(16, {}), (32, {}), (64, {})]), "PASS"),
    # first token at once, the rest of the answer queued: TTFT flat at 20 ms, 10.4 req/s completed of 32 and 64
    # offered; "kept up" read TTFT only and said "at least 64"
    "TTFT kept up, completion did not": (paced_sweep([(16, {}), (32, OVERLOADED), (64, OVERLOADED)]), "FAIL"),
    # ... and from the lowest rate on: no capacity at all
    "TTFT kept up, completion never did": (paced_sweep([(16, OVERLOADED)]), "INCONCLUSIVE"),
    # the same server queueing whole answers (decode slots): its TTFT from the scheduled send grows too
    "decode slots queue whole answers": (
        paced_sweep([(16, {}), (32, {**OVERLOADED, "first_token_free": False})], slo={"ttft_ms_p95": 60000.0}),
        "FAIL"),
    # the objective names E2E: a server that keeps pace but answers in 900 ms breaks an E2E P50 of 500 ms
    "E2E objective": (paced_sweep([(16, {"e2e": 900.0})], slo={"ttft_ms_p95": 200.0, "e2e_ms_p50": 500.0}),
                      "INCONCLUSIVE"),
    # shedding: 72% of the top step's 220 answers are HTTP-200 streams with no content (62 real answers are
    # enough for its P95 bound); the backend did not classify them (error None, output ""), or did
    # (empty_response): either way they are failed requests
    "sheds load with empty answers": (paced_sweep([(16, {}), (32, {}), (64, SHEDDING)]), "FAIL"),
    "sheds load, classified": (paced_sweep([(16, {}), (32, {}), (64, {**SHEDDING, "empty_kind": "empty_response"})]),
                               "FAIL"),
    # a floor: at least 64 (met up to max_rps) says nothing about 100, and passes 64 and 32
    "floor below the threshold": (floor_run(100), "INCONCLUSIVE"),
    "floor at the threshold": (floor_run(64), "PASS"),
    "floor above the threshold": (floor_run(32), "PASS"),
    "floor at a strict threshold": (floor_run(64, ">"), "INCONCLUSIVE"),
    # a bracket: 30 met, 35 broke; 32 lies between, 40 above the rate that broke
    "threshold between met and broken": (bracket_run(32), "INCONCLUSIVE"),
    "threshold above the rate that broke": (bracket_run(40), "FAIL"),
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_capacity_corpus_verdicts(name, tmp_path, capsys):
    run, expected = CORPUS[name]
    code = main(["gate", str(run.build(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == expected, (name, report["verdict"], report.get("verdict_reason"))
    assert code == EXIT_CODES[expected] == report["exit_code"]


def judged(tmp_path, run: Run, capsys) -> dict:
    """The run judged as `gate` judges it, without rendering the reports (the corpus above goes through it)."""
    return gate(tmp_path, run, capsys)[1]


def capacity_criterion(report: dict) -> dict:
    return next(c for c in report["criteria"] if c["metric"] == "capacity_rps")


def test_a_step_that_did_not_complete_the_offered_rate_fell_behind(tmp_path, capsys):
    report = judged(tmp_path, paced_sweep([(16, {}), (32, {}), (64, OVERLOADED)]), capsys)
    top = report["capacity"]["steps"][2]
    assert top["ttft_sched_ms_p95"] == pytest.approx(20.0) and top["backlog_growth_ms"] == pytest.approx(0.0)
    assert top["completion_share"] == pytest.approx(10.4 / 64, rel=0.02)
    assert top["completed_rps"] == pytest.approx(10.4, rel=0.05) and top["e2e_growth_ms"] > 2000
    assert top["verdict"] == "breaks" and "completed 10" in top["why"] and "of 64 offered" in top["why"]
    assert report["capacity"]["capacity_rps"] == 32 and report["capacity"]["break_rps"] == 64


def test_empty_answers_are_failures_of_their_step(tmp_path, capsys):
    report = judged(tmp_path, paced_sweep([(16, {}), (32, {}), (64, SHEDDING)]), capsys)
    top = report["capacity"]["steps"][2]
    assert top["failed"] == top["empty"] == 158 and top["answered"] == 62
    assert top["error_rate"] == pytest.approx(158 / 220) and top["verdict"] == "breaks"
    assert "158 empty answers" in top["why"]
    assert report["capacity"]["capacity_rps"] == 32
    # ... and the same when the backend classified them
    classified = judged(tmp_path / "b", paced_sweep([(16, {}), (32, {}), (64, {**SHEDDING, "empty_kind": "empty_response"})]),
                        capsys)
    assert classified["capacity"]["steps"][2]["empty"] == 158 and "158 empty answers" in classified["capacity"]["steps"][2]["why"]


def test_a_floor_is_gated_as_a_floor_and_says_so(tmp_path, capsys):
    below = capacity_criterion(judged(tmp_path / "a", floor_run(100), capsys))
    assert below["verdict"] == "insufficient" and "at least 64" in below["reason"] and "max_rps" in below["reason"]
    at = capacity_criterion(judged(tmp_path / "b", floor_run(64), capsys))
    assert at["verdict"] == "pass" and "at least 64" in at["reason"] and "floor" in at["reason"]
    between = capacity_criterion(judged(tmp_path / "c", bracket_run(32), capsys))
    assert between["verdict"] == "insufficient" and "between 30" in between["reason"] and "35" in between["reason"]


def test_the_pace_of_a_step_holds_against_one_stalled_answer(tmp_path, capsys):
    # the last request of the top step took 5 s: one late answer, not a server falling behind
    run = paced_sweep([(16, {}), (32, {}), (64, {})])
    run.load[-1]["timing"]["e2e_sched_ms"] = 5000.0
    report = judged(tmp_path, run, capsys)
    top = report["capacity"]["steps"][2]
    assert top["completion_share"] == pytest.approx(1.0) and top["verdict"] == "meets"
    assert report["verdict"] == "PASS"


def test_a_step_without_e2e_from_the_scheduled_send_cannot_show_it_kept_up(tmp_path, capsys):
    run = paced_sweep([(16, {}), (32, {})])
    for record in run.load:
        record["timing"]["e2e_sched_ms"] = None
    report = judged(tmp_path, run, capsys)
    step = report["capacity"]["steps"][0]
    assert step["verdict"] == "undecided" and "E2Es from the scheduled send" in step["why"], step["why"]
    assert report["verdict"] == "INCONCLUSIVE" and report["exit_code"] == 3


def test_longer_answers_later_in_a_step_are_no_backlog(tmp_path, capsys):
    # the suite asks for longer answers as it goes: E2E rises over the step by its decode alone (4 ms a token)
    run = paced_sweep([(16, {}), (32, {}), (64, {})])
    top = [r for r in run.load if r["tags"]["sweep_step"] == 2]
    for i, record in enumerate(top):
        record["tokens"]["output"] = 10 + 2 * i
        record["timing"]["e2e_sched_ms"] += 4.0 * 2 * i
    report = judged(tmp_path, run, capsys)
    step = report["capacity"]["steps"][2]
    assert step["e2e_growth_ms"] == pytest.approx(0.0) and step["verdict"] == "meets"
    assert report["verdict"] == "PASS"


# --- end to end: `check` with a sweep against the stub server --------------------------------------------------

SWEEP = {"start_rps": 32, "max_rps": 64, "factor": 2, "requests_per_step": 60, "step_s": 0.5, "refine": 0}


def sweep_project(root: Path, base_url: str, slo: dict, threshold: float = 64) -> Path:
    write_jsonl(root / "suite.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"hello {i}"}], "expected": "tok"} for i in range(6)
    ])
    (root / "rubric.yaml").write_text("review: {required_domains: []}\n"
                                      f"criteria:\n  - {{metric: capacity_rps, op: '>=', threshold: {threshold}}}\n")
    (root / "releasegate.yaml").write_text(
        f"target:\n  backend: openai\n  base_url: {base_url}\n  model: stub\n  concurrency: 3\n  timeout_s: 30\n"
        "generation: {max_new_tokens: 16}\n"
        "suites: [{path: suite.jsonl, answer: {type: regex, pattern: tok}}]\nrubric: rubric.yaml\n"
        f"load: {{sweep: {json.dumps({**SWEEP, 'slo': slo})}}}\n")
    return root / "releasegate.yaml"


def check_sweep(tmp_path, cli, behaviour: StubBehaviour, slo: dict = TTFT_ONLY) -> tuple[int, dict]:
    with StubServer(behaviour) as stub:
        code, out, err = cli("check", "-c", sweep_project(tmp_path, stub.base_url, slo), "--run-id", "r",
                             "--no-progress", "--json")
    assert "Traceback" not in err
    report = json.loads(out)
    assert report["exit_code"] == code
    return code, report


def test_an_honest_fast_server_still_establishes_a_capacity(tmp_path, cli):
    """The control: a stub that answers every request in about 20 ms at any rate meets the objective (TTFT and
    E2E) up to max_rps: at least 64 req/s, PASS."""
    code, report = check_sweep(tmp_path, cli, StubBehaviour(ttft_ms=5, itl_ms=2, tokens=8),
                               slo={"ttft_ms_p95": 200, "e2e_ms_p95": 1000})
    cap = report["capacity"]
    assert [s["verdict"] for s in cap["steps"]] == ["meets", "meets"], [s["why"] for s in cap["steps"]]
    assert cap["capacity_rps"] == 64 and cap["at_least"] and all(s["kept_up"] >= 0.9 for s in cap["steps"])
    assert report["verdict"] == "PASS" and code == 0


def test_first_token_free_then_queue_is_no_capacity_under_a_ttft_only_objective(tmp_path, cli):
    """Two decode slots, the first token sent at once: TTFT stays near 5 ms at any rate while the rest of each
    answer waits for a slot (about 50 answers/s). 64 req/s is offered more than it completes."""
    behaviour = StubBehaviour(ttft_ms=5, itl_ms=5, tokens=9, decode_slots=2, first_token_free=True)
    code, report = check_sweep(tmp_path, cli, behaviour)
    top = max(report["capacity"]["steps"], key=lambda s: s["rate"])
    assert top["ttft_sched_ms_p95"] < TTFT_ONLY["ttft_ms_p95"]  # TTFT alone says it kept up
    assert top["verdict"] != "meets" and top["completion_share"] < 0.9, top["why"]
    assert report["verdict"] != "PASS" and code != 0


def test_decode_slots_with_a_queue_are_no_capacity(tmp_path, cli):
    """Two decode slots, whole answers queued: throughput saturates near 45 req/s, and at 64 req/s offered the
    queue grows through the step even within a loose TTFT objective."""
    behaviour = StubBehaviour(ttft_ms=5, itl_ms=5, tokens=9, decode_slots=2)
    code, report = check_sweep(tmp_path, cli, behaviour, slo={"ttft_ms_p95": 5000})
    top = max(report["capacity"]["steps"], key=lambda s: s["rate"])
    assert top["verdict"] != "meets" and top["kept_up"] < 0.9, top["why"]
    assert top["backlog_growth_ms"] > 0 and top["e2e_growth_ms"] > 0
    assert report["verdict"] != "PASS" and code != 0


def test_a_server_shedding_with_empty_answers_is_no_capacity(tmp_path, cli):
    """Past the quality cases and the first step, 18 of every 25 answers are HTTP-200 streams with no content."""
    served = itertools.count()
    first = 6 + 60  # the quality cases, then the first step

    def reply(_body: dict) -> str:
        i = next(served)
        return "" if i >= first and i % 25 < 18 else "tok tok"

    code, report = check_sweep(tmp_path, cli, StubBehaviour(ttft_ms=5, itl_ms=2, tokens=8, reply=reply))
    top = max(report["capacity"]["steps"], key=lambda s: s["rate"])
    assert top["empty"] > 30 and top["verdict"] == "breaks" and "empty answers" in top["why"], top
    assert report["verdict"] != "PASS" and code != 0


# --- the objective's keys ----------------------------------------------------------------------------------------

def test_an_objective_may_limit_e2e_and_any_listed_percentile(tmp_path):
    config = load_config(endpoint_project(tmp_path, "load: {sweep: {start_rps: 2, max_rps: 64, requests_per_step: 299, "
                                                    "slo: {e2e_ms_p50: 900, ttft_ms_p99: 400, error_rate: 0.05}}}\n"))
    assert config.load.sweep.slo == {"error_rate": 0.05, "e2e_ms_p50": 900, "ttft_ms_p99": 400}


@pytest.mark.parametrize("slo, message", [
    ("{e2e_ms_p80: 900}", "sweep.slo"),  # not a percentile the objective knows
    ("{e2e_ms_p99: 900}", "needs requests_per_step >= 299"),  # 60 requests give no P99 bound
])
def test_an_objective_no_step_could_judge_is_refused(tmp_path, cli, slo, message):
    code, _, err = cli("validate", "-c", endpoint_project(tmp_path, f"load: {{sweep: {{start_rps: 1, max_rps: 9, slo: {slo}}}}}\n"))
    assert code == 2 and message in err and "Traceback" not in err, err


# --- the stub's decode slots ---------------------------------------------------------------------------------

def stub_stamps(base_url: str, requests: int) -> list[list[int]]:
    """Send `requests` chat requests at once; for each answer, the server's send stamps of its content chunks, the
    answers in the order their first chunk was sent."""
    url = urlparse(base_url)
    body = json.dumps({"model": "stub", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    answers: list[list[int]] = []

    def ask() -> None:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        conn.request("POST", url.path + "/chat/completions", body, {"content-type": "application/json"})
        text = conn.getresponse().read().decode()
        events = [json.loads(line[6:]) for line in text.split("\n") if line.startswith("data: {")]
        answers.append([e["stub_sent_ns"] for e in events if "stub_sent_ns" in e])
        conn.close()

    threads = [threading.Thread(target=ask) for _ in range(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(answers)


def test_decode_slots_queue_whole_answers():
    # one slot: the second answer's first chunk is sent only after the first answer's last
    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=20, tokens=5, decode_slots=1)) as stub:
        first, second = stub_stamps(stub.base_url, 2)
    assert len(first) == len(second) == 5 and second[0] > first[-1]


def test_first_token_free_queues_the_rest_of_the_answer():
    # one slot, the first token free: both first chunks go out at once, the second answer's rest after the first's
    with StubServer(StubBehaviour(ttft_ms=5, itl_ms=100, tokens=5, decode_slots=1, first_token_free=True)) as stub:
        first, second = stub_stamps(stub.base_url, 2)
    assert len(first) == len(second) == 5
    assert second[0] < first[-1] < second[1]
