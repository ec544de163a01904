"""A run record built to get a false PASS out of the flip probe and the repeated draws where the evidence says
nothing: answers compared batched against batched, a load that never had two requests in flight, load requests
failing exactly where the answers change, load answers from the response cache. Hand-built records, judged by
`gate_run` itself."""

from __future__ import annotations

from conftest import gate_run
from releasegate.decision.verdicts import PASS
from test_stable_answers_hostile import CASES, INFO, crit, honest, load_rec, rec, row, rubric

LOADED = INFO.model_copy(update={"repeats": None, "load_phase": {"requests": CASES, "planned": CASES, "concurrency": 8},
                                 "sessions": [{"mode": "start", "concurrency": 1}]})
PROBE = rubric(crit("load_flip_rate", "<=", 0.05), crit("load_accuracy_delta", ">=", -0.05),
               crit("error_rate_quality", "<=", 0.5))


def _steady_load():
    return [load_rec(i, i, "yes") for i in range(CASES)]


def test_a_probe_whose_quality_phase_was_batched_proves_nothing():
    """The server changes c0..c3 whenever anything else is in flight: batched alone and batched under load, the
    answers agree and nothing was compared with an answer asked alone."""
    records, _ = honest()
    records = [r.model_copy(update={"output": "yes (changed)"}) if r.case_id in ("c0", "c1", "c2", "c3") else r
               for r in records]
    records = [r.model_copy(update={"timing": r.timing.model_copy(update={"in_flight_most": 8})}) for r in records]
    load = [load_rec(i, i, "yes (changed)" if i < 4 else "yes") for i in range(CASES)]
    report = gate_run(LOADED, records, PROBE, None, load)
    flip = row(report, "load_flip_rate")
    assert flip["value"] is None and flip["verdict"] == "insufficient"
    assert "not asked alone" in flip["reason"]
    assert row(report, "load_accuracy_delta")["value"] is None
    assert report["verdict"] != PASS


def test_a_load_phase_with_one_request_in_flight_proves_nothing():
    """The load phase declared 8 in flight, but each of its requests observed only itself in flight."""
    records, _ = honest()
    single = [load_rec(i, i, "yes", in_flight=1) for i in range(CASES)]
    report = gate_run(LOADED, records, PROBE, None, single)
    flip = row(report, "load_flip_rate")
    assert flip["value"] is None and "only with 1 in flight" in flip["reason"]
    assert report["verdict"] != PASS
    assert gate_run(LOADED, records, PROBE, None, _steady_load())["verdict"] == PASS  # 8 in flight: the probe holds


def test_failed_load_requests_hide_no_flip():
    """Under load the server fails exactly the requests whose answer it would have changed."""
    records, _ = honest()
    load = [load_rec(i, i, "yes") for i in range(CASES)]
    load[:4] = [r.model_copy(update={"output": None, "error": "server_error"}) for r in load[:4]]
    report = gate_run(LOADED, records, PROBE, None, load)
    flip = row(report, "load_flip_rate")
    assert flip["value"] == 4 / CASES and flip["n"] == CASES and "no answer under load" in flip["note"]
    assert flip["verdict"] == "fail" and report["verdict"] != PASS
    assert [(r["case_id"], r["under_load"]) for r in report["stability"]["flips"]] == [
        (f"c{i}", "(no answer: server_error)") for i in range(4)]  # the flip table shows them too
    delta = row(report, "load_accuracy_delta")
    assert delta["value"] == -4 / CASES and delta["n"] == CASES  # a failed request answers nothing right


def test_load_answers_from_the_response_cache_are_no_answers_under_load():
    records, _ = honest()
    load = [load_rec(i, i, "no" if i < 4 else "yes") for i in range(CASES)]
    load[:4] = [load_rec(i, i, "yes").model_copy(update={"cached": True}) for i in range(4)]  # the flips, replayed
    report = gate_run(LOADED, records, PROBE, None, load)
    flip = row(report, "load_flip_rate")
    assert flip["value"] is None and "response cache" in flip["reason"]
    assert report["verdict"] != PASS


def test_a_run_json_planning_a_huge_k_is_read_in_the_time_its_draws_take():
    """run.json `repeats` edited to a trillion draws: the gate reads the journal's draws, never counts to k."""
    records, draws = honest()
    huge = INFO.model_copy(update={"repeats": {"s": 10**12}})
    report = gate_run(huge, records, rubric(crit("pass_all_k", ">=", 0.5)), None, draws=draws)
    assert report["verdict"] != PASS and "lack planned draws" in report["incomplete"]


