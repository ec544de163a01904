"""Reference metrics offline: ROUGE, BLEU and chrF as shipped `evaluate` modules and as per-case answer scorers.

Every value is checked against rouge_score / sacrebleu called directly on the same pairs; nothing may reach the
network (sockets are refused for the whole module)."""

import json
import socket
import subprocess
import sys

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from conftest import HANG_S, write_jsonl
from releasegate.record.records import CaseRecord, RunDir
from releasegate.scorers import get_scorer
from releasegate.scorers.evaluate_metric import compute_evaluate_metric, load_metric, resolve_module

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")

# (output, expected): identical, empty output, accented and CJK text, multi-sentence (newline-separated, in another
# order: rougeLsum's per-sentence LCS then differs from rougeL's), partial
PAIRS = [
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("", "A reference the model did not reproduce at all."),
    ("Le café était très chaud ce matin à Paris.", "Le café est très chaud à Paris ce matin."),
    ("東京は日本の首都です。", "日本の首都は東京です。"),
    (
        "Schools stayed closed.\nThe storm hit the coast on Monday.\nThousands lost power.",
        "A storm struck the coast on Monday.\nThousands of homes lost power.\nMany schools were closed.",
    ),
    ("the quick brown fox jumps over the lazy dog", "a quick brown dog jumps over the lazy fox"),
]
OUTPUTS = [p for p, _ in PAIRS]
REFERENCES = [r for _, r in PAIRS]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """Loading and computing must not download anything: any outgoing connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def rec(i, output, expected, answer=None):
    return CaseRecord(case_id=f"c{i}", suite="s", input={"prompt": "p"}, expected=expected, output=output, answer=answer)


RECORDS = [rec(i, out, ref) for i, (out, ref) in enumerate(PAIRS)]


def direct_rouge(variant, output, reference):
    return rouge_scorer.RougeScorer([variant]).score(reference, output)[variant].fmeasure


# --- the shipped evaluate modules -------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ROUGE_TYPES)
def test_rouge_module_is_the_mean_rouge_score_fmeasure(variant):
    metric = load_metric("releasegate:rouge")
    value = compute_evaluate_metric(metric, RECORDS, key=variant, name=variant)
    want = sum(direct_rouge(variant, o, r) for o, r in PAIRS) / len(PAIRS)
    assert value.value == pytest.approx(want, rel=1e-12, abs=1e-15) and value.n == len(PAIRS)
    assert 0 < want < 1  # the pairs score something and not everything


def test_rouge_module_returns_every_variant():
    result = load_metric("releasegate:rouge").compute(predictions=OUTPUTS, references=REFERENCES)
    assert sorted(result) == sorted(ROUGE_TYPES)
    # the multi-sentence pair: rougeLsum (LCS per newline-split sentence) differs from rougeL (one sequence)
    multi = PAIRS[4]
    assert direct_rouge("rougeLsum", *multi) != direct_rouge("rougeL", *multi)


def test_bleu_module_is_sacrebleu_corpus_bleu():
    value = compute_evaluate_metric(load_metric("releasegate:bleu"), RECORDS, key="bleu", name="bleu")
    want = sacrebleu.corpus_bleu(OUTPUTS, [REFERENCES]).score
    assert value.value == pytest.approx(want, rel=1e-12) and value.n == len(PAIRS)
    assert 0 < want < 100


def test_chrf_module_is_sacrebleu_corpus_chrf():
    value = compute_evaluate_metric(load_metric("releasegate:chrf"), RECORDS, key="chrf", name="chrf")
    want = sacrebleu.corpus_chrf(OUTPUTS, [REFERENCES]).score
    assert value.value == pytest.approx(want, rel=1e-12) and value.n == len(PAIRS)
    assert 0 < want < 100


@pytest.mark.parametrize("name", ["rouge", "bleu", "chrf"])
def test_modules_are_shipped_files(name):
    path = resolve_module(f"releasegate:{name}")
    assert path.endswith(f"metrics_local/{name}/{name}.py")


def test_failed_requests_are_left_out_and_none_left_gives_no_value():
    failed = rec(99, None, "anything")
    metric = load_metric("releasegate:chrf")
    assert compute_evaluate_metric(metric, RECORDS + [failed], key="chrf", name="chrf").n == len(PAIRS)
    assert compute_evaluate_metric(metric, [failed], key="chrf", name="chrf").value is None


def test_non_text_expected_answers_are_compared_as_text():
    expected = {"intent": "billing", "priority": "high"}
    records = [rec(1, '{"intent": "billing", "priority": "high"}', expected)]
    value = compute_evaluate_metric(load_metric("releasegate:bleu"), records, key="bleu", name="bleu")
    assert value.value == pytest.approx(sacrebleu.corpus_bleu([records[0].output], [[json.dumps(expected, sort_keys=True)]]).score)


# --- the per-case answer scorers --------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ROUGE_TYPES)
@pytest.mark.parametrize("pair", PAIRS, ids=range(len(PAIRS)))
def test_rouge_answer_scorer_thresholds_the_rouge_score_value(variant, pair):
    output, reference = pair
    want = direct_rouge(variant, output, reference)
    score = get_scorer("answer", "rouge")
    at = score(output, reference, {"type": "rouge", "variant": variant, "min": want})
    assert at.passed and f"{variant} {want:.4g} >= min {want:g}" == at.detail
    if want < 1:
        above = score(output, reference, {"type": "rouge", "variant": variant, "min": min(1.0, want + 1e-6)})
        assert not above.passed and f"{variant} {want:.4g} < min" in above.detail


@pytest.mark.parametrize("pair", PAIRS, ids=range(len(PAIRS)))
def test_bleu_and_chrf_answer_scorers_threshold_the_sentence_scores(pair):
    output, reference = pair
    for kind, want in (
        ("bleu", sacrebleu.sentence_bleu(output, [reference]).score),
        ("chrf", sacrebleu.sentence_chrf(output, [reference]).score),
    ):
        score = get_scorer("answer", kind)
        at = score(output, reference, {"type": kind, "min": min(want, 100)})
        assert at.passed and at.detail.startswith(f"{kind} {want:.4g} >= min")
        if want < 99.999:
            above = score(output, reference, {"type": kind, "min": want + 1e-6})
            assert not above.passed and at.detail.split(" >= ")[0] == above.detail.split(" < ")[0]


def test_scorer_values_equal_the_libraries_exactly():
    from releasegate.scorers.reference import bleu_score_of, chrf_score_of, rouge_score_of

    for output, reference in PAIRS:
        for variant in ROUGE_TYPES:
            assert rouge_score_of(output, reference, variant) == direct_rouge(variant, output, reference)
        assert bleu_score_of(output, reference) == sacrebleu.sentence_bleu(output, [reference]).score
        assert chrf_score_of(output, reference) == sacrebleu.sentence_chrf(output, [reference]).score


def test_rouge_defaults_to_rougeL_and_a_perfect_bleu_meets_100():
    output, reference = PAIRS[5]
    assert get_scorer("answer", "rouge")(output, reference, {"type": "rouge", "min": 0}).detail.startswith("rougeL ")
    assert get_scorer("answer", "bleu")(*PAIRS[0], {"type": "bleu", "min": 100}).passed
    assert get_scorer("answer", "chrf")(*PAIRS[0], {"type": "chrf", "min": 100}).passed
    empty = get_scorer("answer", "chrf")("", "something", {"type": "chrf", "min": 1})
    assert not empty.passed and empty.detail == "chrf 0 < min 1"


def test_scorers_do_not_import_the_libraries_until_used():
    probe = "import sys, releasegate.scorers\nprint(sorted(m for m in ('rouge_score', 'sacrebleu', 'nltk') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --- through `releasegate check` (replay backend) ---------------------------------------------------------------

SUITE_CASES = [
    ("sum-1", "Summarise: the cat sat on the mat.", PAIRS[0]),
    ("sum-2", "Summarise the storm report.", PAIRS[4]),
    ("sum-3", "Summarise: quick brown dog.", PAIRS[5]),
    ("sum-4", "Summarise: nothing.", PAIRS[1]),
]
RUBRIC = """\
name: summaries
criteria:
  - {name: summary rougeL, metric: rougeL, op: ">=", threshold: 0.5}
  - {metric: accuracy, op: ">=", threshold: 0.5}
