"""Stored scores: computed once by `check`, read back by every later stage while what they were computed from is
unchanged, computed again when anything in it changed, and never read from a file that is not as the run sealed it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import HANG_S, ROOT
from releasegate.cli import main
from releasegate.inputs.rubric import EvaluateMetric, ForbiddenRule
from releasegate.record.records import CaseRecord, RunDir
from releasegate.record.seal import seal
from releasegate.scorers import CorpusScores, evaluate_metric, score_record, score_records, stored, stored_scores
from releasegate.scorers import score as score_module
from releasegate.scorers.evaluate_metric import evaluate_value, resolve_module
from test_false_pass import WRONG, Run, lenient, ok

EXPECTED = {"intent": "billing", "priority": "high"}
RIGHT = json.dumps(EXPECTED)
WRONG_BOTH = '{"intent": "refund", "priority": "high"}'
ANSWER = {"type": "json_fields", "fields": ["intent", "priority"]}
RULES = (ForbiddenRule(category="promise", phrases=("we promise",)),)
FORGED = {"answer": {"passed": True, "detail": "stored"}, "forbidden": {"hit": False, "categories": [], "matches": []}}


def record(output=RIGHT, **changes) -> CaseRecord:
    fields = dict(case_id="c1", suite="s", input={"prompt": "p"}, expected=EXPECTED, answer=ANSWER,
                  format=[{"type": "json"}, {"type": "max_length", "max_tokens": 20}], output=output)
    fields["tokens"] = {"output": 12}
    return CaseRecord(**{**fields, **changes})


def stored_record(output=RIGHT, rules=RULES, **changes) -> CaseRecord:
    """A record as `check` stores it, its scores then replaced by FORGED under the same fingerprint: whatever
    `score_record` returns is FORGED exactly when the stored scores were reused."""
    rec = record(output, **changes)
    _, rec.scored_with = stored_scores(rec, rules)
    rec.scores = FORGED
    return rec


# --- the fingerprint -------------------------------------------------------------------------------------------

def test_stored_scores_are_reused_while_the_fingerprint_matches():
    assert score_record(stored_record(), RULES) == FORGED


def test_check_stores_what_the_scorers_compute():
    rec = record(WRONG_BOTH)
    scores, key = stored_scores(rec, RULES)
    assert key == stored.fingerprint(rec, RULES)
    assert scores == score_record(rec, RULES) and scores["answer"]["passed"] is False


@pytest.mark.parametrize("change", [
    {"answer": {"type": "json_fields", "fields": ["intent"]}},  # the scorer spec
    {"format": [{"type": "json"}]},  # a format check
    {"expected": {"intent": "refund", "priority": "high"}},  # the expected answer
    {"tokens": {"output": 30}},  # the token count max_tokens reads
])
def test_a_changed_spec_or_record_is_scored_again(change):
    rec = stored_record()
    edited = CaseRecord.model_validate({**rec.model_dump(), **change, "scores": FORGED, "scored_with": rec.scored_with})
    assert score_record(edited, RULES) != FORGED
    assert score_record(edited, RULES) == stored_scores(edited, RULES)[0]


def test_a_changed_output_is_scored_again():
    rec = stored_record()
    rec.output = WRONG_BOTH
    assert score_record(rec, RULES)["answer"]["passed"] is False


def test_changed_forbidden_rules_score_again():
    rec = stored_record(RIGHT + " we promise")
    assert score_record(rec, RULES) == FORGED
    assert score_record(rec, ())["forbidden"]["hit"] is False and score_record(rec, ()) != FORGED


def test_changed_scorer_code_scores_again(monkeypatch):
    rec = stored_record()
    monkeypatch.setattr(stored, "scorer_code", lambda: "a newer scorer")
    assert score_record(rec, RULES) != FORGED


def test_no_fingerprint_is_never_reused():
    rec = stored_record()
    rec.scored_with = None
    assert score_record(rec, RULES) != FORGED


def test_an_empty_answer_is_a_failure_whatever_is_stored():
    rec = stored_record(output="")
    rec.scored_with = stored.fingerprint(rec, RULES)  # forged to match: still no answer to score
    assert score_record(rec, RULES) == {}


def test_a_judge_verdict_is_never_stored_nor_read_from_the_record():
    rec = record(answer={"type": "judge", "criterion": "helpful"})
    scores, _ = stored_scores(rec, RULES)
    assert "answer" not in scores
    rec.scores, rec.scored_with = {**scores, "answer": {"passed": True, "detail": "forged"}}, stored.fingerprint(rec, RULES)
    answer = score_record(rec, RULES)["answer"]
    assert answer["passed"] is False and answer["unknown"] is True  # no verdict in judgments.jsonl: unknown


# --- the journal must be as the run sealed it -------------------------------------------------------------------

def _sealed_run(tmp_path, records) -> RunDir:
    run = RunDir(tmp_path / "r")
    run.path.mkdir()
    (run.path / "manifest.json").write_text("{}")
    run.append(records)
    seal(run.path, "check")
    return run


def test_scores_are_read_back_from_a_sealed_journal(tmp_path):
    run = _sealed_run(tmp_path, [stored_record()])
    assert score_records(run.read_records(), RULES)["c1"] == FORGED


def test_an_edited_journal_has_its_scores_computed_again(tmp_path):
    rec = record(WRONG_BOTH)
    rec.scores, rec.scored_with = stored_scores(rec, RULES)
    run = _sealed_run(tmp_path, [rec])
    path = run.path / "records.jsonl"
    path.write_text(path.read_text().replace('"passed":false', '"passed":true'))  # a failing answer made to pass
    assert score_records(run.read_records(), RULES)["c1"]["answer"]["passed"] is False


def test_a_run_without_a_seal_is_scored_from_its_outputs(tmp_path):
    run = RunDir(tmp_path / "r")
    run.path.mkdir()
    run.append([stored_record(WRONG_BOTH)])
    assert score_records(run.read_records(), RULES)["c1"]["answer"]["passed"] is False


# --- false-PASS corpus: a forged stored score never passes a wrong answer -------------------------------------

def _forged(rows: list[dict]) -> list[dict]:
    """Records whose stored scores say their (wrong) answer passed, under the fingerprint that matches them."""
    for row in rows:
        row["scores"] = {"answer": {"passed": True, "detail": ""}, "format": {"passed": True, "checks": []},
                         "forbidden": {"hit": False, "categories": [], "matches": []}}
        row["scored_with"] = stored.fingerprint(CaseRecord.model_validate(row), ())
    return rows


def _gate(path, capsys) -> tuple[str, int]:
    code = main(["gate", str(path), "--json"])
    return json.loads(capsys.readouterr().out)["verdict"], code


def test_forged_scores_in_a_run_without_a_seal_never_pass(tmp_path, capsys):
    path = Run(_forged([ok(i, output=WRONG) for i in range(30)]), rubric=lenient()).build(tmp_path)
    assert _gate(path, capsys) == ("FAIL", 1)


def test_forged_scores_in_a_journal_edited_after_its_seal_never_pass(tmp_path, capsys):
    path = Run([ok(i, output=WRONG) for i in range(30)], rubric=lenient()).build(tmp_path)
    (path / "manifest.json").write_text("{}")
    seal(path, "check")
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _forged([ok(i, output=WRONG) for i in range(30)])))
    assert _gate(path, capsys) == ("FAIL", 1)


def test_stored_scores_of_a_healthy_sealed_run_still_pass(tmp_path, capsys):
    rows = [ok(i) for i in range(30)]
    for row in rows:
        rec = CaseRecord.model_validate(row)
        row["scores"], row["scored_with"] = stored_scores(rec, ())
    path = Run(rows, rubric=lenient()).build(tmp_path)
    (path / "manifest.json").write_text("{}")
    seal(path, "check")
    assert _gate(path, capsys) == ("PASS", 0)


# --- corpus metrics (evaluate) --------------------------------------------------------------------------------

class _Metric:
    """Stands in for a loaded evaluate module: the share of predictions equal to their reference."""

    def __init__(self):
        self.calls = 0

    def compute(self, predictions, references):
        self.calls += 1
        return {"same": sum(p == r for p, r in zip(predictions, references)) / len(predictions)}


@pytest.fixture
def metric(monkeypatch):
    fake = _Metric()
    monkeypatch.setattr(evaluate_metric, "_loaded", lambda module, version: fake)
    return fake


def _module(tmp_path):
    path = tmp_path / "same.py"
    shutil.copy(resolve_module("releasegate:field_accuracy"), path)
    return path


def _records(outputs):
    return [CaseRecord(case_id=f"c{i}", suite="s", input={"prompt": "p"}, expected="a", output=o)
            for i, o in enumerate(outputs)]


def test_a_corpus_value_is_reused_only_for_the_same_module_and_outputs(tmp_path, metric):
    module = _module(tmp_path)
    spec = EvaluateMetric(name="same", module=str(module))
    store = CorpusScores()
    first = evaluate_value(spec, _records(["a", "b"]), store)
    assert first.value == 0.5 and metric.calls == 1
    assert evaluate_value(spec, _records(["a", "b"]), store).value == 0.5 and metric.calls == 1  # reused
    assert evaluate_value(spec, _records(["a", "a"]), store).value == 1.0 and metric.calls == 2  # output changed
    module.write_text(module.read_text() + "\n# a fix\n")
    assert evaluate_value(spec, _records(["a", "b"]), store).value == 0.5 and metric.calls == 3  # module changed
    other = EvaluateMetric(name="same", module=str(module), key="same")
    evaluate_value(other, _records(["a", "b"]), store)
    assert metric.calls == 4  # the spec changed (key)


def test_a_hub_module_is_never_stored(metric):
    store = CorpusScores()
    spec = EvaluateMetric(name="same", module="someone/metric")
    evaluate_value(spec, _records(["a"]), store)
    evaluate_value(spec, _records(["a"]), store)
    assert metric.calls == 2 and not store.added


def test_corpus_values_are_read_only_from_a_sealed_journal(tmp_path, metric):
    spec = EvaluateMetric(name="same", module=str(_module(tmp_path)))
    run = _sealed_run(tmp_path, [])
    store = CorpusScores.of(run)
    evaluate_value(spec, _records(["a", "b"]), store)
    store.save(run)
    seal(run.path, "check")
    evaluate_value(spec, _records(["a", "b"]), CorpusScores.of(run))
    assert metric.calls == 1  # read back
    path = run.path / "corpus_scores.jsonl"
    path.write_text(path.read_text().replace('"value": 0.5', '"value": 1.0'))
    assert evaluate_value(spec, _records(["a", "b"]), CorpusScores.of(run)).value == 0.5 and metric.calls == 2


# --- through `check` and `gate` ------------------------------------------------------------------------------

HEAVY = ("evaluate", "transformers", "torch", "datasets")


def heavy_imports_after_gate(run) -> list[str]:
    """`gate RUN` in a fresh interpreter (whatever its verdict); which of HEAVY it imported."""
    probe = (f"import sys\nfrom releasegate.cli import main\nassert main(['gate', {str(run)!r}, '--allow-pending']) in (0, 1, 3)\n"
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_gate_on_stored_scores_imports_no_heavy_library(project, cli):
    rubric = project / "rubrics" / "example.yaml"
    rubric.write_text(rubric.read_text().replace("criteria:\n", "criteria:\n  - {metric: field_accuracy, op: '>=', threshold: 0.5}\n")
                      + "evaluate:\n  - {name: field_accuracy, module: 'releasegate:field_accuracy'}\n")
    config = project / "releasegate.yaml"
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--allow-pending", "--no-progress")
    run = project / "reports" / "r"
    assert code == 1, err  # one wrong answer of two: accuracy 0.5
    before = json.loads((run / "report.json").read_text())
    assert (run / "corpus_scores.jsonl").is_file()
    assert heavy_imports_after_gate(run) == []
    after = json.loads((run / "report.json").read_text())
    assert [c["value"] for c in after["criteria"]] == [c["value"] for c in before["criteria"]]
    assert {c["metric"]: c["value"] for c in after["criteria"]}["field_accuracy"] is not None


def test_gate_report_review_and_compare_read_the_stored_scores(project, cli, monkeypatch):
    config = project / "releasegate.yaml"
    for run_id in ("a", "b"):
        code, _, err = cli("check", "-c", config, "--run-id", run_id, "--allow-pending", "--no-progress")
        assert code in (1, 3), err
    runs = [project / "reports" / run_id for run_id in ("a", "b")]
    before = json.loads((runs[0] / "report.json").read_text())

    def no_scoring(*_):
        raise AssertionError("a stored score was computed again")

    monkeypatch.setattr(score_module, "fixed_scores", no_scoring)
    assert cli("gate", runs[0], "--allow-pending")[0] == before["exit_code"]
    assert json.loads((runs[0] / "report.json").read_text())["criteria"] == before["criteria"]
    assert cli("report", runs[0], "--format", "csv")[0] == 0
    assert cli("review", "export", runs[0])[0] == 0
    code, _, err = cli("compare", runs[0], runs[1])
    assert code in (0, 3), err
