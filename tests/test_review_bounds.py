"""Human approval gated on a one-sided bound, and `allow_insufficient` relaxing only criteria that lack samples:
corpus run directories judged by `gate --json` with the verdict each must get, a seeded simulation of the
approval bound's false-pass rate, and properties of dropping labels."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import gate_run, overall_verdict
from releasegate.cli import main
from releasegate.decision.criterion import CriterionResult, Undecided
from releasegate.decision.verdicts import EXIT_CODES, INCONCLUSIVE, NEEDS_REVIEW, PASS
from releasegate.inputs.review_policy import ReviewPolicy
from releasegate.inputs.rubric import Criterion, Rubric
from releasegate.record.metrics import MetricValue
from releasegate.record.records import CaseRecord, RunInfo
from releasegate.record.review_labels import LabelEdit
from releasegate.review.summary import summarize_review
from test_capacity import sweep_run
from test_false_pass import RIGHT, WRONG, Run, _healthy, _label, _medical, lenient, ok
from test_review import edit, rec, scored

ACCURACY = {"metric": "accuracy", "op": ">=", "threshold": 0.8}
SATURATED = {"loop_lag_ms": {"p50": 2.0, "p99": 40.0, "max": 50.0, "n": 500}, "cpu_share": 0.99}


def _medical_right(n: int = 100) -> list[dict]:
    """n medical cases, all answered right (one automatic outcome), among 10 other cases."""
    return _healthy(10) + [ok(100 + i, tags={"domain": "medical"}) for i in range(n)]


def _labels(approve: int, reject: int) -> list[tuple[str, str]]:
    return [(f"c{100 + i:03d}", "approve" if i < approve else "reject") for i in range(approve + reject)]


def _sampled(kind: str, population: int, right: bool, i: int, weighted: bool = True) -> dict:
    row = ok(i, output=RIGHT if right else WRONG, tags={"kind": kind})
    row["stratum"] = {"name": f"kind={kind}", "population": population, "weighted": weighted}
    return row


def _equal_allocation(weighted: bool = True) -> list[dict]:
    """45 cases from each stratum of a 950/50 source: 34 of the common ones right, every rare one."""
    common = [_sampled("common", 950, i < 34, i, weighted) for i in range(45)]
    return common + [_sampled("rare", 50, True, 45 + i, weighted) for i in range(45)]


BAR = lenient(criteria=[{"metric": "accuracy", "op": ">=", "threshold": 0.85}])

CORPUS: dict[str, tuple[Run, str]] = {
    # allow_insufficient may relax only criteria lacking samples
    "allow_insufficient, labels on passed cases only": (
        Run(_medical(9), rubric=lenient(allow_insufficient=True, review={"min_reviewed": 1}),
            labels=[("c109", "approve")]), "NEEDS_REVIEW"),  # labels on the failed cases would decide it
    "allow_insufficient, saturated client": (
        Run([ok(i, ttft=100.0) for i in range(100)], client=SATURATED, rubric=lenient(
            allow_insufficient=True, criteria=[ACCURACY, {"metric": "tpot_ms_p50", "op": "<=", "threshold": 10}])),
        "INCONCLUSIVE"),
    "allow_insufficient, capacity broken at the lowest rate": (
        sweep_run([(10, 900.0)], rubric=lenient(allow_insufficient=True, criteria=[
            ACCURACY, {"metric": "capacity_rps", "op": ">=", "threshold": 20}])), "INCONCLUSIVE"),
    "allow_insufficient, token counts unknown": (
        Run([ok(i, tokens=None, fmt=[{"type": "max_length", "max_tokens": 50}]) for i in range(100)],
            rubric=lenient(allow_insufficient=True, criteria=[
                ACCURACY, {"metric": "format_compliance", "op": ">=", "threshold": 0.9}])), "INCONCLUSIVE"),
    "allow_insufficient, a slice too small still relaxed": (
        Run(_healthy(), rubric=lenient(allow_insufficient=True, criteria=[
            ACCURACY, {"metric": "accuracy", "op": ">=", "threshold": 0.8, "min_samples": 1000}])), "PASS"),
    # human approval on a one-sided bound
    "10 labels, 9 approved, min_approval 0.9": (
        Run(_medical_right(), rubric=lenient(review={"min_reviewed": 10}), labels=_labels(9, 1)), "NEEDS_REVIEW"),
    "10 labels, all approved, min_approval 0.9": (
        Run(_medical_right(), rubric=lenient(review={"min_reviewed": 10}), labels=_labels(10, 0)), "NEEDS_REVIEW"),
    "27 labels, 2 rejected: the bound straddles 0.9": (
        Run(_medical_right(), rubric=lenient(review={"min_reviewed": 10}), labels=_labels(25, 2)), "NEEDS_REVIEW"),
    "10 labels, 5 rejected: already a failure": (
        Run(_medical_right(), rubric=lenient(review={"min_reviewed": 10}), labels=_labels(5, 5)), "FAIL"),
    "25 labels, all approved": (
        Run(_medical_right(), rubric=lenient(review={"min_reviewed": 10}), labels=_labels(25, 0)), "PASS"),
    "a small slice labelled whole is its approval": (
        Run(_medical_right(12), rubric=lenient(review={"min_reviewed": 10}), labels=_labels(11, 1)), "PASS"),
    # a stratified sample gates its source
    "equal allocation, 950/50 source": (Run(_equal_allocation(), rubric=BAR), "FAIL"),
    "equal allocation, estimate: sample": (Run(_equal_allocation(weighted=False), rubric=BAR), "PASS"),
}

CAUSES = {
    "allow_insufficient, labels on passed cases only": "review",
    "allow_insufficient, saturated client": "client",
    "allow_insufficient, capacity broken at the lowest rate": "capacity",
    "allow_insufficient, token counts unknown": "unknown",
    "allow_insufficient, a slice too small still relaxed": "samples",
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_corpus_verdicts(name, tmp_path, capsys):
    run, expected = CORPUS[name]
    code = main(["gate", str(run.build(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == expected, (name, report["verdict"], report.get("verdict_reason"))
    assert code == EXIT_CODES[expected] == report["exit_code"]
    if name in CAUSES:
        causes = {c["undecided_cause"] for c in report["criteria"] if c["verdict"] == "insufficient"}
        assert causes == {CAUSES[name]}, report["criteria"]
        if expected == INCONCLUSIVE:
            assert f"({CAUSES[name]})" in report["verdict_reason"]
    if "estimate: sample" in name:
        assert "describe the sample only" in report["verdict_reason"]


def test_the_weighted_estimate_of_the_950_50_sample():
    records = [CaseRecord.model_validate(r) for r in _equal_allocation()]
    info = RunInfo(run_id="s", created_at="now", target="t", backend="openai", status="complete", cases=90,
                   generation_seconds=1.0, phases=["quality"])
    rubric = Rubric(path=None, name="s", criteria=(Criterion(name="acc", metric="accuracy", op=">=", threshold=0.85),),
                    review=ReviewPolicy(required_domains=()))
    accuracy = gate_run(info, records, rubric, None)["metrics"]["accuracy"]
    assert round(accuracy["value"], 3) == 0.768 and accuracy["n"] == 90


@pytest.mark.parametrize("cause", list(Undecided) + [None])
def test_allow_insufficient_relaxes_only_a_lack_of_samples(cause):
    decided = CriterionResult(Criterion(name="a", metric="accuracy", op=">=", threshold=0.5), MetricValue(0.9, 50), "pass")
    undecided = CriterionResult(Criterion(name="b", metric="accuracy", op=">=", threshold=0.5), MetricValue(None, 0),
                                "insufficient", "why", cause=cause)
    verdict = overall_verdict([decided, undecided], allow_insufficient=True)
    waits = cause in (Undecided.REVIEW, Undecided.JUDGE)  # only reviewers' labels keep it open
    assert verdict == (PASS if cause == Undecided.SAMPLES else NEEDS_REVIEW if waits else INCONCLUSIVE)
    assert overall_verdict([decided, undecided]) == (NEEDS_REVIEW if waits else INCONCLUSIVE)


def test_an_uncalibrated_judge_is_not_relaxed(tmp_path, cli):
    from test_llm_judge import CASES, _human, _replay_project, check, label_all

    config = _replay_project(tmp_path, wrong=set(range(0, CASES, 3)))  # the judge is wrong on 14 of 40
    rubric = tmp_path / "rubric.yaml"
    errors = ('  - {name: errors, metric: error_rate, op: "<=", threshold: 0.05}\n'
              '  - {name: few, metric: accuracy, op: ">=", threshold: 0.5, min_samples: 1000}\n')
    rubric.write_text(rubric.read_text().replace("criteria:\n", "criteria:\n" + errors) + "allow_insufficient: true\n")
    _, _, run, _ = check(cli, config)
    label_all(cli, run, tmp_path, _human)
    code, out, _ = cli("gate", run.path, "--json")
    report = json.loads(out)
    helpful = next(c for c in report["criteria"] if c["name"] == "helpful")
    assert helpful["verdict"] == "insufficient" and helpful["undecided_cause"] == "judge"
    few = next(c for c in report["criteria"] if c["name"] == "few")  # too few samples, and an uncalibrated judge
    assert few["verdict"] == "insufficient" and few["undecided_cause"] == "judge"
    assert next(c for c in report["criteria"] if c["name"] == "errors")["verdict"] == "pass"
    assert report["verdict"] == "INCONCLUSIVE" and code == 3


# --- the approval bound's false-pass rate ---------------------------------------------------------------------

def _pass_rate(true_approval: float, labels: int, *, trials: int, seed: int, cases: int = 200) -> float:
    """Share of seeded trials in which a required slice of `cases` cases, `true_approval` of which reviewers
    would approve, passes `min_approval: 0.9` on `labels` labels drawn at random."""
    rng = random.Random(seed)
    records = [rec(f"m{i}", "medical") for i in range(cases)]
    scores = scored(records)
    approving = round(true_approval * cases)
    policy = ReviewPolicy(min_reviewed=10, min_approval=0.9)
    passed = 0
    for _ in range(trials):
        good = set(rng.sample(range(cases), approving))
        chosen = rng.sample(range(cases), labels)
        edits = [edit(f"m{i}", "ana", "approve" if i in good else "reject") for i in chosen]
        row = summarize_review(policy, records, scores, edits).rows["domain=medical"]
        passed += row["status"] == "pass"
    return passed / trials


def test_ten_labels_at_true_approval_0_8_never_pass_0_9():
    """With a point value, 10 labels at a true 0.8 passed 0.9 in 37.6% of draws (9 or 10 approvals); on the
    bound 10 labels cannot pass at all (0.9 at 0.95 needs 25 approving), so the slice stays pending."""
    assert _pass_rate(0.8, 10, trials=300, seed=1) == 0.0


@pytest.mark.parametrize("labels", [25, 40, 80])
def test_the_approval_bound_false_passes_at_most_one_minus_its_confidence(labels):
    """A slice truly at 0.88 (below min_approval 0.9) passes at most 5% of the time, plus Monte Carlo error."""
    trials = 300
    rate = _pass_rate(0.88, labels, trials=trials, seed=labels)
    assert rate <= 0.05 + 3 * (0.05 * 0.95 / trials) ** 0.5, rate
    assert _pass_rate(0.8, labels, trials=100, seed=labels + 1) <= 0.05


# --- dropping labels ----------------------------------------------------------------------------------------

INFO = RunInfo(run_id="p", created_at="now", target="t", backend="openai", status="complete", cases=0,
               generation_seconds=1.0, phases=["quality"])
RUBRIC = Rubric(path=None, name="p", criteria=(Criterion(name="acc", metric="accuracy", op=">=", threshold=0.5),),
                review=ReviewPolicy(min_reviewed=4, min_approval=0.7))


def _verdict(records: list[CaseRecord], labels: list[LabelEdit], rubric: Rubric = RUBRIC) -> str:
    return gate_run(INFO.model_copy(update={"cases": len(records)}), records, rubric, None, labels=labels)["verdict"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.booleans(), min_size=1, max_size=40), st.lists(st.sampled_from(["approve", "reject", None]),
                                                                    max_size=40), st.integers(0, 2**32 - 1))
def test_dropping_approvals_never_makes_a_pass(rights, labelling, seed):
    """A required slice (medical) of right and wrong answers, some labelled: dropping approving labels never
    turns a non-PASS into PASS (less evidence of approval never shows more)."""
    records = [CaseRecord.model_validate(ok(100 + i, output=RIGHT if right else WRONG, tags={"domain": "medical"}))
               for i, right in enumerate(rights)] + [CaseRecord.model_validate(r) for r in _healthy(20)]
    given_ = [(records[i], label) for i, label in enumerate(labelling[: len(rights)]) if label]
    labels = [LabelEdit.model_validate(_label(r.case_id, label, r.output)) for r, label in given_]
    before = _verdict(records, labels)
    rng = random.Random(seed)
    kept = [e for e in labels if e.label != "approve" or rng.random() < 0.5]
    if before != "PASS":
        assert _verdict(records, kept) != "PASS", (before, len(labels), len(kept))


def test_dropping_any_label_of_a_slice_labelled_whole_never_passes():
    """10 medical cases, 10 labels (0.9 at 0.95 needs 25 approving, so a slice of 10 is labelled whole): without
    any one label the slice is pending, or, without the one label of its failed case, unrepresentative."""
    rubric = Rubric(path=None, name="p", criteria=RUBRIC.criteria, review=ReviewPolicy(min_reviewed=4))
    records = [CaseRecord.model_validate(r) for r in _medical(1)]
    labels = [LabelEdit.model_validate(_label(r.case_id, "reject" if r.output == WRONG else "approve", r.output))
              for r in records if r.tags.get("domain") == "medical"]
    assert _verdict(records, labels, rubric) == "PASS"  # 9 of 10 approved, every case labelled: 0.9 >= 0.9
    for i in range(len(labels)):
        # pending, or unrepresentative: either way only the missing label keeps it open
        assert _verdict(records, labels[:i] + labels[i + 1:], rubric) == "NEEDS_REVIEW"
