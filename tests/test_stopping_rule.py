"""The stopping rule (decision.stopping): the seeded simulation of optional stopping after every case, and each
criterion's verdict on a run that may stop."""

from __future__ import annotations

import numpy as np
import pytest

from releasegate.decision.criterion import (
    CriterionEvidence,
    CriterionResult,
    CriterionVerdict,
    Undecided,
    decide_criterion,
)
from releasegate.decision.stopping import (
    END_SHARE,
    RUN_SHARE,
    Track,
    anytime_method,
    decide_stopped,
    decided_at,
    fail_tests,
)
from releasegate.gate.stopping import run_stop_state
from releasegate.inputs.rubric import Criterion
from releasegate.record.metrics import MetricValue
from releasegate.record.records import CaseRecord, RunInfo
from releasegate.stats.anytime import exact_rate_shown, first_crossing, plugin_bets
from releasegate.stats.intervals import wilson_bounds

SUITE, RUNS, THRESHOLD, ALPHA = 2000, 2000, 0.90, 0.05


def _simulate(rate: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RUNS runs of a SUITE-case suite at a true accuracy `rate`, stopped after the first case at which the rule
    decides: (passed, cases used, fixed-size one-sided 0.95 Wilson test passed) per run."""
    xs = (np.random.default_rng(seed).random((RUNS, SUITE)) < rate).astype(float)
    bets = plugin_bets(xs, ALPHA * RUN_SHARE)  # sized for the PASS side's level, as decided_at sizes them
    up = first_crossing(xs, THRESHOLD, "above", ALPHA * RUN_SHARE, bets)
    down = first_crossing(xs, THRESHOLD, "below", ALPHA * RUN_SHARE, bets)
    never = SUITE + 1
    up, down = np.where(up > 0, up, never), np.where(down > 0, down, never)
    hits = xs.sum(axis=1)
    critical = next(k for k in range(SUITE + 1) if exact_rate_shown(k, SUITE, THRESHOLD, "above", ALPHA * END_SHARE))
    passed = (up < down) | ((up == never) & (down == never) & (hits >= critical))
    fixed = np.array([wilson_bounds(k, SUITE, 1 - ALPHA)[0] >= THRESHOLD for k in hits])
    # the vectorised rule is the product's: a few runs through decide_stopped give the same verdicts
    for row in range(3):
        stop = int(min(up[row], down[row], SUITE))
        track = Track(tuple(xs[row, :stop]), complete=stop == SUITE, asked=stop)
        verdict = decide_stopped(_criterion(), track, 1, _fixed()).verdict
        assert (verdict == CriterionVerdict.PASS) == bool(passed[row])
    return passed, np.minimum(np.minimum(up, down), SUITE), fixed


def test_optional_stopping_after_every_case_keeps_its_promises():
    passed_at, _, _ = _simulate(THRESHOLD, seed=1)
    assert passed_at.mean() <= ALPHA / 2 + 0.01  # a wrong PASS at the threshold itself
    _, used, _ = _simulate(THRESHOLD + 0.05, seed=2)
    assert np.median(used) <= 0.25 * SUITE
    passed, _, fixed = _simulate(THRESHOLD + 0.02, seed=3)
    assert passed.mean() >= 0.9 * fixed.mean()


def _criterion(**kw) -> Criterion:
    spec = {"name": "acc", "metric": "accuracy", "op": ">=", "threshold": THRESHOLD, "confidence": 0.95, **kw}
    return Criterion(**spec)


def _fixed(verdict: CriterionVerdict = CriterionVerdict.PASS) -> CriterionResult:
    value = MetricValue(0.99 if verdict == "pass" else 0.1, 100)
    return decide_criterion(CriterionEvidence(Criterion(name="x", metric="accuracy", op=">=", threshold=0.5), value))


@pytest.mark.parametrize("metric,op,threshold", [
    ("ttft_ms_p95", "<=", 200), ("forbidden_rate", "<=", 0.0), ("accuracy", ">=", 1.0), ("capacity_rps", ">=", 3),
    ("accuracy", ">=", 0.0), ("error_rate", "<=", 1.0), ("error_rate_load", "<=", 0.1),
])
def test_criteria_with_no_anytime_method_say_why(metric, op, threshold):
    assert anytime_method(_criterion(metric=metric, op=op, threshold=threshold))


def test_a_slice_error_rate_has_no_anytime_method_and_a_rate_has():
    assert anytime_method(_criterion(metric="error_rate", op="<=", threshold=0.1, slice={"task": "x"}))
    assert anytime_method(_criterion(metric="forbidden_rate", op="<=", threshold=0.05)) == ""


def test_a_clear_pass_is_decided_early_and_says_where():
    result = decide_stopped(_criterion(threshold=0.5), Track((1.0,) * 40, complete=False, asked=40), 3, _fixed())
    assert result.verdict == CriterionVerdict.PASS
    assert "e-process" in result.reason and result.value.n == 40
    lo, hi = result.value.bounds
    assert 0.5 < lo <= 1.0 == hi or lo > 0.5


def test_a_fail_needs_the_e_bonferroni_level():
    values = (0.0, 1.0) * 30  # mean 0.5 against >= 0.9
    one = decided_at(_criterion(), values, 1)
    many = decided_at(_criterion(), values, 50)
    assert one.verdict == CriterionVerdict.FAIL and many.verdict == CriterionVerdict.FAIL
    assert many.at > one.at  # fifty criteria: each FAIL at a fiftieth of the level needs more evidence


def test_a_stopped_run_never_passes_an_undecided_criterion():
    track = Track((1.0, 0.0) * 10, complete=False, asked=20)
    result = decide_stopped(_criterion(threshold=0.5), track, 1, _fixed())
    assert result.verdict == CriterionVerdict.INSUFFICIENT and result.cause == Undecided.SAMPLES


def test_a_criterion_with_no_anytime_method_is_unknown_on_a_stopped_run_and_as_ever_on_a_whole_one():
    latency = _criterion(metric="ttft_ms_p95", op="<=", threshold=200)
    stopped = decide_stopped(latency, Track((), complete=False, asked=30), 2, _fixed())
    assert stopped.verdict == CriterionVerdict.INSUFFICIENT and stopped.cause == Undecided.UNKNOWN
    assert "stopped after 30" in stopped.reason
    whole = decide_stopped(latency, Track((), complete=True, asked=30), 2, _fixed())
    assert whole.verdict == CriterionVerdict.PASS


def test_unknown_values_block_like_a_missing_method():
    track = Track((1.0,) * 50, complete=False, blocked="a case has no guard verdict", asked=50)
    result = decide_stopped(_criterion(threshold=0.5), track, 1, _fixed())
    assert result.verdict == CriterionVerdict.INSUFFICIENT


def test_an_undecided_whole_suite_falls_to_the_exact_bound():
    values = ((1.0,) * 19 + (0.0,)) * 5  # 95 of 100 against >= 0.9: the e-process is undecided on 100 cases
    assert decided_at(_criterion(), values, 1).verdict is None
    result = decide_stopped(_criterion(), Track(values, complete=True, asked=100), 1, _fixed())
    assert result.verdict == CriterionVerdict.INSUFFICIENT and "exact binomial" in result.reason
    clear = (1.0,) * 100
    assert decide_stopped(_criterion(threshold=0.93), Track(clear, complete=True, asked=100), 1,
                          _fixed()).verdict == CriterionVerdict.PASS


def test_fractional_values_at_the_suite_end_use_the_cluster_bounds():
    values = (0.5, 1.0) * 160  # a case's share of two draws: mean 0.75 against >= 0.7
    assert decided_at(_criterion(threshold=0.7), values, 1).verdict is None
    result = decide_stopped(_criterion(threshold=0.7), Track(values, complete=True, asked=320), 1, _fixed())
    lo, hi = map(float, result.reason.split("[")[1].split("]")[0].split(", "))
    assert "bounds" in result.reason and lo < 0.75 < hi  # the cluster bounds on all 320, at 1 - alpha / 2
    assert result.verdict == (CriterionVerdict.PASS if lo >= 0.7 else CriterionVerdict.INSUFFICIENT)


def test_lower_is_better_passes_below():
    forbidden = _criterion(metric="forbidden_rate", op="<=", threshold=0.3)
    assert decided_at(forbidden, (0.0,) * 60, 1).verdict == CriterionVerdict.PASS
    assert decided_at(forbidden, (1.0,) * 60, 1).verdict == CriterionVerdict.FAIL


def test_e_bonferroni_counts_only_the_criteria_that_can_fail_by_their_e_process():
    criteria = [_criterion(), _criterion(metric="ttft_ms_p95", op="<=", threshold=200),
                _criterion(metric="forbidden_rate", op="<=", threshold=0.1), _criterion(metric="error_rate_load",
                                                                                        op="<=", threshold=0.1)]
    assert fail_tests(criteria) == 2 and fail_tests([]) == 1


def _clean_run(cases: int, phases: list[str]) -> tuple[RunInfo, dict[str, CaseRecord]]:
    order = [f"c{i:03d}" for i in range(cases)]
    info = RunInfo(run_id="r", created_at="2026-01-01T00:00:00Z", target="t", backend="openai", phases=phases,
                   stopping={"seed": 1, "order": order})
    return info, {i: CaseRecord(case_id=i, suite="s", input={"prompt": "p"}, output="yes") for i in order}


def test_error_rate_is_decided_by_its_e_process_only_where_no_load_phase_adds_requests():
    errors = _criterion(name="errors", metric="error_rate", op="<=", threshold=0.2)
    info, records = _clean_run(200, ["quality"])
    alone = run_stop_state(info, [errors], records, lambda r: {})
    assert alone.decided["errors"].verdict == CriterionVerdict.PASS  # 200 clean requests of the quality cases
    info, records = _clean_run(200, ["quality", "load"])
    loaded = run_stop_state(info, [errors], records, lambda r: {})
    assert loaded.decided["errors"].verdict is None  # the load phase's requests are not asked yet
    assert "load phase" in loaded.tracks["errors"].blocked
    stopped = Track((), complete=False, blocked=loaded.tracks["errors"].blocked, asked=200)
    result = decide_stopped(errors, stopped, 1, _fixed())
    assert result.verdict == CriterionVerdict.INSUFFICIENT and result.cause == Undecided.UNKNOWN
    quality = _criterion(name="quality", metric="error_rate_quality", op="<=", threshold=0.2)
    assert run_stop_state(info, [quality], records, lambda r: {}).decided["quality"].verdict == CriterionVerdict.PASS


def test_the_fail_level_counts_only_criteria_with_an_anytime_method():
    # 0.55 against >= 0.9: the FAIL side's e-process at m = 1 and at m = 2 crosses at different cases
    values = tuple(float(i % 20 < 11) for i in range(400))
    one = decided_at(_criterion(), values, 1)
    two = decided_at(_criterion(), values, 2)
    assert one.verdict == two.verdict == CriterionVerdict.FAIL and one.at is not None and two.at is not None
    assert one.at < two.at
    latency = _criterion(name="lat", metric="ttft_ms_p95", op="<=", threshold=200)
    info, _ = _clean_run(400, ["quality"])
    records = {f"c{i:03d}": CaseRecord(case_id=f"c{i:03d}", suite="s", input={"prompt": "p"}, output="yes")
               for i in range(400)}
    scores = {f"c{i:03d}": {"answer": {"passed": bool(values[i])}} for i in range(400)}
    state = run_stop_state(info, [_criterion(), latency], records, lambda r: scores[r.case_id])
    assert state.decided["acc"] == one  # the latency criterion (no anytime method) does not raise the level
