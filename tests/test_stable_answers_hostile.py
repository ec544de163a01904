"""A run record trying to get a false PASS out of the stability criteria: draws copied, missing, cached, of no
case, load answers of no case. Hand-built records, judged by `gate_run` itself (the seal, which also catches an
edited journal, is left aside here: these are the rules that hold even without it)."""

from __future__ import annotations

import pytest

from conftest import gate_run
from releasegate.decision.verdicts import INCONCLUSIVE, PASS
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.record.records import CaseRecord, RunInfo, Timing, Tokens
from releasegate.stats.intervals import cluster_share_bounds, wilson_bounds

K = 3
CASES = 40


def rec(i: int, output: str | None, *, draw: int = 0, cached: bool = False, suite: str = "s",
        error: str | None = None, in_flight: int | None = 1) -> CaseRecord:
    """A quality case's record, asked with `in_flight` requests in flight (observed; None: not recorded)."""
    return CaseRecord(case_id=f"c{i}", suite=suite, input={"prompt": f"q{i}"}, expected="yes",
                      answer={"type": "normalized"}, output=output, draw=draw, cached=cached, error=error,
                      tokens=Tokens(input=3, output=1), timing=_timing(in_flight))


def load_rec(n: int, i: int, output: str, *, prompt: str | None = None, in_flight: int | None = 4) -> CaseRecord:
    """A load request asking case c{i}'s prompt, with `in_flight` requests in flight (observed)."""
    return CaseRecord(case_id=f"load-{n:05d}:c{i}", suite="load", tags={"phase": "load", "prompt_of": f"c{i}"},
                      input={"prompt": prompt or f"q{i}"}, output=output, tokens=Tokens(input=3, output=1),
                      timing=_timing(in_flight))


def _timing(in_flight: int | None) -> Timing:
    return Timing(ttft_ms=10.0, e2e_ms=12.0, in_flight_at_send=in_flight, in_flight_most=in_flight)


INFO = RunInfo(run_id="r", created_at="now", target="t", backend="openai", status="complete", cases=CASES,
               repeats={"s": K}, phases=["quality"])


def rubric(*criteria: Criterion) -> Rubric:
    return Rubric(path=None, name="t", criteria=tuple(criteria))


def crit(metric: str, op: str, threshold: float, **kw) -> Criterion:
    return Criterion(name=metric, metric=metric, op=op, threshold=threshold, **kw)


def row(report: dict, metric: str) -> dict:
    return next(c for c in report["criteria"] if c["metric"] == metric)


def honest() -> tuple[list[CaseRecord], list[CaseRecord]]:
    """Every case answers yes at every draw, but c0..c3 answer no at draw 2."""
    records = [rec(i, "yes") for i in range(CASES)]
    draws = [rec(i, "no" if (i < 4 and d == 2) else "yes", draw=d) for i in range(CASES) for d in range(1, K)]
    return records, draws


STRICT = rubric(crit("pass_all_k", ">=", 0.5), crit("flip_rate", "<=", 0.5))


def test_honest_draws_are_counted_per_case():
    records, draws = honest()
    report = gate_run(INFO, records, STRICT, None, draws=draws)
    assert report["verdict"] == PASS
    assert row(report, "pass_all_k")["value"] == 36 / 40 and row(report, "pass_all_k")["n"] == CASES
    assert row(report, "flip_rate")["value"] == 4 / 40
    assert "c0" in row(report, "flip_rate")["note"]
    accuracy = report["metrics"]["accuracy"]  # per draw, bounded per case
    assert accuracy["value"] == pytest.approx((36 + 4 * 2 / 3) / 40) and accuracy["n"] == CASES
    assert accuracy["bounds"][0] == pytest.approx(cluster_share_bounds([1.0] * 36 + [2 / 3] * 4)[0], abs=1e-6)
    assert report["slices"][0]["accuracy"] == accuracy["value"]  # the slices read the draws as the criteria do
    # wider than the 120 draws counted as independent cases would give: the case is the unit
    assert accuracy["bounds"][0] < wilson_bounds(36 * 3 + 4 * 2, 120)[0] - 0.01


def test_copied_draw_lines_never_add_draws_or_a_pass():
    records, draws = honest()
    good = [rec(i, "yes", draw=2) for i in range(4)]  # the failing draws "answered again" as passes
    report = gate_run(INFO, records, STRICT, None, draws=draws + good)
    assert report["verdict"] == INCONCLUSIVE
    assert "answered twice" in report["incomplete"] and "c0" in report["incomplete"]
    assert row(report, "pass_all_k")["verdict"] == "insufficient"


