"""A stratified `sample:` suite speaks for its source on every surface that combines its cases, not only in the
gate's own rates (docs/guarantees.md, rule 10): the reviewer-corrected judge accuracy, human approval, and the paired rates of
`compare` and a rubric `baseline:`. Each case below once passed as the sample's equal allocation while its source
missed the bar. Hand-built run directories judged through `releasegate.cli.main` to the verdict and exit code;
each with a control: the same run unsampled is judged as before."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from releasegate.cli import main
from releasegate.decision.verdicts import EXIT_CODES
from releasegate.record.records import Stratum
from releasegate.review.summary import approval_of
from releasegate.stats.intervals import paired_min_n, paired_rate_bounds
from releasegate.stats.sample_weights import kish_n
from test_false_pass import NO_REVIEW, RIGHT, WRONG, Run, ok
from test_judge_calibration_design import JudgedRun, population

COMMON, RARE = 9500, 500
"""Source rows of a common stratum and a rare one, sampled with equal allocation."""


def _stratify(records: list[dict], kind: str, rows: int) -> list[dict]:
    for r in records:
        r["stratum"] = Stratum(name=f"kind={kind}", population=rows).model_dump()
    return records


def _gate(path: Path, capsys) -> tuple[int, dict]:
    code = main(["gate", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def _criterion(report: dict, metric: str) -> dict:
    return next(c for c in report["criteria"] if c["metric"] == metric)


# --- the reviewer-corrected judge accuracy and human approval ------------------------------------------------


def _judged(sampled: bool, min_approval: float, criteria: list[dict]) -> JudgedRun:
    """400 judge-scored cases of a common stratum (75% right) and 400 of a rare one (all right), every case
    labelled and the judge agreeing with the reviewers on each: the source's accuracy is 0.95 x 0.75 + 0.05 =
    0.7625, the sample's 0.875."""
    common, g1, l1 = population((300, {"kind": "common"}, True, 300, 0), (100, {"kind": "common"}, False, 0, 100))
    rare, g2, l2 = population((400, {"kind": "rare"}, True, 400, 0), start=1000)
    if sampled:
        _stratify(common, "common", COMMON)
        _stratify(rare, "rare", RARE)
    rubric = {"name": "judged", "review": {**NO_REVIEW, "min_approval": min_approval}, "criteria": criteria}
    return JudgedRun(common + rare, rubric=rubric, labels=l1 + l2, grades={**g1, **g2})


ACCURACY = [{"metric": "accuracy", "op": ">=", "threshold": 0.8}]
LOW_BAR = [{"metric": "accuracy", "op": ">=", "threshold": 0.5}]


def test_the_corrected_accuracy_of_a_sample_is_its_sources(tmp_path, capsys):
    code, report = _gate(_judged(True, 0.5, ACCURACY).build(tmp_path), capsys)
    accuracy = _criterion(report, "accuracy")
    assert report["verdict"] == "FAIL" and code == EXIT_CODES["FAIL"]
    assert accuracy["verdict"] == "fail" and accuracy["value"] == pytest.approx(0.7625)
    assert "reviewer-corrected" in accuracy["note"] and "population-weighted" in accuracy["note"]
    assert report["metrics"]["accuracy"]["value"] == pytest.approx(0.7625)  # the gate's own rate agrees


def test_an_unsampled_run_is_corrected_as_before(tmp_path, capsys):
    code, report = _gate(_judged(False, 0.5, ACCURACY).build(tmp_path), capsys)
    accuracy = _criterion(report, "accuracy")
    assert report["verdict"] == "PASS" and code == EXIT_CODES["PASS"]
    assert accuracy["value"] == pytest.approx(0.875) and "population-weighted" not in accuracy["note"]


