"""The LLM judge under `generation.repeats`: every answered draw of a judge-scored case is graded, once per (case,
output), so accuracy is per draw, pass_all_k and flip_rate are decided, and a calibrated judge's correction counts
every draw. Each runs the real `check` against the stub server (as target and as judge)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from conftest import write_jsonl
from releasegate.gate.context import GateInputs
from releasegate.gate.feature import GateFeature, registered
from releasegate.gate.stability_feature import draws_of
from releasegate.inputs.rubric import load_rubric
from releasegate.llm_judge import gating, stage
from releasegate.pipeline.gate import judge_run
from releasegate.record.judge_journal import read_judgments
from releasegate.record.judge_verdicts import run_verdicts
from releasegate.record.records import RunDir
from releasegate.record.review_labels import read_labels
from releasegate.scorers import scored_run
from releasegate.testing import StubBehaviour, StubServer

CASES, K = 10, 3
_DRAFT = re.compile(r"<response-\w+>\n(.*?)\n</response-\w+>", re.S)


def bad(i: int, seed: int | None) -> bool:
    """Drafts 8 and 9 are bad at every draw; drafts 0-3 at draw 2 (seed 9) alone; the others never."""
    return i >= 8 or (i < 4 and seed == 9)


def reply(body: dict) -> str:
    """The judge fails a draft that says BAD; the model answers 'draft N' as `bad` says."""
    text = body["messages"][-1]["content"]
    found = _DRAFT.search(text)
    if found is not None:
        verdict = "fail" if "BAD" in found.group(1) else "pass"
        return json.dumps({"reason": f"the draft is {verdict}", "verdict": verdict})
    i = int(text.split()[-1])
    return f"draft {i}: {'BAD' if bad(i, body.get('seed')) else 'GOOD'} reply"


# by hand: drafts 0-3 pass 2 of 3 draws, 4-7 all 3, 8-9 none; the judge sees 10 draw-0 outputs and the 4 draw-2
# outputs that differ from their case's draw 0 (draws 1 repeat draw 0 everywhere, draws 2 of drafts 4-9 too)
PER_DRAW_ACCURACY = (4 * 2 / 3 + 4 * 1 + 2 * 0) / CASES
JUDGE_CALLS = CASES + 4
PASS_ALL_K = FLIP_RATE = 4 / CASES


def project(root: Path, url: str, judge_policy: str = "") -> Path:
    write_jsonl(root / "drafts.jsonl", [{"id": f"d{i:02d}", "messages": [{"role": "user", "content": f"draft {i}"}],
                                         "expected": "a polite reply"} for i in range(CASES)])
    (root / "rubric.yaml").write_text(
        f"review: {{required_domains: [], sample: {{per_slice: 60}}}}\n{judge_policy}criteria:\n"
        '  - {metric: accuracy, op: ">=", threshold: 0.5}\n'
        '  - {metric: pass_all_k, op: ">=", threshold: 0.3}\n'
        '  - {metric: flip_rate, op: "<=", threshold: 0.5}\n')
    (root / "releasegate.yaml").write_text(
        f"target: {{backend: openai, base_url: {url}, model: stub, retries: 0, timeout_s: 10}}\n"
        f"generation: {{max_new_tokens: 8, temperature: 0.8, seed: 7, repeats: {K}}}\n"
        f"judge:\n  base_url: {url}\n  model: judge\n  retries: 0\n  timeout_s: 10\n"
        "  criteria: {helpful: {instructions: The reply helps the customer.}}\n"
        "suites:\n  - {path: drafts.jsonl, answer: {type: judge, criterion: helpful}}\nrubric: rubric.yaml\n")
    return root / "releasegate.yaml"


def check(cli, config: Path) -> tuple[dict, RunDir]:
    code, out, err = cli("check", "-c", config, "--run-id", "r", "--no-progress", "--json")
    assert "Traceback" not in err and out, err
    return json.loads(out), RunDir(config.parent / "reports" / "r")


def criterion(report: dict, metric: str) -> dict:
    return next(c for c in report["criteria"] if c["metric"] == metric)


@pytest.fixture
def stub():
    with StubServer(StubBehaviour(ttft_ms=1, itl_ms=0, tokens=4, reply=reply)) as server:
        yield server


def test_the_judge_grades_each_draw_once_per_output_and_accuracy_is_per_draw(tmp_path, cli, stub):
    report, run = check(cli, project(tmp_path, stub.base_url))
    judgments = read_judgments(run)
    assert len(judgments) == JUDGE_CALLS  # identical draws of a case share one verdict: not CASES * K
    assert stub.requests == CASES * K + JUDGE_CALLS
    assert report["judge"]["calls"] == JUDGE_CALLS and report["judge"]["errors"] == {}
    assert report["judge"]["judged"] == CASES
    accuracy = criterion(report, "accuracy")
    assert accuracy["value"] == pytest.approx(PER_DRAW_ACCURACY) and accuracy["n"] == CASES
    assert criterion(report, "pass_all_k")["value"] == pytest.approx(PASS_ALL_K)
    assert criterion(report, "flip_rate")["value"] == pytest.approx(FLIP_RATE)
    # no labels: the judge is not calibrated, so every criterion its verdicts feed is undecided, none unknown
    for metric in ("accuracy", "pass_all_k", "flip_rate"):
        c = criterion(report, metric)
        assert c["verdict"] == "insufficient" and "judge not calibrated" in c["reason"], c
    assert "could not be checked" not in json.dumps(report)


def test_a_judge_stage_interrupted_after_its_first_batch_asks_only_the_rest_on_resume(tmp_path, cli, stub,
                                                                                      monkeypatch):
    """Ctrl-C once the judge's first batch (4 questions) is journaled: `check --resume` asks for the other draws'
    outputs alone, and the run is complete."""
    monkeypatch.setattr(stage, "JUDGE_BATCH", 4)
    appended = stage.append_judgments

    def stop_after_one_batch(run, judgments):
        appended(run, judgments)
        raise KeyboardInterrupt

    monkeypatch.setattr(stage, "append_judgments", stop_after_one_batch)
    config = project(tmp_path, stub.base_url)
    code, _, err = cli("check", "-c", config, "--run-id", "r", "--no-progress")
    run = RunDir(tmp_path / "reports" / "r")
    assert code == 130 and run.read_info().status == "interrupted", err
    assert len(read_judgments(run)) == 4
    monkeypatch.setattr(stage, "append_judgments", appended)
    before = stub.requests
    code, out, err = cli("check", "--resume", run.path, "--no-progress", "--json")
    assert "Traceback" not in err and "resume: 0 of 10 cases to run" in err, err
    assert stub.requests - before == JUDGE_CALLS - 4  # nothing generated again, no output judged twice
    assert len(read_judgments(run)) == JUDGE_CALLS
    report = json.loads(out)
    assert report["incomplete"] is None and report["judge"]["calls"] == JUDGE_CALLS
    assert criterion(report, "accuracy")["value"] == pytest.approx(PER_DRAW_ACCURACY)


def label_draw_zero(cli, run: RunDir, tmp_path: Path) -> int:
    """Reviewers label every sampled reply (draw 0 of each case) by what it says."""
    out = tmp_path / "review.csv"
    assert cli("review", "export", run.path, "-o", out)[0] == 0
    outputs = {r.case_id: r.output or "" for r in run.read_records()}
    with out.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["label"], r["reviewer"] = ("reject" if "BAD" in outputs[r["case_id"]] else "approve"), "ana"
    with out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    code, _, err = cli("review", "import", run.path, out)
    assert code == 0, err
    return len(rows)


def _judge_feature_with_draws() -> GateFeature:
    """The judge feature with the run's draws handed to the correction (as the guard feature hands them)."""

    def section(ctx):
        if "judge" not in ctx.memo:
            ctx.memo["judge"] = gating.judge_section(ctx.info, ctx.records, ctx.scores, ctx.inputs.labels, ctx.rubric,
                                                     ctx.inputs.verdicts, ctx.inputs.draws)
        return ctx.memo["judge"]

    def rule(ctx, results):
        results = gating.undecided_by_judge(results, ctx.records, ctx.scores, section(ctx))
        return gating.corrected_by_reviewers(results, ctx.records, ctx.scores, section(ctx), ctx.inputs.labels,
                                             ctx.rubric.review, found=draws_of(ctx), forbidden=ctx.rubric.forbidden)

    return GateFeature("judge", rule=rule, section=lambda ctx, results: {"judge": section(ctx)}, needs=("review",))