def test_a_failed_draw_asked_again_is_the_draw_that_counts():
    records, draws = honest()
    failed = [rec(5, None, draw=1, error="server_error")]
    again = [d for d in draws if not (d.case_id == "c5" and d.draw == 1)] + [rec(5, "yes", draw=1)]
    report = gate_run(INFO, records, STRICT, None, draws=failed + again)
    assert report["verdict"] == PASS and row(report, "pass_all_k")["value"] == 36 / 40


def test_missing_draws_make_the_run_incomplete_and_the_criteria_unknown():
    records, draws = honest()
    kept = [d for d in draws if d.case_id not in ("c0", "c1", "c2", "c3")]  # the flipping cases' draws dropped
    report = gate_run(INFO, records, STRICT, None, draws=kept)
    assert report["verdict"] == INCONCLUSIVE and "lack planned draws" in report["incomplete"]
    assert row(report, "flip_rate")["verdict"] == "insufficient" and row(report, "flip_rate")["value"] is None
    assert report["metrics"]["accuracy"]["value"] is None


def test_no_draws_at_all_is_no_pass_of_pass_k():
    records, _ = honest()
    report = gate_run(INFO, records, STRICT, None, draws=[])
    assert report["verdict"] == INCONCLUSIVE
    no_plan = gate_run(INFO.model_copy(update={"repeats": None}), records, STRICT, None)
    assert row(no_plan, "pass_all_k")["verdict"] == "insufficient" and no_plan["verdict"] != PASS
    assert "generation.repeats" in row(no_plan, "pass_all_k")["reason"]


def test_draws_from_the_response_cache_are_refused():
    records, draws = honest()
    cached = [d.model_copy(update={"cached": True}) for d in draws]
    report = gate_run(INFO, records, STRICT, None, draws=cached)
    assert report["verdict"] == INCONCLUSIVE and "response cache" in report["incomplete"]
    assert row(report, "pass_all_k")["value"] is None


def test_draws_of_no_case_or_past_k_are_refused():
    records, draws = honest()
    extra = [rec(99, "yes", draw=1), rec(1, "yes", draw=K)]
    report = gate_run(INFO, records, STRICT, None, draws=draws + extra)
    assert report["verdict"] == INCONCLUSIVE and "2 draw(s) of no planned case" in report["incomplete"]


def test_load_answers_of_no_case_are_never_counted():
    records, _ = honest()
    info = INFO.model_copy(update={"repeats": None, "load_phase": {"requests": CASES + 10, "planned": CASES + 10},
                                   "sessions": [{"mode": "start", "concurrency": 1}]})  # the cases asked alone
    load = [load_rec(i, i, "yes") for i in range(CASES)]
    load[0] = load_rec(0, 0, "no")  # one real flip
    fake = [load_rec(CASES + j, 1000 + j, "yes") for j in range(5)]  # cases the run does not have
    other = [load_rec(CASES + 5 + j, j, "yes", prompt="another prompt") for j in range(5)]  # another input
    report = gate_run(info, records, rubric(crit("load_flip_rate", "<=", 0.5)), None, load + fake + other)
    flip = row(report, "load_flip_rate")
    assert flip["n"] == CASES and flip["value"] == 1 / CASES
    assert "10 load request(s) of no case" in flip["note"] and "not asked alone" not in flip["note"]
    batched = [r.model_copy(update={"timing": r.timing.model_copy(update={"in_flight_most": 4})}) for r in records]
    note = row(gate_run(info, batched, rubric(crit("load_flip_rate", "<=", 0.5)), None, load), "load_flip_rate")["note"]
    assert "40 not asked alone in the quality phase" in note
    assert report["stability"]["load_answers_left_out"] == 10
    assert [r["case_id"] for r in report["stability"]["flips"]] == ["c0"]


def test_load_accuracy_delta_is_paired_and_phase_load_scores_the_load_answers():
    records, _ = honest()
    info = INFO.model_copy(update={"repeats": None, "load_phase": {"requests": CASES, "planned": CASES},
                                   "sessions": [{"mode": "start", "concurrency": 1}]})
    load = [load_rec(i, i, "no" if i < 6 else "yes") for i in range(CASES)]
    report = gate_run(info, records, rubric(
        crit("load_accuracy_delta", ">=", -0.02, confidence=0.95),
        crit("accuracy", ">=", 0.9, phase="load"),
        crit("accuracy", ">=", 0.9),
    ), None, load)
    delta = report["criteria"][0]
    assert delta["value"] == pytest.approx(-6 / 40) and delta["verdict"] == "fail" and delta["bounds"][1] < -0.02
    under_load, alone = report["criteria"][1], report["criteria"][2]
    assert under_load["value"] == 34 / 40 and under_load["phase"] == "load"
    assert alone["value"] == 1.0 and alone["verdict"] == "pass"
    assert report["verdict"] != PASS