def test_partly_labelled_strata_are_each_read_from_their_own_labels(tmp_path, capsys):
    # a fifth of each stratum labelled: the rare stratum's approvals never stand in for the common one's cases
    common, g1, l1 = population((300, {"kind": "common"}, True, 60, 0), (100, {"kind": "common"}, False, 0, 20))
    rare, g2, l2 = population((400, {"kind": "rare"}, True, 80, 0), start=1000)
    _stratify(common, "common", COMMON)
    _stratify(rare, "rare", RARE)
    rubric = {"name": "judged", "review": {**NO_REVIEW, "min_approval": 0.5},
              "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.82, "confidence": 0.95}]}
    run = JudgedRun(common + rare, rubric=rubric, labels=l1 + l2, grades={**g1, **g2})
    code, report = _gate(run.build(tmp_path), capsys)
    accuracy = _criterion(report, "accuracy")
    assert accuracy["value"] == pytest.approx(0.7625) and accuracy["verdict"] == "fail"
    assert "3 post-strata" in accuracy["note"]  # the judge's passes split by stratum, its fails all common
    assert report["verdict"] == "FAIL" and code == EXIT_CODES["FAIL"]
    approval = _criterion(report, "human_approval")  # the labels stand for each stratum's unlabelled cases
    assert approval["value"] == pytest.approx(0.7625) and approval["verdict"] == "pass"
    assert report["review"]["all"]["effective_n"] < 442  # fewer than the 442 of a sample labelled whole


def test_human_approval_of_a_sample_is_its_sources(tmp_path, capsys):
    code, report = _gate(_judged(True, 0.8, LOW_BAR).build(tmp_path), capsys)
    approval = _criterion(report, "human_approval")
    assert approval["verdict"] == "fail" and approval["value"] == pytest.approx(0.7625)
    assert report["verdict"] == "FAIL" and code == EXIT_CODES["FAIL"]
    # labelled whole, the sample is still a sample of its source: its bound is Kish's, not the point
    assert report["review"]["all"]["effective_n"] == pytest.approx(442.0, abs=1)


def test_human_approval_of_an_unsampled_run_is_as_before(tmp_path, capsys):
    code, report = _gate(_judged(False, 0.8, LOW_BAR).build(tmp_path), capsys)
    approval = _criterion(report, "human_approval")
    assert approval["verdict"] == "pass" and approval["value"] == pytest.approx(0.875)
    assert report["verdict"] == "PASS" and code == EXIT_CODES["PASS"]
    assert report["review"]["all"]["effective_n"] is None  # labelled whole: its approval is known


@pytest.mark.parametrize("sampled, verdict", [(True, "INCONCLUSIVE"), (False, "FAIL")])
def test_a_required_slice_labelled_whole_is_still_a_sample_of_its_source(tmp_path, capsys, sampled, verdict):
    # kind=common: 0.75 approved of 400, min_approval 0.78. Unsampled, the slice is the suite and labelled whole
    # it fails; sampled, it stands for 9,500 rows and its bounds [0.713, 0.784] straddle the bar: no label is
    # left to give, and it is undecided, never a silent pass
    run = _judged(sampled, 0.78, LOW_BAR)
    run.rubric["review"]["required_slices"] = [{"kind": "common"}]
    code, report = _gate(run.build(tmp_path), capsys)
    common = next(c for c in report["criteria"] if c["name"] == "human approval[kind=common]")
    assert report["verdict"] == verdict and code == EXIT_CODES[verdict]
    assert common["verdict"] == ("insufficient" if sampled else "fail")
    if sampled:
        assert "every case labelled" in common["reason"] and report["review"]["kind=common"]["status"] == "undecided"


def _approval_draw(rng: random.Random, per_stratum: int, labelled: int) -> tuple[float, float]:
    """The approval bounds of one equal-allocation sample (common 75% approvable, rare 95%), `labelled` labels
    drawn in each stratum."""
    records, labels, outcome = [], {}, {}
    for kind, rows, rate in (("common", COMMON, 0.75), ("rare", RARE, 0.95)):
        stratum = Stratum(name=f"kind={kind}", population=rows)
        for i in range(per_stratum):
            records.append(SimpleNamespace(case_id=f"{kind}{i}", suite="s", stratum=stratum))
            outcome[f"{kind}{i}"] = "pass"
            if i < labelled:
                labels[f"{kind}{i}"] = SimpleNamespace(label="approve" if rng.random() < rate else "reject")
    return approval_of(records, labels, outcome, 0.95).bounds


@pytest.mark.parametrize("per_stratum, labelled", [(200, 200), (100, 20)])
def test_the_weighted_approval_bounds_hold_their_confidence(per_stratum, labelled):
    # seeded: the source's approval is 0.95 x 0.75 + 0.05 x 0.95 = 0.76; each one-sided bound covers it
    rng, reps, truth = random.Random(per_stratum + labelled), 400, 0.76
    draws = [_approval_draw(rng, per_stratum, labelled) for _ in range(reps)]
    allowed = 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps)
    assert sum(lo <= truth for lo, _ in draws) / reps >= allowed
    assert sum(truth <= hi for _, hi in draws) / reps >= allowed