def gate_with_draws(run: RunDir) -> dict:
    info = run.read_info()
    rubric = load_rubric(run.path / "rubric.yaml")
    verdicts = run_verdicts(run, info)
    scored = scored_run(run, rubric.forbidden, verdicts)
    features = [_judge_feature_with_draws() if f.name == "judge" else f for f in registered()]
    report = judge_run(GateInputs(info, scored.records, rubric, labels=read_labels(run), verdicts=verdicts,
                                  scores=scored.scores, draws=scored.draws), features)
    return report.as_json()


def test_a_calibrated_judge_corrects_accuracy_over_every_draw(tmp_path, cli, stub):
    config = project(tmp_path, stub.base_url, "judge: {min_labels: 10, min_agreement: 0.5}\n")
    _, run = check(cli, config)
    assert label_draw_zero(cli, run, tmp_path) == CASES
    report = gate_with_draws(run)
    assert report["judge"]["calibration"]["helpful"]["calibrated"], report["judge"]["calibration"]
    accuracy = criterion(report, "accuracy")
    # each draw weighs 1/3 of its case: the draws repeating a labelled draw 0 share its label (drafts 0-7 approved,
    # 8-9 rejected); the 4 new draw-2 outputs nobody labelled are judge fails in the 'fail' cell, whose labels
    # (drafts 8-9's 6 draws) all reject: so by hand the corrected accuracy is the per-draw one
    assert accuracy["value"] == pytest.approx(PER_DRAW_ACCURACY), accuracy
    assert accuracy["n"] == CASES and "every draw of" in accuracy["note"]
    assert accuracy["verdict"] == "pass"
    assert criterion(report, "pass_all_k")["verdict"] == "pass"
    assert criterion(report, "flip_rate")["verdict"] == "pass"


def test_gate_corrects_accuracy_over_every_draw(tmp_path, cli, stub):
    config = project(tmp_path, stub.base_url, "judge: {min_labels: 10, min_agreement: 0.5}\n")
    _, run = check(cli, config)
    label_draw_zero(cli, run, tmp_path)
    code, out, err = cli("gate", run.path, "--json")
    assert "Traceback" not in err, err
    assert criterion(json.loads(out), "accuracy")["value"] == pytest.approx(PER_DRAW_ACCURACY)
