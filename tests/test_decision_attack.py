"""An outsider's attack on the decision path: hand-built run directories that try to get a PASS (exit 0) the
evidence does not support: each case the hunt found (now decided as the rules say), and what held."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from releasegate.cli import main
from test_decision_rules import check, make
from test_false_pass import RIGHT, WRONG, Run, err, lenient, ok


def _cached(record: dict, produced_by: list | None) -> dict:
    return {**record, "cached": True, "produced_by": produced_by}


def _gate(tmp_path: Path, run: Run, *args: str) -> tuple[int, str]:
    path = run.build(tmp_path)
    code = main(["gate", str(path), "--json", *args])
    report = json.loads((path / "report.json").read_text()) if (path / "report.json").exists() else {}
    return code, report.get("verdict", "")


def _gate_json(capsys, path: Path, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["gate", str(path), "--json", *args])
    return code, json.loads(capsys.readouterr().out)


# --- rule 4 / 20: an empty answer is a failed request, and is never cached -----------------------------------------

@pytest.mark.parametrize("produced_by", [[None], None])
def test_a_cached_empty_answer_is_a_failed_request(capsys, tmp_path, produced_by):
    # the same run with the five empty answers fresh FAILs on the default guard (5 of 100 > 0.01)
    records = [_cached(ok(i, output=""), produced_by) for i in range(5)] + [ok(i) for i in range(5, 100)]
    code, report = _gate_json(capsys, Run(records).build(tmp_path))
    assert (code, report["verdict"]) == (1, "FAIL")


def test_the_same_empty_answers_fresh_fail(capsys, tmp_path):
    records = [ok(i, output="") for i in range(5)] + [ok(i) for i in range(5, 100)]
    code, report = _gate_json(capsys, Run(records).build(tmp_path))
    assert (code, report["verdict"]) == (1, "FAIL")


def test_a_cached_error_record_is_a_failed_request(capsys, tmp_path):
    records = [_cached(err(i), [None]) for i in range(5)] + [ok(i) for i in range(5, 100)]
    code, report = _gate_json(capsys, Run(records).build(tmp_path))
    assert (code, report["verdict"]) == (1, "FAIL")


def test_mostly_cached_empty_answers_are_a_target_error(capsys, tmp_path):
    records = [_cached(ok(i, output=""), [None]) for i in range(60)] + [ok(i) for i in range(60, 100)]
    code, report = _gate_json(capsys, Run(records).build(tmp_path))
    assert (code, report["verdict"]) == (4, "TARGET_ERROR")


def test_all_cached_with_no_known_attempts_is_not_pass(capsys, tmp_path):
    code, report = _gate_json(capsys, Run([_cached(ok(i), []) for i in range(100)]).build(tmp_path))
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE")


# --- rule 16 / 19: a what-if reads the recorded verdict of a sealed run ----------------------------------------------

def test_a_whatif_over_an_edited_report_is_not_pass(cli, tmp_path):
    config = make(tmp_path)
    (tmp_path / "rubric.yaml").write_text("criteria:\n  - {metric: accuracy, op: '<=', threshold: 0.5}\n"
                                          "review: {required_domains: []}\n")
    assert check(cli, config)[0] == 1  # the run's own verdict: FAIL
    run = tmp_path / "reports" / "r"
    report = json.loads((run / "report.json").read_text())
    report["verdict"] = "PASS"  # edited after the seal: `verify` names it
    (run / "report.json").write_text(json.dumps(report))
    assert cli("verify", run)[0] == 1
    lax = tmp_path / "lax.yaml"
    lax.write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\nreview: {required_domains: []}\n")
    code, out, _ = cli("gate", run, "--rubric", lax, "--json")
    assert (code, json.loads(out)["verdict"]) == (3, "INCONCLUSIVE")


# --- rule 12 / 15: a server is chosen on its E2E p95 bounds, which a late client moves ------------------------------

SATURATED = {"client": "openai", "loop_lag_ms": {"p50": 300.0, "p99": 400.0, "max": 500.0, "n": 900}, "cpu_share": 1.0}
"""A client whose event loop ran 400 ms late (p99): every figure it read may be off by 400 ms either way."""


@pytest.mark.parametrize("late", ["contender", "reference"])
def test_a_late_client_does_not_show_a_server_faster(cli, tmp_path, late):
    from test_comparability_corpus import healthy, make, verdict_of

    ref = make(tmp_path, "ref", Run(healthy(ttft=50.0), client=SATURATED if late == "reference" else None))
    fast = make(tmp_path, "fast", Run(healthy(ttft=10.0), client=SATURATED if late == "contender" else None))
    code, result, _ = verdict_of(cli, "servers", ref, fast)
    # E2E p95 55 ms against 95 ms, each read by a client up to 400 ms late: the bounds overlap, the reference stays
    assert result["recommended"] == "ref", result["recommendation"]


def test_servers_with_an_idle_client_still_recommends_the_faster_target(cli, tmp_path):
    from test_comparability_corpus import healthy, make, verdict_of

    idle = {"client": "openai", "loop_lag_ms": {"p50": 0.2, "p99": 1.0, "max": 2.0, "n": 40}, "cpu_share": 0.1}
    ref = make(tmp_path, "ref", Run(healthy(ttft=50.0), client=idle))
    fast = make(tmp_path, "fast", Run(healthy(ttft=10.0), client=idle))
    code, result, _ = verdict_of(cli, "servers", ref, fast)
    assert (code, result["recommended"]) == (0, "fast")


# --- rule 15 / 20: compare of a candidate that sent no request --------------------------------------------------------

def _compare(cli, tmp_path: Path, baseline: Run, candidate: Run) -> tuple[int, dict]:
    from test_comparability_corpus import make, verdict_of

    code, result, _ = verdict_of(cli, "compare", make(tmp_path, "base", baseline), make(tmp_path, "cand", candidate))
    return code, result


def _no_timing(record: dict) -> dict:
    return {**record, "timing": {}}  # as the response cache builds a cached record: no timing


@pytest.mark.parametrize("produced_by", [None, []])
def test_compare_of_a_candidate_that_sent_no_request_is_not_pass(cli, tmp_path, produced_by):
    candidate = Run([_no_timing(_cached(ok(i), produced_by)) for i in range(300)])
    code, result = _compare(cli, tmp_path, Run([ok(i) for i in range(300)]), candidate)
    assert (code, result["verdict"]) == (3, "INCONCLUSIVE"), result["verdict_reason"]


def test_gate_of_a_run_that_sent_no_request_is_inconclusive(capsys, tmp_path):
    code, report = _gate_json(capsys, Run([_no_timing(_cached(ok(i), None)) for i in range(300)]).build(tmp_path))
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE")


def test_compare_latency_leaves_out_cached_records(cli, tmp_path):
    # a cached record carrying a timing is not what check writes, but it is what a journal may hold: the gate
    # leaves it out of every latency figure (`metrics.measured`), so compare must too
    candidate = Run([_cached(ok(i, ttft=5.0), [None]) for i in range(300)])
    code, result = _compare(cli, tmp_path, Run([ok(i) for i in range(300)]), candidate)
    assert not any(r["metric"] in ("ttft_ms", "tpot_ms", "e2e_ms") for r in result["rows"])


def test_compare_counts_a_cached_empty_answer_as_a_failure(cli, tmp_path):
    # compare, unlike gate, reads the cached empty answer as the failed request it is
    candidate = Run([_cached(ok(i, output=""), [None]) for i in range(6)] + [ok(i) for i in range(6, 300)])
    code, result = _compare(cli, tmp_path, Run([ok(i) for i in range(300)]), candidate)
    assert (code, result["verdict"]) == (3, "INCONCLUSIVE")


def test_a_whatif_over_a_hand_written_report_is_not_pass(capsys, tmp_path):
    import yaml

    half_wrong = Run([ok(i, output=WRONG if i < 50 else RIGHT) for i in range(100)])
    assert _gate_json(capsys, half_wrong.build(tmp_path / "judged"))[0] == 1  # its own rubric (accuracy >= 0.8): FAIL
    run = half_wrong.build(tmp_path / "r")  # the same run, never judged: no manifest, no report
    (run / "report.json").write_text(json.dumps({"verdict": "PASS"}))
    lax = tmp_path / "lax.yaml"
    lax.write_text(yaml.safe_dump(lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.4}])))
    code, report = _gate_json(capsys, run, "--rubric", str(lax))
    assert (code, report["verdict"]) == (3, "INCONCLUSIVE")


# --- rule 14: a capacity is a rate met with every lower one met, and the one above broken -----------------------------

@pytest.mark.parametrize("broke", ["slow", "fell behind"])
def test_a_rate_that_also_broke_the_objective_is_no_capacity(capsys, tmp_path, broke):
    from test_capacity_kept_up import OVERLOADED, paced_sweep

    breaking = {"ttft": 500.0} if broke == "slow" else OVERLOADED
    run = paced_sweep([(16, {}), (32, {}), (64, {}), (64, breaking)], threshold=64)
    code, report = _gate_json(capsys, run.build(tmp_path))
    assert code != 0 and report["verdict"] != "PASS", report["verdict_reason"]


def test_the_same_rate_broken_first_then_met_is_no_pass(capsys, tmp_path):
    from test_capacity_kept_up import paced_sweep

    run = paced_sweep([(16, {}), (32, {}), (64, {"ttft": 500.0}), (64, {})], threshold=64)
    code, report = _gate_json(capsys, run.build(tmp_path))
    assert code != 0 and report["verdict"] != "PASS"


# --- rule 20: a cached answer's attempts are the attempts of one session, which stops at its first answer -----------

def test_a_cached_answer_cannot_claim_more_than_one_answered_request(capsys, tmp_path):
    # 2 failed requests of 100 FAIL the default guard (<= 0.01); 20 cached answers claiming 100 answered requests
    # each dilute them to 2 of 2,080
    records = ([_cached(ok(i), [None] * 100) for i in range(20)] + [ok(i) for i in range(20, 98)]
               + [err(98), err(99)])
    code, report = _gate_json(capsys, Run(records).build(tmp_path))
    assert (code, report["verdict"]) == (1, "FAIL"), report["metrics"]["error_rate"]


def test_the_same_failures_fresh_fail_the_guard(capsys, tmp_path):
    code, report = _gate_json(capsys, Run([ok(i) for i in range(98)] + [err(98), err(99)]).build(tmp_path))
    assert (code, report["verdict"]) == (1, "FAIL")


def test_cached_answers_that_carry_their_failures_count_them(capsys, tmp_path):
    records = [_cached(ok(i), ["http_5xx", None]) for i in range(20)] + [ok(i) for i in range(20, 100)]
    code, report = _gate_json(capsys, Run(records).build(tmp_path))
    assert (code, report["verdict"]) == (1, "FAIL")


def test_compare_latency_read_by_a_late_client_is_not_shown_non_inferior(cli, tmp_path):
    code, result = _compare(cli, tmp_path, Run([ok(i) for i in range(300)]),
                            Run([ok(i) for i in range(300)], client=SATURATED))
    latency = {r["metric"]: r["verdict"] for r in result["rows"] if r["metric"] in ("ttft_ms", "e2e_ms")}
    assert code != 0 and latency and "pass" not in latency.values(), (result["verdict_reason"], latency)