# --- paired comparisons: compare, a rubric baseline, servers parity ------------------------------------------


def _records(wrong_common: range, wrong_rare: range, sampled: bool, ttft: float = 50.0) -> list[dict]:
    """500 cases of each stratum, those in the ranges answered wrong."""
    out = []
    for kind, rows, wrong in (("common", COMMON, wrong_common), ("rare", RARE, wrong_rare)):
        records = [ok(i, output=WRONG if i in wrong else RIGHT, case_id=f"{kind}{i:04d}", tags={"kind": kind},
                      ttft=ttft) for i in range(500)]
        out += _stratify(records, kind, rows) if sampled else records
    return out


def _swapped(sampled: bool, ttft: float = 50.0) -> tuple[list[dict], list[dict]]:
    """The candidate gets 50 common cases wrong that the baseline got right and 50 rare ones right that it got
    wrong: on the sample they balance (delta 0); on the source it is 0.995 -> 0.905."""
    return _records(range(0), range(50), sampled), _records(range(50), range(0), sampled, ttft)


def _built(root: Path, name: str, run: Run) -> Path:
    """`run` built at root/name with run id `name`."""
    path = run.build(root / name)
    info = json.loads((path / "run.json").read_text())
    (path / "run.json").write_text(json.dumps({**info, "run_id": name}))
    return path


def _cli(capsys, *args) -> tuple[int, dict]:
    code = main([*map(str, args), "--json"])
    return code, json.loads(capsys.readouterr().out)


def _accuracy_row(result: dict) -> dict:
    return next(r for r in result["rows"] if r["metric"] == "accuracy")


def _compare(tmp_path: Path, base: list[dict], cand: list[dict], capsys) -> tuple[int, dict]:
    return _cli(capsys, "compare", _built(tmp_path, "base", Run(base)), _built(tmp_path, "cand", Run(cand)))


def test_compare_weighs_a_sample_as_its_source(tmp_path, capsys):
    code, result = _compare(tmp_path, *_swapped(True), capsys)
    accuracy = _accuracy_row(result)
    assert result["verdict"] == "FAIL" and code == 1
    assert accuracy["verdict"] == "fail" and accuracy["delta"] == pytest.approx(-0.09)
    assert accuracy["baseline"] == pytest.approx(0.995) and accuracy["candidate"] == pytest.approx(0.905)
    # weights 19 and 1, 500 cases each: Kish's n (500 x 20)^2 / (500 x 362)
    assert accuracy["weighted"] and accuracy["effective_n"] == pytest.approx(552.5, abs=0.1)
    assert accuracy["p_value"] is None and (accuracy["worse"], accuracy["better"]) == (50, 50)


