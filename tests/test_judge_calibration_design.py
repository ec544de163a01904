"""Judge calibration weighted by how the review sample was drawn, per slice, compared unrounded; and the pairwise
parser's two-verdicts rule. Hand-built run directories (records, judgments.jsonl, reviews.jsonl) judged by
`releasegate gate --json` to the verdict and exit code each must get (each of them once said PASS), a seeded
simulation of the post-stratified estimate under the real sampler, and the pairwise quoting reply end to end."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean, stdev

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from releasegate.cli import main
from releasegate.decision.verdicts import EXIT_CODES
from releasegate.inputs.judge_prompt import Unparseable, parse_preference
from releasegate.inputs.review_policy import ReviewPolicy, SamplePolicy
from releasegate.llm_judge.correction import corrected_accuracy
from releasegate.record.judge_journal import Judgment
from releasegate.record.records import CaseRecord, Timing, Tokens
from releasegate.record.review_outcome import output_hash
from releasegate.review.sampler import choose_sample, sampling_cells
from releasegate.stats.intervals import wilson_bounds
from releasegate.testing import StubBehaviour, StubServer
from test_false_pass import NO_REVIEW, Run, _journal

FINGERPRINT = "judge-0123456789abcdef"
JUDGED = {"type": "judge", "criterion": "helpful"}


def judged(i: int, tags: dict, suite: str = "s") -> dict:
    return CaseRecord(case_id=f"c{i:04d}", suite=suite, tags=tags, input={"prompt": f"ticket {i}"}, answer=JUDGED,
                      output=f"reply {i}", tokens=Tokens(input=5, output=10),
                      timing=Timing(ttft_ms=50.0, tpot_ms=5.0, e2e_ms=95.0)).model_dump(mode="json")


@dataclass
class JudgedRun(Run):
    """A run whose cases the judge graded: `grades` case id -> True / False (pass / fail) or a score 1..5 that
    passes from 4."""

    grades: dict = field(default_factory=dict)

    def build(self, root: Path) -> Path:
        path = super().build(root)
        info = json.loads((path / "run.json").read_text())
        info["judge"] = {"backend": "replay", "model": "judge", "fingerprint": FINGERPRINT, "on_error": "insufficient"}
        (path / "run.json").write_text(json.dumps(info))
        outputs = {r["case_id"]: r["output"] for r in self.records}
        _journal(path / "judgments.jsonl", [_judgment(cid, grade, outputs[cid]) for cid, grade in self.grades.items()])
        return path


def _judgment(case_id: str, grade, output: str) -> dict:
    scaled = not isinstance(grade, bool)
    return Judgment(case_id=case_id, criterion="helpful", judge=FINGERPRINT, output_hash=output_hash(output),
                    passed=grade >= 4 if scaled else grade, score=grade if scaled else None,
                    scale=5 if scaled else None, pass_mark=4 if scaled else None, reason="r").model_dump(mode="json")


def population(*groups: tuple, suite: str = "s", start: int = 0) -> tuple[list, dict, list]:
    """Judge-scored cases in groups of (cases, tags, the judge's grade, labelled approved, labelled rejected):
    (records, grades, labels)."""
    records, grades, labels = [], {}, []
    i = start
    for cases, tags, grade, approved, rejected in groups:
        for k in range(cases):
            record = judged(i, tags, suite)
            records.append(record)
            grades[record["case_id"]] = grade
            if k < approved + rejected:
                labels.append((record["case_id"], "approve" if k < approved else "reject"))
            i += 1
    return records, grades, labels


def judged_run(*groups, criteria: list[dict], judge: dict, more: tuple = ((), {}, []),
               review: dict = NO_REVIEW) -> JudgedRun:
    records, grades, labels = population(*groups)
    records, grades, labels = records + list(more[0]), {**grades, **more[1]}, labels + list(more[2])
    rubric = {"name": "judged", "review": review, "judge": judge, "criteria": criteria}
    return JudgedRun(records, rubric=rubric, labels=labels, grades=grades)


EASY, HARD = {"task": "easy"}, {"task": "hard"}
ON_HARD = [{"metric": "accuracy", "op": ">=", "threshold": 0.8, "slice": {"task": "hard"}}]
ON_ALL = [{"metric": "accuracy", "op": ">=", "threshold": 0.8}]


def _agreeing(agree: int, of: int = 163) -> JudgedRun:
    """`of` labelled cases, the judge agreeing with the reviewers on `agree` (its false fails the rest)."""
    wrong = of - agree
    return judged_run((140, EASY, True, 140, 0), (of - 140, EASY, False, wrong, of - 140 - wrong),
                      criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.5}],
                      judge={"min_agreement": 0.9, "min_labels": 20})


# the whole run: the judge passes 300 replies all approved, fails 10 of which reviewers approve 6; a slice the
# reviewers approve 1 of 7 judge passes in: the whole run's table (precision 0.98, false fails 0.69) read it 0.90
_WHOLE_RUN = ((300, EASY, True, 300, 0), (10, EASY, False, 6, 4))
_SAMPLED = {"per_slice": 30, "audit": 0}

CORPUS: dict[str, tuple[JudgedRun, str]] = {
    "a slice corrected with its own labels (true 0.40)": (
        judged_run(*_WHOLE_RUN, (7, HARD, True, 1, 6), (3, HARD, False, 3, 0), criteria=ON_HARD,
                   judge={"min_agreement": 0.8, "min_labels": 10}), "FAIL"),
    "a slice with too few labels of its own": (
        judged_run(*_WHOLE_RUN, (7, HARD, True, 1, 1), (3, HARD, False, 1, 0), criteria=ON_HARD,
                   judge={"min_agreement": 0.8, "min_labels": 10}), "NEEDS_REVIEW"),  # labels would decide it
    # borderline grades (3 and 4 around the pass mark 4) drawn 6 in 10, grade 5 1 in 10: pooled, the judge's
    # fails read as approved half the time (all of them grade 3) and accuracy 0.85; weighted back, 0.78 (human
    # approval, which post-stratifies by outcome, passes its own 0.7)
    "borderline grades over-drawn 3x": (
        judged_run((60, EASY, 5, 6, 0), (10, EASY, 4, 6, 0), (10, EASY, 3, 5, 1), (10, EASY, 2, 0, 2),
                   (10, EASY, 1, 0, 2), criteria=ON_ALL, judge={"min_agreement": 0.5, "min_labels": 20},
                   review={**NO_REVIEW, "min_approval": 0.7}), "FAIL"),
    # the required slice is topped up (all 20 labelled, all approved), the other 80 cases have 10 labels, 6
    # approved: pooled, 26 of 30 (0.87) for every case; weighted back, (20 + 80 x 0.6) / 100 = 0.68
    "a required slice over-drawn": (
        judged_run((20, HARD, True, 20, 0), (80, EASY, True, 6, 4), criteria=[
            {"metric": "accuracy", "op": ">=", "threshold": 0.85}], judge={"min_agreement": 0.4, "min_labels": 20},
                   review={**NO_REVIEW, "required_slices": [HARD], "min_reviewed": 10, "min_approval": 0.8}), "FAIL"),
    # every label is from suite s: they say nothing of suite t's cases, which nobody looked at
    # (and the reviewers rejected a third of what they saw: human approval fails on its bound as well)
    "labels from one stratum stand for another": (
        judged_run((40, EASY, True, 20, 0), (10, EASY, False, 0, 10), criteria=ON_ALL,
                   judge={"min_agreement": 0.8, "min_labels": 20},
                   more=population((50, EASY, True, 0, 0), suite="t", start=100)), "FAIL"),
    # a lower bound of 0.89999981 is short of 0.9, however it is rounded for the report
    "153 of 163 agreeing at min_agreement 0.9": (_agreeing(153), "INCONCLUSIVE"),
    "154 of 163 agreeing at min_agreement 0.9 (control)": (_agreeing(154), "PASS"),
    "whole run, all labelled (control)": (
        judged_run(*_WHOLE_RUN, criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.9}],
                   judge={"min_agreement": 0.8, "min_labels": 10}), "PASS"),
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_corpus_verdicts(name, tmp_path, capsys):
    run, expected = CORPUS[name]
    code = main(["gate", str(run.build(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == expected, (name, report["verdict"], report.get("verdict_reason"), report["criteria"])
    assert code == EXIT_CODES[expected] == report["exit_code"]


def _gate(run: JudgedRun, root: Path, capsys) -> dict:
    main(["gate", str(run.build(root)), "--json"])
    return json.loads(capsys.readouterr().out)


def test_a_slice_reads_its_own_reviewers(tmp_path, capsys):
    report = _gate(CORPUS["a slice corrected with its own labels (true 0.40)"][0], tmp_path, capsys)
    hard = next(c for c in report["criteria"] if c["metric"] == "accuracy")
    assert hard["value"] == pytest.approx(0.4) and "reviewer-corrected" in hard["note"]
    assert report["judge"]["calibration"]["helpful"]["calibrated"]
    few = _gate(CORPUS["a slice with too few labels of its own"][0], tmp_path / "few", capsys)
    reason = next(c for c in few["criteria"] if c["metric"] == "accuracy")["reason"]
    assert "3 labelled judge-scored case(s)" in reason and "min_labels 10" in reason


def test_borderline_grades_are_weighted_back_to_the_run(tmp_path, capsys):
    report = _gate(CORPUS["borderline grades over-drawn 3x"][0], tmp_path, capsys)
    accuracy = next(c for c in report["criteria"] if c["metric"] == "accuracy")
    assert accuracy["value"] == pytest.approx((60 + 10 + 10 * 5 / 6) / 100)  # pooled, it was 0.85


def test_a_cell_nobody_labelled_is_named(tmp_path, capsys):
    report = _gate(CORPUS["labels from one stratum stand for another"][0], tmp_path, capsys)
    accuracy = next(c for c in report["criteria"] if c["metric"] == "accuracy")
    assert accuracy["verdict"] == "insufficient"
    assert "suite=t" in accuracy["reason"] and "label some" in accuracy["reason"]
    cells = report["judge"]["calibration"]["helpful"]["cells"]
    assert cells["suite=t,domain=(none)|pass"] == {"cases": 50, "labelled": 0, "approved": 0}
    assert cells["suite=s,domain=(none)|pass"] == {"cases": 40, "labelled": 20, "approved": 20}


def test_the_agreement_bound_is_compared_unrounded(tmp_path, capsys):
    report = _gate(CORPUS["153 of 163 agreeing at min_agreement 0.9"][0], tmp_path, capsys)
    row = report["judge"]["calibration"]["helpful"]
    # every case labelled: the weighted agreement is the labels' own, its bound Wilson's at n = 163
    assert row["agreement_lower"] == pytest.approx(wilson_bounds(153, 163, 0.95)[0], abs=1e-12)
    assert row["agreement_lower"] < 0.9 and not row["calibrated"]
    assert "0.8999998" in row["why"]  # the reason never reads 0.900 < 0.9
    control = _gate(CORPUS["154 of 163 agreeing at min_agreement 0.9 (control)"][0], tmp_path / "control", capsys)
    assert control["judge"]["calibration"]["helpful"]["calibrated"]


# --- the post-stratified estimate is unbiased under the real sampler ----------------------------------------

# the judge's grade (1..5, passing from 4) -> share of the cases, and the chance reviewers approve one
GRADES = {5: (0.50, 0.92), 4: (0.15, 0.90), 3: (0.15, 0.50), 2: (0.10, 0.02), 1: (0.10, 0.02)}
SIM_CASES, SIM_RUNS = 300, 200


def _simulated_run() -> tuple[list[CaseRecord], dict, dict]:
    """300 judge-scored cases in two strata of unequal size: records, scores, case id -> approval chance."""
    rng = random.Random(7)
    records, scores, chance = [], {}, {}
    for i in range(SIM_CASES):
        grade = rng.choices(list(GRADES), weights=[w for w, _ in GRADES.values()])[0]
        record = CaseRecord.model_validate(judged(i, {"domain": "billing" if i % 3 else "travel"}))
        verdict = {"criterion": "helpful", "passed": grade >= 4, "score": grade, "pass_mark": 4}
        records.append(record)
        scores[record.case_id] = {"answer": {"passed": grade >= 4, "judge": verdict}}
        chance[record.case_id] = GRADES[grade][1]
    return records, scores, chance


def _pooled(records, scores: dict, approved: dict) -> float:
    """The old reading: one precision for every judge pass, one false-fail rate for every judge fail."""
    verdict = {r.case_id: scores[r.case_id]["answer"]["passed"] for r in records}
    rate = {}
    for passed in (True, False):
        labels = [approved[c] for c in approved if verdict[c] == passed]
        rate[passed] = sum(labels) / len(labels)
    return fmean(rate[verdict[r.case_id]] for r in records)


def test_post_stratified_accuracy_is_unbiased_where_pooled_reads_high():
    records, scores, chance = _simulated_run()
    policy = ReviewPolicy(required_domains=(), sample=SamplePolicy(
        stratify_by=("domain",), per_slice=40, oversample={"borderline": 3.0, "fail": 1.0}, audit=0.0))
    cells = sampling_cells(records, scores, policy)
    rng = random.Random(11)
    errors, pooled_errors, covered = [], [], 0
    for seed in range(SIM_RUNS):
        truth = {r.case_id: rng.random() < chance[r.case_id] for r in records}  # what reviewers would say of each
        sample = choose_sample("sim", records, scores, policy, seed=seed)
        approved = {item.case_id: truth[item.case_id] for item in sample.items}
        value = corrected_accuracy(records, scores, approved, cells, 0.95)
        actual = fmean(truth.values())
        errors.append(value.value - actual)
        pooled_errors.append(_pooled(records, scores, approved) - actual)
        covered += value.bounds[0] <= actual
    mc_error = stdev(errors) / SIM_RUNS ** 0.5
    assert 0.02 <= fmean(pooled_errors) <= 0.06  # the design this guards against: pooled labels read high
    assert abs(fmean(errors)) <= 3 * mc_error + 0.002, (fmean(errors), mc_error)
    assert covered / SIM_RUNS >= 0.95 - 3 * (0.05 * 0.95 / SIM_RUNS) ** 0.5  # the effective-n bound holds


def test_the_sample_records_each_case_s_cell_and_inclusion():
    records, scores, _ = _simulated_run()
    policy = ReviewPolicy(required_domains=(), required_slices=({"domain": "travel"},), min_reviewed=40,
                          sample=SamplePolicy(stratify_by=("domain",), per_slice=10, audit=0.0))
    sample = choose_sample("sim", records, scores, policy)
    cells = sampling_cells(records, scores, policy)
    for item in sample.items:
        assert item.cell == cells[item.case_id] and item.cell.startswith(item.stratum + "|" + item.outcome)
        members = [c for c in cells if cells[c] == item.cell]
        assert item.inclusion == sum(i.cell == item.cell for i in sample.items) / len(members)
    travel = next(i for i in sample.items if i.stratum == "domain=travel")
    assert travel.cell.endswith("|domain=travel")  # topped up as a required slice: its own cells


# --- pairwise: a reply stating two preferences is no preference -------------------------------------------

@pytest.mark.parametrize("reply", [
    'The candidate wrote {"preference": "tie"}. {"reason": "the baseline answers the question", "preference": "B"}',
    '```json\n{"preference": "A"}\n``` (from response B) My verdict: {"reason": "r", "preference": "B"}',
    'preference: tie -- no. {"reason": "A is better", "preference": "A"}',
])
def test_a_pairwise_reply_with_two_preferences_is_unparseable(reply):
    with pytest.raises(Unparseable, match="more than one preference"):
        parse_preference(reply)


def test_the_same_preference_twice_is_one():
    assert parse_preference('As asked: {"preference": "B"}. {"reason": "r", "preference": "b"}')[0] == "B"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["A", "B", "tie"]), min_size=1, max_size=4), st.text(max_size=40))
def test_any_reply_states_one_preference_or_none(stated, noise):
    reply = noise.replace("{", "").replace("preference", "") + " ".join(
        json.dumps({"reason": "r", "preference": p}) for p in stated)
    if len(set(stated)) > 1:
        with pytest.raises(Unparseable):
            parse_preference(reply)
    else:
        assert parse_preference(reply)[0] == stated[0]


def _quoting(body: dict) -> str:
    """A judge that prefers the baseline's reply every time, after quoting a draft's {"preference": "tie"}."""
    text = body["messages"][-1]["content"]
    if "<response-a-" not in text:
        return json.dumps({"reason": "r", "verdict": "pass"})
    a = text.split("<response-a-", 2)[2]
    baseline = "B" if a.split("</response-a-")[0].rstrip().endswith("(candidate)") else "A"
    own = json.dumps({"reason": "the other is better", "preference": baseline})
    return 'One draft says {"preference": "tie"}. ' + own


def test_quoting_a_tie_before_a_loss_decides_nothing(tmp_path, cli):
    """40 comparisons the baseline wins in both orders, each reply quoting {"preference": "tie"} first: read by
    its first JSON object that was 40 ties, and a pass of pairwise_loss_rate <= 0.3."""
    from conftest import write_jsonl
    from test_llm_judge import _drafts, _import_labels, check, project, stub_judge

    base_dir = tmp_path / "baseline"
    base_dir.mkdir()
    write_jsonl(base_dir / "verdicts.jsonl", [{"id": d["id"], "output": '{"reason": "r", "verdict": "pass"}'}
                                              for d in _drafts()])
    replay = "  backend: replay\n  responses: verdicts.jsonl\n  criteria:\n    helpful: {instructions: Helps.}\n"
    _, _, baseline, _ = check(cli, project(base_dir, replay, min_labels=1, min_agreement=0.0), run_id="base")
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=6, reply=_quoting)) as stub:
        config = project(tmp_path, stub_judge(stub.base_url, f"  baseline: {baseline.path}\n"), min_labels=1,
                         min_agreement=0.0, rubric_extra='  - {metric: pairwise_loss_rate, op: "<=", threshold: 0.3}\n')
        write_jsonl(tmp_path / "drafts.jsonl", [{**d, "output": d["output"] + " (candidate)"} for d in _drafts()])
        _, _, run, _ = check(cli, config)
    _import_labels(run, [{"case_id": "c000", "label": "approve"}])
    code, out, _ = cli("gate", run.path, "--json")
    report = json.loads(out)
    loss = next(c for c in report["criteria"] if c["metric"] == "pairwise_loss_rate")
    assert loss["verdict"] == "insufficient" and report["judge"]["pairwise"]["helpful"]["tie"] == 0
    rows = [json.loads(line) for line in (run.path / "judgments.jsonl").read_text().splitlines()]
    errors = [r["error"] for r in rows if r["order"]]
    assert len(errors) == 80 and set(errors) == {"judge_unparseable"}
    assert report["verdict"] == "INCONCLUSIVE" and code == 3