evaluate:
  - {name: rougeL, module: "releasegate:rouge", key: rougeL}
  - {name: chrf, module: "releasegate:chrf"}
review: {required_domains: []}
"""


def summaries_project(project, answer: str, rubric: str = RUBRIC):
    write_jsonl(project / "suites" / "summaries.jsonl", [
        {"id": cid, "prompt": prompt, "expected": ref} for cid, prompt, (_, ref) in SUITE_CASES
    ])
    write_jsonl(project / "responses.jsonl", [{"id": cid, "output": out} for cid, _, (out, _) in SUITE_CASES])
    config = project / "releasegate.yaml"
    text = config.read_text()
    start, end = text.index("suites:\n"), text.index("rubric:")
    config.write_text(text[:start] + f"suites:\n  - path: suites/summaries.jsonl\n    answer: {answer}\n" + text[end:])
    (project / "rubrics" / "example.yaml").write_text(rubric)
    return config


def test_rouge_module_and_rouge_answer_scorer_through_check(project, cli):
    config = summaries_project(project, "{type: rouge, variant: rougeL, min: 0.6}")
    code, out, err = cli("check", "-c", config, "--run-id", "sum", "--no-progress", "--json")
    report = json.loads(out)
    criteria = {c["name"]: c for c in report["criteria"]}
    pairs = [pair for _, _, pair in SUITE_CASES]
    rouge_l = [direct_rouge("rougeL", o, r) for o, r in pairs]
    assert criteria["summary rougeL"]["value"] == pytest.approx(sum(rouge_l) / len(pairs), rel=1e-12)
    assert criteria["summary rougeL"]["verdict"] == ("pass" if sum(rouge_l) / len(pairs) >= 0.5 else "fail")
    # accuracy: the share of cases whose own rougeL reaches min 0.6
    share = sum(v >= 0.6 for v in rouge_l) / len(pairs)
    assert 0 < share < 1
    assert criteria["accuracy"]["value"] == pytest.approx(share)
    records = RunDir(project / "reports" / "sum").read_records()
    for record, value in zip(records, rouge_l):
        if not record.output:  # an empty answer is a failed request (empty_response), never scored as text
            assert record.scores == {} and value == 0
            continue
        answer = record.scores["answer"]
        assert answer["passed"] == (value >= 0.6)
        assert answer["detail"] == f"rougeL {value:.4g} {'>=' if value >= 0.6 else '<'} min 0.6"
    expected_verdict = "PASS" if all(c["verdict"] == "pass" for c in report["criteria"]) else "FAIL"
    assert report["verdict"] == expected_verdict and code == (0 if expected_verdict == "PASS" else 1), err


def test_bleu_and_chrf_answer_specs_through_check(project, cli):
    rubric = "criteria:\n  - {metric: accuracy, op: '>=', threshold: 0.5}\nreview: {required_domains: []}\n"
    pairs = [pair for _, _, pair in SUITE_CASES]
    for kind, minimum, direct in (
        ("bleu", 30, lambda o, r: sacrebleu.sentence_bleu(o, [r]).score),
        ("chrf", 50, lambda o, r: sacrebleu.sentence_chrf(o, [r]).score),
    ):
        config = summaries_project(project, f"{{type: {kind}, min: {minimum}}}", rubric)
        code, out, err = cli("check", "-c", config, "--run-id", kind, "--no-progress", "--json")
        report = json.loads(out)
        accuracy = next(c for c in report["criteria"] if c["metric"] == "accuracy")
        assert accuracy["value"] == pytest.approx(sum(direct(o, r) >= minimum for o, r in pairs) / len(pairs)), kind


@pytest.mark.parametrize("answer, field", [
    ("{type: rouge, variant: rougeL}", "min"),  # a threshold is required
    ("{type: rouge, min: 40}", "min"),  # ROUGE lies in 0..1
    ("{type: rouge, variant: rouge3, min: 0.4}", "variant"),
    ("{type: bleu, min: 130}", "min"),  # BLEU and chrF lie in 0..100
])
def test_validate_refuses_bad_reference_answer_specs(project, cli, answer, field):
    config = summaries_project(project, answer)
    code, out, err = cli("validate", "-c", config)
    assert code == 2, (out, err)
    assert "answer" in err