def test_compare_of_unsampled_runs_is_as_before(tmp_path, capsys):
    code, result = _compare(tmp_path, *_swapped(False), capsys)
    accuracy = _accuracy_row(result)
    assert accuracy["delta"] == 0 and accuracy["verdict"] == "pass" and "weighted" not in accuracy
    assert accuracy["p_value"] == 1.0
    assert result["verdict"] == "PASS" and code == 0


def test_a_case_weighed_as_different_strata_in_the_two_runs_is_not_compared(tmp_path, capsys):
    base, cand = _swapped(True)
    for r in base:
        r["stratum"]["population"] *= 2  # another source
    code, result = _compare(tmp_path, base, cand, capsys)
    accuracy = _accuracy_row(result)
    assert accuracy["verdict"] == "insufficient" and "different sample stratum" in accuracy["note"]
    assert result["verdict"] == "INCONCLUSIVE" and code == 3


@pytest.mark.parametrize("sampled, verdict", [(True, "FAIL"), (False, "PASS")])
def test_a_rubric_baseline_weighs_a_sample_as_its_source(tmp_path, capsys, sampled, verdict):
    base, cand = _swapped(sampled)
    rubric = {"name": "corpus", "criteria": [{"metric": "accuracy", "op": ">=", "threshold": 0.8}],
              "review": NO_REVIEW, "baseline": {"run": str(_built(tmp_path, "base", Run(base)))}}
    code, report = _gate(_built(tmp_path, "cand", Run(cand, rubric=rubric)), capsys)
    assert report["verdict"] == verdict and code == EXIT_CODES[verdict]
    assert report["metrics"]["accuracy"]["value"] == pytest.approx(0.905 if sampled else 0.95)
    assert _criterion(report, "accuracy")["verdict"] == "pass"  # the candidate's own bar: only the baseline decides


@pytest.mark.parametrize("sampled, parity, recommended", [(True, "FAIL", "ref"), (False, "PASS", "fast")])
def test_servers_parity_weighs_a_sample_as_its_source(tmp_path, capsys, sampled, parity, recommended):
    base, cand = _swapped(sampled, ttft=10.0)  # the candidate is faster and passes its own gate
    code, result = _cli(capsys, "servers", _built(tmp_path, "ref", Run(base)), _built(tmp_path, "fast", Run(cand)))
    assert result["targets"][1]["parity"]["quality_verdict"] == parity
    assert result["recommended"] == recommended and code == 0


def test_the_weighted_paired_bound_holds_its_confidence():
    # seeded: an equal-allocation sample of 200 per stratum, the candidate worse on the common stratum and
    # better on the rare one (a true weighted loss of 0.0525); the upper bound on the loss covers it
    rng = np.random.default_rng(11)
    weights = [COMMON / 200] * 200 + [RARE / 200] * 200
    n, reps, misses = kish_n(weights), 2000, 0
    for _ in range(reps):
        cells = rng.multinomial(200, [0.85, 0.07, 0.01, 0.07]) * weights[0] + \
            rng.multinomial(200, [0.80, 0.01, 0.10, 0.09]) * weights[-1]
        misses += paired_rate_bounds(*(cells * n / cells.sum()))[1] < 0.0525
    assert 1 - misses / reps >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps)


# --- the shared cases a paired bound needs ---------------------------------------------------------------------


def test_needed_n_shows_a_tie_whatever_the_accuracy():
    needed = paired_min_n(0.02)
    assert needed == 155
    assert all(paired_rate_bounds(a, 0, 0, needed - a)[1] <= 0.02 for a in range(needed + 1))
    # one case fewer, a tie of one case good in both (and all the rest bad) cannot be told from a loss of 0.02
    assert paired_rate_bounds(1, 0, 0, needed - 2)[1] > 0.02
    # all good in both is shown sooner (133), but the rule holds for any run
    assert paired_rate_bounds(133, 0, 0, 0)[1] <= 0.02 < paired_rate_bounds(132, 0, 0, 0)[1]