def test_every_draw_is_a_request_of_the_error_rate():
    records, draws = honest()
    failed = [d.model_copy(update={"output": None, "error": "server_error"}) if d.case_id in ("c7", "c8") else d
              for d in draws]
    report = gate_run(INFO, records, rubric(crit("error_rate", "<=", 0.5), crit("pass_all_k", ">=", 0.0)), None,
                      draws=failed)
    quality = report["counts"]["phases"]["quality"]
    assert quality["requests"] == CASES * K and quality["failed"] == 4 and quality["cases"] == CASES
    assert row(report, "error_rate")["value"] == 4 / (CASES * K) and row(report, "error_rate")["n"] == CASES * K
    assert row(report, "pass_all_k")["value"] == 34 / 40  # a failed draw is a failing draw



def test_a_phase_load_criterion_is_named_apart_and_only_on_quality_rates(tmp_path):
    from releasegate.errors import InputError
    from releasegate.inputs.rubric import load_rubric

    path = tmp_path / "r.yaml"
    path.write_text("criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5, phase: load}\n")
    assert load_rubric(path).criteria[0].name == "accuracy (under load)"
    path.write_text("criteria:\n  - {metric: ttft_ms_p95, op: '<=', threshold: 5, phase: load}\n")
    with pytest.raises(InputError) as caught:
        load_rubric(path)
    assert caught.value.field == "criteria[0].phase" and "quality rates" in caught.value.message
    path.write_text("criteria:\n  - {metric: load_accuracy_delta, op: '>=', threshold: -0.02, confidence: 0.95}\n")
    assert load_rubric(path).criteria[0].threshold == -0.02  # a difference: negative thresholds are possible


def test_a_stratified_sample_weighs_its_draws_as_the_source_it_stands_for():
    """20 cases stand for 900 rows and flip; 20 stand for 100 rows and never do: equal counts, unequal weight."""
    from releasegate.record.records import Stratum

    big, small = Stratum(name="big", population=900), Stratum(name="small", population=100)
    records = [rec(i, "yes").model_copy(update={"stratum": big if i < 20 else small}) for i in range(CASES)]
    draws = [rec(i, "no" if i < 20 and d == 1 else "yes", draw=d).model_copy(update={"stratum": big if i < 20 else small})
             for i in range(CASES) for d in range(1, K)]
    report = gate_run(INFO, records, rubric(crit("flip_rate", "<=", 0.2, confidence=0.95),
                                            crit("pass_all_k", ">=", 0.5)), None, draws=draws)
    flip = row(report, "flip_rate")
    assert flip["value"] == pytest.approx(0.9) and "population-weighted" in flip["note"]  # not 0.5, the case count
    assert flip["verdict"] == "fail" and row(report, "pass_all_k")["value"] == pytest.approx(0.1)
    assert report["metrics"]["accuracy"]["value"] == pytest.approx(0.9 * 2 / 3 + 0.1)


def test_a_draw_of_another_question_or_other_checks_is_no_draw_of_the_case():
    records, draws = honest()
    swapped = [d.model_copy(update={"expected": "no"}) if (d.case_id, d.draw) == ("c0", 2) else d for d in draws]
    report = gate_run(INFO, records, STRICT, None, draws=swapped)  # draw 2 of c0 said no: now "expected"
    assert report["verdict"] == INCONCLUSIVE and "lack planned draws (c0)" in report["incomplete"]
    moved = [d.model_copy(update={"input": {"prompt": "q1"}}) if d.case_id == "c0" else d for d in draws]
    assert gate_run(INFO, records, STRICT, None, draws=moved)["verdict"] == INCONCLUSIVE


def test_a_plan_edited_to_hide_the_draws_leaves_them_foreign():
    records, draws = honest()
    for plan in ({"s": 1}, None):
        report = gate_run(INFO.model_copy(update={"repeats": plan}), records, STRICT, None, draws=draws)
        assert report["verdict"] == INCONCLUSIVE and "of no planned case" in report["incomplete"]


def test_each_capacity_step_is_scored_as_the_quality_cases_are():
    from releasegate.gate.load_quality import step_quality
    from releasegate.scorers import score_records

    records, _ = honest()
    load = []
    for step, wrong in ((0, 0), (1, 4)):  # the higher rate changes 4 answers
        for i in range(CASES):
            r = load_rec(step * CASES + i, i, "no" if i < wrong else "yes")
            load.append(r.model_copy(update={"tags": {**r.tags, "sweep_step": step}}))
    rows = step_quality(records, load, score_records(records, ()), (), "sweep_step")
    assert [(r["step"], r["requests"], r["accuracy"], r["load_flip_rate"]) for r in rows] == [
        (0, CASES, 1.0, 0.0), (1, CASES, 36 / 40, 4 / 40)]