def test_a_suite_asked_once_is_not_left_out_of_pass_k():
    """Suite s repeats 3 times and passes every draw; suite once asks its cases one time and fails them all:
    `pass_all_k` over the run must not read only the suite that passes."""
    records, draws = honest()
    records += [rec(100 + i, "no", suite="once") for i in range(CASES)]
    draws = [d.model_copy(update={"output": "yes"}) for d in draws]
    info = INFO.model_copy(update={"repeats": {"s": 3, "once": 1}, "cases": 2 * CASES})
    report = gate_run(info, records, rubric(crit("pass_all_k", ">=", 0.9), crit("pass_any_k", ">=", 0.9)), None,
                      draws=draws)
    for metric in ("pass_all_k", "pass_any_k"):
        assert row(report, metric)["value"] == 0.5 and row(report, metric)["n"] == 2 * CASES
        assert "asked once" in row(report, metric)["note"]
    assert report["verdict"] != PASS


def test_an_old_run_that_never_recorded_its_quality_concurrency_proves_nothing_alone():
    """A run from before the quality phase's requests in flight were recorded, judged again with a rubric asking
    the flip probe: nothing says its answers were asked alone."""
    records = [rec(i, "yes", in_flight=None) for i in range(CASES)]
    old = LOADED.model_copy(update={"sessions": [{"mode": "start", "cases": CASES}]})
    flip = row(gate_run(old, records, PROBE, None, _steady_load()), "load_flip_rate")
    assert flip["value"] is None and "did not record how many were in flight" in flip["reason"]


def test_answers_alone_from_the_response_cache_are_not_answers_asked_alone():
    records, _ = honest()
    records = [r.model_copy(update={"cached": True}) if r.case_id in ("c0", "c1", "c2", "c3") else r for r in records]
    load = [load_rec(i, i, "no" if i < 4 else "yes") for i in range(CASES)]
    report = gate_run(LOADED, records, PROBE, None, load)
    flip = row(report, "load_flip_rate")
    assert flip["value"] is None and "response cache" in flip["reason"] and "c0" in flip["reason"]
    assert row(report, "load_accuracy_delta")["value"] is None and report["verdict"] != PASS


def test_review_export_puts_a_case_that_got_no_answer_under_load_first():
    from releasegate.gate.stability import unstable_cases

    records, _ = honest()
    load = _steady_load()
    load[3] = load[3].model_copy(update={"output": None, "error": "server_error"})  # where its flip would be
    load[5] = load_rec(5, 5, "no")
    assert unstable_cases(LOADED, records, [], load) == {"c3", "c5"}


def test_a_server_that_changes_answers_whenever_batched_is_not_passed_by_a_batched_quality_phase(tmp_path, cli):
    """End to end on the stub: a seeded 10% of answers change while more than one request is in flight, and the
    quality phase runs 8 in flight as the load does. Both phases see the same changed answers: nothing flips
    between them, and nothing was asked alone."""
    from releasegate.testing import StubBehaviour, StubServer
    from test_stable_answers import FLIP_RUBRIC, _yes, check, criterion, project

    behaviour = StubBehaviour(ttft_ms=2, itl_ms=0.5, tokens=2, reply=_yes, flip_share=0.1, flip_above=1, flip_seed=3)
    with StubServer(behaviour) as stub:
        config = project(tmp_path, stub.base_url, cases=150, rubric=FLIP_RUBRIC, concurrency=8,
                         extra="load: {concurrency: 8, requests: 150}\n")
        code, report, _ = check(cli, config)
    flip = criterion(report, "load_flip_rate")
    assert flip["verdict"] == "insufficient" and "not asked alone in the quality phase" in flip["reason"]
    assert report["verdict"] != "PASS" and code != 0


def test_answers_that_differ_in_a_sign_or_a_decimal_point_are_not_the_same_answer():
    """The SQuAD normalisation drops punctuation: '1.5' and '15', '-3' and '3' would compare equal. For an answer
    check that tells them apart (exact, numeric, json...), the flip probe and the agreement of draws must too."""
    from releasegate.gate.stability import unstable_cases

    records = [rec(i, "1.5").model_copy(update={"expected": "1.5", "answer": {"type": "exact"}}) for i in range(CASES)]
    load = [load_rec(i, i, "15" if i < 4 else "1.5") for i in range(CASES)]
    report = gate_run(LOADED, records, rubric(crit("load_flip_rate", "<=", 0.05)), None, load)
    assert row(report, "load_flip_rate")["value"] == 4 / CASES and report["verdict"] != PASS
    assert unstable_cases(LOADED, records, [], load) == {"c0", "c1", "c2", "c3"}
    draws = [r.model_copy(update={"draw": d, "output": "-3" if (r.case_id == "c0" and d == 2) else r.output})
             for r in records for d in (1, 2)]
    agreement = row(gate_run(INFO, records, rubric(crit("answer_agreement", ">=", 1.0)), None, draws=draws),
                    "answer_agreement")
    assert agreement["value"] < 1.0 and agreement["verdict"] == "fail"
    # under the normalized check, punctuation and case are no difference: the scorer cannot see one either
    same = [r.model_copy(update={"answer": {"type": "normalized"}}) for r in records]
    loud = [load_rec(i, i, "1.5!" if i < 4 else "1.5") for i in range(CASES)]
    assert row(gate_run(LOADED, same, rubric(crit("load_flip_rate", "<=", 0.05)), None, loud),
               "load_flip_rate")["value"] == 0
